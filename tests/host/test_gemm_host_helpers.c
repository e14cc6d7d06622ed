/* The host provider's helper threads may run on every CPU the process may,
 * whichever thread starts them. The first large product's caller is a
 * device worker thread, and Intel's CPU runtime pins its workers to one CPU
 * in some runs: helpers that inherited that one CPU ran their slices after
 * the caller's instead of beside them (runtime/device/gemm_host.c,
 * helper_cpus). Here a thread pinned to one CPU starts the helpers; every
 * other thread of the process must then be allowed all the CPUs the main
 * thread is. Linux only. Skipped (77, said so) with one CPU, in a build
 * without OpenBLAS, or where OpenBLAS would use one thread (no helpers). */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>

#include "gemm_provider.h"

#if defined(__linux__)
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

static cpu_set_t process_cpus; /* the main thread's */
static int helpers_started;

static void *start_pinned(void *unused)
{
    (void)unused;
    int first = 0;
    while (!CPU_ISSET(first, &process_cpus)) first++;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) != 0) return NULL;
    helpers_started = cf_gemm_host_start_helpers();
    return NULL;
}

/* Every thread but this one (the pinned starter has ended) is allowed the
 * main thread's CPUs; the helpers are among them. */
static void helpers_get_every_cpu(void **state)
{
    (void)state;
    DIR *dir = opendir("/proc/self/task");
    assert_non_null(dir);
    int others = 0;
    for (struct dirent *e; (e = readdir(dir));) {
        const pid_t tid = (pid_t)atoi(e->d_name);
        if (tid <= 0 || tid == getpid()) continue;
        cpu_set_t allowed;
        assert_int_equal(sched_getaffinity(tid, sizeof allowed, &allowed), 0);
        if (!CPU_EQUAL(&allowed, &process_cpus))
            fail_msg("thread %d may run on %d CPUs, the process on %d", (int)tid,
                     CPU_COUNT(&allowed), CPU_COUNT(&process_cpus));
        others++;
    }
    closedir(dir);
    assert_true(others >= helpers_started);
}

int main(void)
{
    if (sched_getaffinity(0, sizeof process_cpus, &process_cpus) != 0 ||
        CPU_COUNT(&process_cpus) < 2) {
        printf("skipped: the process may run on one CPU; helpers have no other to use\n");
        return 77;
    }
    if (!cf_gemm_host_available()) {
        printf("skipped: this build has no host GEMM provider (OpenBLAS)\n");
        return 77;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, start_pinned, NULL) != 0 || pthread_join(t, NULL) != 0) {
        printf("could not start the pinned thread\n");
        return 1;
    }
    if (helpers_started == 0) {
        printf("skipped: OpenBLAS would use one thread here (OPENBLAS_NUM_THREADS?): no helpers\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {cmocka_unit_test(helpers_get_every_cpu)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void)
{
    printf("skipped: helper placement is Linux only\n");
    return 77;
}
#endif
