/*
 * `clformer train` interrupted (issue 11): Ctrl-C at every phase of a run
 * (a step, a validation, a save, the final validation, and a second Ctrl-C
 * during the save) exits 130 with a checkpoint that loads at the last step
 * the log reports; and kill -9 at random moments of `--save-every 1` runs
 * never leaves a checkpoint that fails to load, --resume goes on from it, and
 * no temp file is left once a later run has saved.
 *
 * The moments are found by watching the run's --log (one line per step,
 * written before that step's validation and save): a signal sent as soon as
 * step k's line appears lands in what follows it.
 */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

extern char **environ;

static char dir[64];

static void path_of(char *buf, size_t cap, const char *name) { harness_path(buf, cap, dir, name); }

static int setup(void **state)
{
    (void)state;
    if (!harness_temp_dir(dir, sizeof dir, "interrupt")) return -1;
    harness_write_reversal_corpus(dir, "train.src", "train.tgt", 200, 3, 8, 5);
    /* a validation set large enough that validating takes a while */
    harness_write_reversal_corpus(dir, "val.src", "val.tgt", 3000, 3, 8, 6);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return harness_remove_tree(dir) ? 0 : -1;
}

/* Starts `clformer ARGS` (split at spaces) in dir on the device under test,
 * its output in dir/out.txt; returns its pid. */
static pid_t spawn(const char *args)
{
    const char *binary = getenv("CLFORMER_BINARY");
    if (!binary || !*binary) fail_msg("CLFORMER_BINARY is not set (run through ctest)");
    static char words[2048];
    char *argv[64], *save = NULL;
    size_t n = 0;
    assert_true(strlen(args) < sizeof words);
    strcpy(words, args);
    argv[n++] = (char *)binary;
    for (char *w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        assert_true(n + 1 < sizeof argv / sizeof *argv);
        argv[n++] = w;
    }
    argv[n] = NULL;
    /* the environment with CLFORMER_DEVICE set, built before fork (the
     * OpenCL runtime's threads leave the child only async-signal-safe calls) */
    static char device[64];
    snprintf(device, sizeof device, "CLFORMER_DEVICE=%s", hctx()->info.selector);
    size_t n_env = 0;
    while (environ[n_env]) n_env++;
    char **env = hmalloc((n_env + 2) * sizeof *env);
    size_t k = 0;
    for (size_t i = 0; i < n_env; i++)
        if (strncmp(environ[i], "CLFORMER_DEVICE=", 16) != 0) env[k++] = environ[i];
    env[k++] = device;
    env[k] = NULL;
    char out[256];
    path_of(out, sizeof out, "out.txt");
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int in = open("/dev/null", O_RDONLY);
        if (fd < 0 || in < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0 || dup2(in, 0) < 0 ||
            chdir(dir) != 0)
            _exit(127);
        execve(binary, argv, env);
        _exit(127);
    }
    free(env);
    return pid;
}

/* Its exit code, or 128 + the signal that ended it. */
static int wait_exit(pid_t pid)
{
    int status;
    pid_t w;
    while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {}
    assert_int_equal(w, pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void print_output(void)
{
    char path[256], text[16384];
    path_of(path, sizeof path, "out.txt");
    harness_slurp(path, text, sizeof text);
    fprintf(stderr, "--- clformer's output:\n%s---\n", text);
}

/* The highest step of a training line (one with "loss") in dir/log, 0 when none. */
static uint64_t last_logged_step(void)
{
    char path[256];
    path_of(path, sizeof path, "log.jsonl");
    FILE *fp = fopen(path, "r");
    if (!fp) return 0;
    uint64_t last = 0;
    char line[4096];
    while (fgets(line, sizeof line, fp)) {
        json_t *j = json_loads(line, 0, NULL);
        json_t *step = j ? json_object_get(j, "step") : NULL;
        if (step && json_object_get(j, "loss") && json_is_integer(step) &&
            (uint64_t)json_integer_value(step) > last)
            last = (uint64_t)json_integer_value(step);
        json_decref(j);
    }
    fclose(fp);
    return last;
}

static void sleep_us(uint64_t us)
{
    struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Polls the log until step `step`'s line is there; fails if the run ends first. */
static void wait_for_step(pid_t pid, uint64_t step)
{
    const double limit = now_s() + 600;
    while (last_logged_step() < step) {
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            print_output();
            fail_msg("the run ended before step %llu", (unsigned long long)step);
        }
        if (now_s() > limit) {
            kill(pid, SIGKILL);
            fail_msg("no step %llu within 10 minutes", (unsigned long long)step);
        }
        sleep_us(500);
    }
}

/* The step of the checkpoint dir/name; fails the test when it does not load. */
static uint64_t checkpoint_step(const char *name)
{
    char path[256];
    path_of(path, sizeof path, name);
    clformer_model *m = NULL;
    clformer_status st = clformer_model_load(hctx(), path, &m);
    if (st != CLFORMER_OK) fail_msg("'%s' does not load: %s", path, clformer_last_error());
    uint64_t step = clformer_model_step(m);
    clformer_model_free(m);
    return step;
}

static void remove_file(const char *name)
{
    char path[256];
    path_of(path, sizeof path, name);
    unlink(path);
}

/* No "<anything>.tmp.<pid>" file in dir. */
static void assert_no_temp_files(void)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strstr(e->d_name, ".tmp.")) {
            closedir(d);
            fail_msg("temp file '%s' left in %s", e->d_name, dir);
        }
    closedir(d);
}

#define TRAIN "train --src train.src --tgt train.tgt --config tiny --seed 3 --log log.jsonl "
#define RESUME "train --src train.src --tgt train.tgt --log log.jsonl --resume ck.safetensors "
#define VAL "--val-src val.src --val-tgt val.tgt --bleu-sentences 3000 "

static void ctrl_c_at_every_phase_saves_the_last_step(void **state)
{
    (void)state;
    const struct {
        const char *what;
        const char *args;
        uint64_t at;  /* SIGINT once this step's log line is there */
        int signals;  /* how many, 2 ms apart (later ones only say that it is stopping) */
    } cases[] = {
        {"during a step", TRAIN "--steps 100000 --save ck.safetensors", 3, 1},
        {"during a validation", TRAIN VAL "--steps 100000 --eval-every 2 --save ck.safetensors", 2, 1},
        /* a wider model, so that its save takes a while */
        {"during a save", TRAIN "--d-model 256 --d-ff 1024 --steps 100000 --save-every 1 "
                          "--save ck.safetensors", 2, 1},
        {"twice during a save", TRAIN "--d-model 256 --d-ff 1024 --steps 100000 --save-every 1 "
                                "--save ck.safetensors", 2, 2},
        {"during the final validation", TRAIN VAL "--steps 2 --save ck.safetensors", 2, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        remove_file("ck.safetensors");
        remove_file("log.jsonl");
        pid_t pid = spawn(cases[i].args);
        wait_for_step(pid, cases[i].at);
        for (int k = 0; k < cases[i].signals; k++) {
            if (k) sleep_us(2000);
            kill(pid, SIGINT);
        }
        const int rc = wait_exit(pid);
        if (rc != 130) {
            print_output();
            fail_msg("Ctrl-C %s: exit %d, want 130", cases[i].what, rc);
        }
        const uint64_t step = checkpoint_step("ck.safetensors"), logged = last_logged_step();
        if (step != logged) {
            print_output();
            fail_msg("Ctrl-C %s: the checkpoint is at step %llu, the log's last step is %llu",
                     cases[i].what, (unsigned long long)step, (unsigned long long)logged);
        }
        assert_no_temp_files();
    }
}

static void kill_9_while_saving_every_step_loses_nothing(void **state)
{
    (void)state;
    const harness_cmd cmd = {(char[4096]){0}, 4096, .cwd = dir};
    remove_file("log.jsonl");
    int rc = harness_run_clformer(&cmd, "train", "--src", "train.src", "--tgt", "train.tgt",
                                  "--config", "tiny", "--steps", "1", "--save",
                                  "ck.safetensors", NULL);
    harness_expect_run(&cmd, rc, 0, NULL);
    uint64_t step = checkpoint_step("ck.safetensors");
    ref_rng r = ref_rng_new(11);
    const int kills = 20;
    for (int i = 0; i < kills; i++) {
        remove_file("log.jsonl");
        pid_t pid = spawn(RESUME "--steps 100000 --save-every 1 --save ck.safetensors");
        /* half the kills at any moment of the first 1.5 s (start-up included),
         * half a few milliseconds after a step: in its save, or the next step */
        if (i % 2 == 0) {
            sleep_us(ref_rng_next(&r) % 1500000);
        } else {
            wait_for_step(pid, step + 1 + ref_rng_next(&r) % 3);
            sleep_us(ref_rng_next(&r) % 20000);
        }
        kill(pid, SIGKILL);
        assert_int_equal(wait_exit(pid), 128 + SIGKILL);
        const uint64_t now = checkpoint_step("ck.safetensors");
        if (now < step) fail_msg("kill %d: the checkpoint went back from step %llu to %llu", i,
                                 (unsigned long long)step, (unsigned long long)now);
        step = now;
    }
    /* --resume goes on from it, and its save clears the killed runs' temp files */
    char steps[32];
    snprintf(steps, sizeof steps, "%llu", (unsigned long long)step + 2);
    rc = harness_run_clformer(&cmd, "train", "--src", "train.src", "--tgt", "train.tgt",
                              "--resume", "ck.safetensors", "--steps", steps, "--save",
                              "ck.safetensors", NULL);
    harness_expect_run(&cmd, rc, 0, NULL);
    assert_int_equal(checkpoint_step("ck.safetensors"), step + 2);
    assert_no_temp_files();
}

static const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(ctrl_c_at_every_phase_saves_the_last_step, setup, teardown),
    cmocka_unit_test_setup_teardown(kill_9_while_saving_every_step_loses_nothing, setup,
                                    teardown),
};
HARNESS_DEVICE_MAIN("clformer train interrupted", tests)
