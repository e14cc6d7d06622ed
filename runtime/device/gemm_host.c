/*
 * The host provider: OpenBLAS's sgemm run by a native kernel on the
 * context's own in-order queue, so it is ordered with the OpenCL kernels
 * around it and needs no copies. clEnqueueNativeKernel copies the argument
 * block and replaces the cl_mem handles in it by the buffers' addresses in
 * host memory (a CPU device keeps its buffers there), where sgemm works in
 * place. Events are recorded under "gemm" like CLBlast's.
 *
 * PoCL 3.1 does not put the addresses into the slots in the order of the
 * list of memory objects (seen as products on swapped operands, and a
 * corrupted heap when one buffer is listed twice). So each buffer's address
 * is learnt once, by a native kernel given that buffer alone, and kept in a
 * table until the buffer is destroyed; the products take their addresses
 * from the table and still list their (distinct) buffers, so that the queue
 * orders them and tracks the buffers' contents as written.
 *
 * On a CPU with AVX-512 where OpenBLAS runs older kernels, the products are
 * gemm_avx512.c's instead of OpenBLAS's (gemm_avx512.h says why). A
 * decoding step's products are gemm_dots.c's dot products, which read B
 * from the 16-bit copy of a bf16/fp16 session's weights where B is those
 * weights (cf_ctx.half_weights).
 */
#if defined(__linux__)
#define _GNU_SOURCE /* sched_getcpu, the affinity calls: helper_cpus, helpers_away_from_caller */
#endif
#include "clock.h"
#include "gemm_avx512.h"
#include "gemm.h"
#include "gemm_dots.h"
#include "gemm_epilogue.h"
#include "gemm_provider.h"
#include "host_items.h"
#include "launch.h"
#include "round_avx512.h"

#ifdef CLFORMER_HAVE_OPENBLAS

#include <cblas.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The argument block: the fixed part, then for a batch with offsets
 * 3 * batch offsets (A's, B's, C's) and 2 * batch floats (alphas, betas). */
typedef struct {
    float *a, *b, *c; /* the buffers' addresses (address_of) */
    void *slots[6];   /* PoCL writes the listed buffers' addresses here; unused */
    int trans_a, trans_b, m, n, k, lda, ldb, ldc;
    size_t batch, a_off, b_off, c_off, a_stride, b_stride, c_stride;
    float alpha, beta;
    int per_matrix; /* offsets and scalars follow the block */
    int dots;       /* a decoding step's product: gemm_dots.c's where it runs */
    const uint16_t *b16; /* B's values in 16 bits (cf_ctx.half_weights), or NULL */
    int b16_fp16;        /* b16 holds IEEE halves, else bf16 */
    int round_c;         /* C rounded to bf16 (1) or fp16 (2) values as written; 0: not */
    int epilogue;        /* a cf_epilogue_kind, applied before the rounding */
    int act;             /* its clformer_activation */
    const float *bias;   /* the epilogue's bias (at its first column) */
    float *rows;         /* its second matrix (at its first element), or NULL */
    cf_host_dropout drop; /* its dropout */
} host_args;

static size_t args_size(size_t batch, bool per_matrix)
{
    return sizeof(host_args) +
           (per_matrix ? batch * (3 * sizeof(size_t) + 2 * sizeof(float)) : 0);
}

/* The least rows (or columns) a slice of a product gets. */
enum { MIN_SLICE = 16 };

/* C (m x n at c + co) = alpha op(A) op(B) + beta C, by the first of the
 * host's products that takes it. */
static void multiply(const host_args *h, int m, int n, size_t ao, size_t bo, size_t co,
                     float alpha, float beta)
{
    if (h->dots && h->b16 &&
        cf_gemm_dots_half(m, n, h->k, alpha, h->a + ao, h->lda, h->b16 + bo, h->b16_fp16,
                          h->ldb, beta, h->c + co, h->ldc))
        return;
    if (h->dots && !h->trans_a && h->trans_b &&
        cf_gemm_dots(m, n, h->k, alpha, h->a + ao, h->lda, h->b + bo, h->ldb, beta, h->c + co,
                     h->ldc))
        return;
    cf_host_product(h->trans_a, h->trans_b, m, n, h->k, alpha, h->a + ao, h->lda, h->b + bo,
                    h->ldb, beta, h->c + co, h->ldc);
}

/* What a slice of C gets after its product (m rows by n columns from row r0
 * and column j0 of C at c): the epilogue, then the rounding, while the
 * slice is in this core's cache (cf_gemm_host_rounds: round_c set only
 * where the CPU runs it). */
static void finish_slice(const host_args *h, float *c, int r0, int j0, int m, int n)
{
    if (h->epilogue) {
        const cf_epilogue_slice e = {
            .kind = h->epilogue, .act = h->act, .bias = h->bias + j0,
            .rows = h->rows ? h->rows + (size_t)r0 * h->ldc + j0 : NULL, .drop = h->drop,
            .first = (uint64_t)r0 * (uint64_t)h->n + (uint64_t)j0, .row_len = (uint64_t)h->n};
        cf_gemm_epilogue_rows(&e, c, m, n, h->ldc);
    }
    if (h->round_c) cf_round_rows_avx512(c, m, n, h->ldc, h->round_c);
}

/* Product i of the call; with parts > 1, its slice `part` of `parts`: a
 * block of C's rows, or of its columns when it has more columns than rows
 * (each computed whole, so its bits do not depend on who computes it). */
static void product(const host_args *h, size_t i, int part, int parts)
{
    const unsigned char *tail = (const unsigned char *)h + sizeof(host_args);
    size_t ao = h->a_off + i * h->a_stride, bo = h->b_off + i * h->b_stride,
           co = h->c_off + i * h->c_stride;
    float alpha = h->alpha, beta = h->beta;
    if (h->per_matrix) { /* memcpy: the copied block need not be aligned for size_t */
        memcpy(&ao, tail + i * sizeof(size_t), sizeof ao);
        memcpy(&bo, tail + (h->batch + i) * sizeof(size_t), sizeof bo);
        memcpy(&co, tail + (2 * h->batch + i) * sizeof(size_t), sizeof co);
        const unsigned char *f = tail + 3 * h->batch * sizeof(size_t);
        memcpy(&alpha, f + i * sizeof(float), sizeof alpha);
        memcpy(&beta, f + (h->batch + i) * sizeof(float), sizeof beta);
    }
    int m = h->m, n = h->n, r0 = 0, j0 = 0;
    if (parts > 1 && m >= n) { /* rows r0.. of op(A) and C */
        const int r1 = (int)((long)m * (part + 1) / parts);
        r0 = (int)((long)m * part / parts);
        ao += h->trans_a ? (size_t)r0 : (size_t)r0 * (size_t)h->lda;
        co += (size_t)r0 * (size_t)h->ldc;
        m = r1 - r0;
    } else if (parts > 1) { /* columns j0.. of op(B) and C */
        const int j1 = (int)((long)n * (part + 1) / parts);
        j0 = (int)((long)n * part / parts);
        bo += h->trans_b ? (size_t)j0 * (size_t)h->ldb : (size_t)j0;
        co += (size_t)j0;
        n = j1 - j0;
    }
    multiply(h, m, n, ao, bo, co, alpha, beta);
    finish_slice(h, h->c + co, r0, j0, m, n);
}

/* --- products spread over helper threads ----------------------------------
 * OpenBLAS runs single-threaded here (openblas_set_num_threads(1) when the
 * helpers start): its own threads wait for work by spinning (sched_yield
 * for about 2^28 cycles after each call), and a product only every few
 * kernels left them spinning beside the device's worker threads all step:
 * three busy threads on two cores, every kernel slower (gpt-mini on PoCL
 * pthread, 2 cores: 9,300-10,600 tokens/s; with OpenBLAS's threads asleep
 * between calls, OPENBLAS_THREAD_TIMEOUT=4, 13,600-13,900). The
 * parallelism is ours instead: helper threads (one per further thread
 * OpenBLAS would have used, started once, asleep on a condition variable
 * between calls) take items from a shared counter beside the native
 * kernel's thread: the products of a batch, or the row (or column) slices
 * of one product, when the call has at least SMALL_WORK multiply-adds. The
 * caller takes items too and never waits for a helper to wake: on a loaded
 * machine it may do them all itself. A smaller call runs on the caller
 * alone: a helper took 18-35 us to wake (2-vCPU Xeon, PoCL pthread), about
 * what 2^22 multiply-adds take one core, and a decoding step's products
 * (12 rows by a weight matrix) split in two went no faster, while the
 * caller waited on the helper's half: clformer generate, 8 x 250 tokens of
 * gpt-mini, spent 280 ms in products split so, 220 ms unsplit. Each item is
 * computed by exactly one thread in the same way, so results do not depend
 * on which. This sets OpenBLAS's thread count for the whole process (other
 * users of the same library in it run single-threaded too).
 *
 * The helpers are kept off the CPU the caller runs on
 * (helpers_away_from_caller). Woken by the caller, a helper was put on the
 * caller's own CPU by Linux in a fifth of the products, the two slices then
 * running one after the other on one core, or woke too late to take a slice
 * in another quarter: gpt-mini on PoCL pthread, 2 cores, 2,700 products
 * spread: the helper took part in 1,951-2,046, 402-522 of them on the
 * caller's CPU (with PoCL's workers limited to one, POCL_MAX_PTHREAD_COUNT=1:
 * 2,691, none there). Kept off it: 2,698 of 2,700, and a gpt-mini training
 * step of 31.9 ms against 41.2 (medians of six runs each, alternated;
 * `clformer bench --config small`: 314-326 ms against 374-386). On Intel's
 * CPU runtime the helpers needed helper_cpus (below) as well. */

enum { SMALL_WORK = 1 << 22 };
enum { DOTS_SPREAD = 1 << 18 };

/* After a decoding step's product of at most SPIN_ROWS rows a helper stays
 * awake this long, yielding its CPU to any thread that wants it, for the
 * next product to be posted: such products come a few small kernels apart,
 * and a helper woken from its condition variable for each arrived 35-50 us
 * late on products of 50-150 us (smollm-135m in bf16, 2-vCPU AMD EPYC: a
 * 576 x 576 product of one row took 78 us spread, where one core alone
 * streams it in 58 and two in 30). With more rows the kernels between the
 * products are larger and want every core, and an awake helper slowed them
 * more than it saved (`bench --config small` translating 32 rows: 5-10%
 * fewer tokens/s); after those, and after training's products, the helpers
 * sleep. */
#define SPIN_AFTER_S 200e-6
enum { SPIN_ROWS = 16 };

/* An op's items (host_items.h): the native kernel's argument block, the
 * op's own arguments after it. */
typedef struct {
    cf_host_item_fn fn;
    size_t items;
    int threads; /* cf_host_items_threads() when enqueued: the indices items may get */
    float *address[CF_HOST_ITEMS_MAX_BUFFERS];
    void *slots[CF_HOST_ITEMS_MAX_BUFFERS]; /* PoCL writes the buffers' addresses here; unused */
} items_block;

typedef struct {
    const host_args *h;
    const items_block *op; /* an op's items in place of products (h NULL) */
    int parts;          /* slices per product */
    atomic_size_t next; /* the next item to take: product item / parts, slice item % parts;
                           with packed, the next chunk of rows */
    atomic_int threads; /* threads that took part so far: each one's index (op's items) */
    bool spin_after;    /* the helpers wait awake for the next job (SPIN_AFTER_S) */
    float *packed;           /* a lone product's op(B) packed once (run_shared), or NULL */
    size_t pack_tasks;       /* the parts of that pack (cf_gemm_avx512_pack_task) */
    atomic_size_t next_pack; /* the next part to take */
    atomic_size_t pack_left; /* parts not yet written */
} batch_job;

/* Rows of C a take of a lone product's job computes (run_shared). */
enum { CHUNK_ROWS = 32 };

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_wake = PTHREAD_COND_INITIALIZER; /* a job was posted */
static pthread_cond_t pool_idle = PTHREAD_COND_INITIALIZER; /* a helper left the job */
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;
static batch_job *pool_job;      /* the posted job, NULL when none */
static atomic_ulong pool_posts; /* jobs posted so far (written under pool_lock) */
static atomic_int pool_users;    /* helpers working on pool_job (changed under pool_lock) */
static int pool_helpers;         /* helper threads running */
static pthread_t pool_threads[64];   /* their handles */
#if defined(__linux__)
static cpu_set_t pool_cpus;          /* the CPUs the process may run on */
static int pool_cpu_of[64];          /* the CPU each helper last slept on (under pool_lock) */
#endif

/* Parts of a lone product's shared packed op(B) while any are left, then,
 * once every part is written, the chunks of its rows (with trans_a, row r
 * of op(A) is column r of a). A thread that finds the last parts taken by
 * another yields its CPU until they are written. */
static void take_rows(batch_job *job)
{
    const host_args *h = job->h;
    for (size_t t; (t = atomic_fetch_add(&job->next_pack, 1)) < job->pack_tasks;) {
        cf_gemm_avx512_pack_task(h->trans_b, h->n, h->k, h->b + h->b_off, h->ldb, job->packed, t);
        atomic_fetch_sub(&job->pack_left, 1);
    }
    while (atomic_load(&job->pack_left) > 0) sched_yield();
    const size_t chunks = ((size_t)h->m + CHUNK_ROWS - 1) / CHUNK_ROWS;
    for (size_t i; (i = atomic_fetch_add(&job->next, 1)) < chunks;) {
        const int r0 = (int)i * CHUNK_ROWS, rows = h->m - r0 < CHUNK_ROWS ? h->m - r0 : CHUNK_ROWS;
        const size_t ao = h->a_off + (h->trans_a ? (size_t)r0 : (size_t)r0 * (size_t)h->lda),
                     co = h->c_off + (size_t)r0 * (size_t)h->ldc;
        cf_gemm_avx512_packed(h->trans_a, rows, h->n, h->k, h->alpha, h->a + ao, h->lda,
                              job->packed, h->beta, h->c + co, h->ldc);
        finish_slice(h, h->c + co, r0, 0, rows, h->n);
    }
}

static void take_products(batch_job *job)
{
    if (job->op) {
        const items_block *op = job->op;
        const int me = atomic_fetch_add(&job->threads, 1);
        if (me >= op->threads) return; /* never: the pool does not grow after it starts */
        for (size_t i; (i = atomic_fetch_add(&job->next, 1)) < op->items;)
            op->fn(op + 1, op->address, i, me);
        return;
    }
    if (job->packed) {
        take_rows(job);
        return;
    }
    const size_t items = job->h->batch * (size_t)job->parts;
    for (size_t i; (i = atomic_fetch_add(&job->next, 1)) < items;)
        product(job->h, i / (size_t)job->parts, (int)(i % (size_t)job->parts), job->parts);
}

/* Waits up to SPIN_AFTER_S, awake, for a job after the `seen`th. */
static void spin_for_post(unsigned long seen)
{
    const double until = cf_now_s() + SPIN_AFTER_S;
    while (atomic_load(&pool_posts) == seen && cf_now_s() < until) sched_yield();
}

static void *helper_main(void *index)
{
    const int me = (int)(intptr_t)index;
    unsigned long seen = 0;
    bool spin = false; /* the last job's spin_after */
    pthread_mutex_lock(&pool_lock);
    for (;;) {
#if defined(__linux__)
        pool_cpu_of[me] = sched_getcpu(); /* where it will likely wake */
#else
        (void)me;
#endif
        if (spin) {
            pthread_mutex_unlock(&pool_lock);
            spin_for_post(seen);
            pthread_mutex_lock(&pool_lock);
        }
        while (atomic_load(&pool_posts) == seen) pthread_cond_wait(&pool_wake, &pool_lock);
        seen = atomic_load(&pool_posts);
        batch_job *job = pool_job;
        spin = job && job->spin_after; /* read while the caller waits for this helper */
        if (!job) continue;
        pool_users++;
        pthread_mutex_unlock(&pool_lock);
        take_products(job);
        pthread_mutex_lock(&pool_lock);
        if (--pool_users == 0) pthread_cond_broadcast(&pool_idle);
    }
    return NULL;
}

/* The CPUs the helpers may run on: the main thread's and the caller's
 * together. Not the caller's alone: the first product's caller is a device
 * worker thread, and Intel's CPU runtime pins its workers to one CPU in some
 * runs; helpers started from it inherited that one CPU and ran their slices
 * after the caller's instead of beside them (gpt-mini on Intel's runtime, 2
 * cores: a step of 50-55 ms in most runs, 31-36 in the others; with the
 * helpers given both CPUs, 31-32 in four runs of five, 43 in one). A
 * process confined with taskset stays so: its threads' sets are all in it. */
static int helper_cpus(void)
{
#if defined(__linux__)
    cpu_set_t caller;
    if (sched_getaffinity(getpid(), sizeof pool_cpus, &pool_cpus) != 0) CPU_ZERO(&pool_cpus);
    if (sched_getaffinity(0, sizeof caller, &caller) == 0) CPU_OR(&pool_cpus, &pool_cpus, &caller);
    return CPU_COUNT(&pool_cpus);
#else
    return 0;
#endif
}

static void start_helpers(void)
{
    const int cpus = helper_cpus();
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus > 0) cores = cpus;
    int want = openblas_get_num_threads(); /* OPENBLAS_NUM_THREADS or the cores */
    openblas_set_num_threads(1);
    if (cores > 0 && want > cores) want = (int)cores;
    for (int i = 1; i < want && i < 64; i++) {
        pthread_t t;
        pthread_attr_t attr;
        if (pthread_attr_init(&attr) != 0) break;
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
#if defined(__linux__)
        if (cpus > 0) pthread_attr_setaffinity_np(&attr, sizeof pool_cpus, &pool_cpus);
#endif
        /* helper i (pool_helpers: only this thread adds helpers) */
        const bool started =
            pthread_create(&t, &attr, helper_main, (void *)(intptr_t)pool_helpers) == 0;
        pthread_attr_destroy(&attr);
        if (!started) break; /* fewer helpers: the caller does more itself */
        pthread_mutex_lock(&pool_lock);
        pool_threads[pool_helpers] = t;
        pool_helpers++;
        pthread_mutex_unlock(&pool_lock);
    }
}

/* With pool_lock held, before a job is posted: a helper that last slept on
 * the caller's CPU may from now on run on every CPU of the process but that
 * one (a system call for each such helper; with many cores, few are). The
 * others keep their places. Nothing where the CPU is not known or no other
 * is allowed: the helpers then run where the system puts them. */
static void helpers_away_from_caller(void)
{
#if defined(__linux__)
    const int cpu = sched_getcpu();
    if (cpu < 0 || cpu >= CPU_SETSIZE) return;
    cpu_set_t others = pool_cpus;
    CPU_CLR(cpu, &others);
    if (CPU_COUNT(&others) == 0) return;
    for (int i = 0; i < pool_helpers; i++)
        if (pool_cpu_of[i] == cpu) {
            pthread_setaffinity_np(pool_threads[i], sizeof others, &others);
            pool_cpu_of[i] = -1; /* moved; it says where when it sleeps again */
        }
#endif
}

/* Posts job to the helpers if they are free; whether it did. */
static bool post(batch_job *job)
{
    pthread_mutex_lock(&pool_lock);
    const bool posted = pool_helpers > 0 && !pool_job && pool_users == 0;
    if (posted) {
        helpers_away_from_caller();
        pool_job = job;
        atomic_fetch_add(&pool_posts, 1);
        pthread_cond_broadcast(&pool_wake);
    }
    pthread_mutex_unlock(&pool_lock);
    return posted;
}

/* Waits for the helpers still computing the posted job's items (every item
 * is taken by now) and takes the job down. They are on their last items:
 * the caller waits awake for up to FINISH_SPIN_S first, yielding its CPU,
 * as asleep on pool_idle it woke 10-20 us after the last helper was done
 * (gpt-mini on PoCL, 2 vCPUs, 300 steps: the 15,640 lone products kept
 * their caller waiting 192-195 ms in all, awake 47-53 ms). */
#define FINISH_SPIN_S 100e-6

static void finish(void)
{
    pthread_mutex_lock(&pool_lock);
    pool_job = NULL;
    pthread_mutex_unlock(&pool_lock);
    const double until = cf_now_s() + FINISH_SPIN_S;
    while (atomic_load(&pool_users) > 0 && cf_now_s() < until) sched_yield();
    pthread_mutex_lock(&pool_lock);
    while (pool_users > 0) pthread_cond_wait(&pool_idle, &pool_lock);
    pthread_mutex_unlock(&pool_lock);
}

/* Runs the items with the helpers, or alone when there are none or they are
 * busy with another queue's items. */
static void run_spread(const host_args *h, int parts, bool spin_after)
{
    batch_job job = {.h = h, .parts = parts, .spin_after = spin_after};
    atomic_init(&job.next, 0);
    const bool posted = post(&job);
    take_products(&job);
    if (posted) finish();
}

/* Slices per product: one per thread for a lone product (each slice at
 * least MIN_SLICE rows or columns), else 1. */
static int slices(const host_args *h)
{
    const int threads = 1 + pool_helpers, dim = h->m >= h->n ? h->m : h->n;
    if (h->batch > 1) return 1;
    const int most = dim / MIN_SLICE;
    return threads < most ? threads : (most > 1 ? most : 1);
}

/* A lone product on the AVX-512 path: op(B) packed once into a buffer
 * every thread reads, its parts taken by whichever thread is free (the
 * caller alone packed it at first: the pack of a 768-token activation, cold,
 * kept the helper waiting, 5.6% of a gpt-mini step's samples), then C's rows
 * CHUNK_ROWS at a time. Sliced in halves instead, each thread packed
 * all of op(B) itself (the same cache misses twice: packing op(B) took 13%
 * of the products' cycles) and the caller, done with its half, waited for
 * the helper, which had woken 18-21 us after the post: an eighth of the
 * products' wall time (gpt-mini on PoCL, 2 cores, 23,000 spread products).
 * The helpers are posted before the pack, so that they wake while it runs.
 * Each chunk reads the whole packed op(B): so only up to PACKED_MAX_FLOATS
 * (larger products take the slices, their waits and packs being small
 * beside them). An op(B) the product reads in place, unpacked
 * (cf_gemm_avx512_reads_b_in_place), takes the slices too. Whether a row is
 * computed in one chunk or another does not change its bits (gemm_avx512.h). */
#define PACKED_MAX_FLOATS ((size_t)1 << 22)

static bool run_shared(const host_args *h)
{
    if (h->dots || h->per_matrix || h->batch != 1 || h->m < 2 * CHUNK_ROWS ||
        !cf_gemm_avx512_wanted() || cf_gemm_avx512_packed_floats(h->n, h->k) > PACKED_MAX_FLOATS ||
        cf_gemm_avx512_reads_b_in_place(h->trans_b, h->n, h->k))
        return false;
    bool own;
    float *packed = cf_gemm_avx512_packed_buffer(h->n, h->k, &own);
    if (!packed) return false;
    const size_t tasks = cf_gemm_avx512_pack_tasks(h->n, h->k);
    batch_job job = {.h = h, .parts = 1, .packed = packed, .pack_tasks = tasks};
    atomic_init(&job.next, 0);
    atomic_init(&job.next_pack, 0);
    atomic_init(&job.pack_left, tasks);
    const bool posted = post(&job);
    take_products(&job);
    if (posted) finish();
    if (own) free(packed);
    return true;
}

static void CL_CALLBACK run_items(void *block)
{
    const items_block *op = block;
    pthread_once(&pool_once, start_helpers);
    batch_job job = {.op = op, .parts = 1};
    atomic_init(&job.next, 0);
    atomic_init(&job.threads, 0);
    const bool posted = op->items > 1 && post(&job);
    take_products(&job);
    if (posted) finish();
}

int cf_gemm_host_start_helpers(void)
{
    pthread_once(&pool_once, start_helpers);
    pthread_mutex_lock(&pool_lock);
    const int helpers = pool_helpers;
    pthread_mutex_unlock(&pool_lock);
    return helpers;
}

static void CL_CALLBACK run(void *block)
{
    const host_args *h = block;
    pthread_once(&pool_once, start_helpers);
    const double work = (double)h->batch * (double)h->m * (double)h->n * (double)h->k;
    /* a decoding step's product streams its weights from memory: one core
     * alone reads at most ~13 GB/s (2-vCPU AMD EPYC), two together more */
    const bool streams = h->dots && (double)h->n * (double)h->k * sizeof(float) >= DOTS_SPREAD;
    if (work < SMALL_WORK && !streams) { /* done sooner than a helper wakes */
        for (size_t i = 0; i < h->batch; i++) product(h, i, 0, 1);
        return;
    }
    const int parts = slices(h);
    if (parts > 1 && run_shared(h)) return;
    if (h->batch * (size_t)parts > 1) run_spread(h, parts, streams && h->m <= SPIN_ROWS);
    else product(h, 0, 0, 1);
}

/* --- the address of each buffer, learnt once ------------------------------ */

typedef struct {
    cl_mem mem;
    float *addr;
} known_address;

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static known_address *table;
static size_t n_table, table_cap;

static float *table_find(cl_mem mem)
{
    float *addr = NULL;
    pthread_mutex_lock(&table_lock);
    for (size_t i = 0; i < n_table && !addr; i++)
        if (table[i].mem == mem) addr = table[i].addr;
    pthread_mutex_unlock(&table_lock);
    return addr;
}

/* Destructor callback: the handle may be reused by a new buffer. */
static void CL_CALLBACK table_forget(cl_mem mem, void *user)
{
    (void)user;
    pthread_mutex_lock(&table_lock);
    for (size_t i = 0; i < n_table; i++)
        if (table[i].mem == mem) {
            table[i] = table[--n_table];
            break;
        }
    pthread_mutex_unlock(&table_lock);
}

typedef struct {
    void *mem;   /* the buffer's address when run */
    void **dest; /* where to write it */
} address_args;

static void CL_CALLBACK note_address(void *block)
{
    const address_args *a = block;
    *a->dest = a->mem;
}

static clformer_status address_of(cf_ctx *ctx, cl_mem mem, float **out)
{
    if ((*out = table_find(mem))) return CLFORMER_OK;
    void *addr = NULL;
    address_args args = {mem, &addr};
    const void *loc = &args.mem;
    CL_CHECK(clEnqueueNativeKernel(ctx->queue, note_address, &args, sizeof args, 1, &mem, &loc, 0,
                                   NULL, NULL));
    CL_CHECK(clFinish(ctx->queue));
    if (!addr)
        return cf_fail(CLFORMER_ERR_OPENCL, "the device gave no host address for a buffer; use "
                                            "CLFORMER_GEMM=clblast");
    pthread_mutex_lock(&table_lock);
    if (n_table == table_cap) {
        size_t cap = table_cap ? 2 * table_cap : 64;
        known_address *grown = realloc(table, cap * sizeof *grown);
        if (!grown) {
            pthread_mutex_unlock(&table_lock);
            return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        }
        table = grown, table_cap = cap;
    }
    table[n_table++] = (known_address){mem, addr};
    pthread_mutex_unlock(&table_lock);
    cl_int err = clSetMemObjectDestructorCallback(mem, table_forget, NULL);
    if (err != CL_SUCCESS) {
        table_forget(mem, NULL);
        return cf_fail_cl(err, "clSetMemObjectDestructorCallback", __FILE__, __LINE__);
    }
    *out = addr;
    return CLFORMER_OK;
}

clformer_status cf_gemm_host(cf_ctx *ctx, const cf_gemm_call *g)
{
    CF_TRY(cf_gemm_check_int_sizes(g));
    CF_TRY(cf_gemm_avx512_check_setting());
    const bool dots = ctx->decoding && cf_gemm_dots_wanted();
    /* a decoding step reads the 16-bit copy of the weights where there is one */
    const bool half = dots && !g->trans_a && g->trans_b && ctx->half_weights.of &&
                      g->b == ctx->half_weights.of;
    const cf_gemm_epilogue *e = &g->epilogue;
    /* A, B, C, then those of the 16-bit weights and the epilogue that are there */
    enum { OPERANDS = 6 };
    float *addr[OPERANDS] = {NULL};
    const cl_mem operands[OPERANDS] = {g->a, g->b, g->c, half ? ctx->half_weights.half : NULL,
                                       e->kind ? e->bias : NULL, e->kind ? e->rows : NULL};
    for (int i = 0; i < OPERANDS; i++)
        if (operands[i]) CF_TRY(address_of(ctx, operands[i], &addr[i]));
    const bool per_matrix = g->a_offs != NULL;
    const size_t size = args_size(g->batch, per_matrix);
    host_args *h = calloc(1, size);
    if (!h) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    *h = (host_args){.a = addr[0], .b = addr[1], .c = addr[2], .trans_a = g->trans_a,
                     .trans_b = g->trans_b, .m = (int)g->m, .n = (int)g->n, .k = (int)g->k,
                     .lda = (int)g->lda, .ldb = (int)g->ldb, .ldc = (int)g->ldc,
                     .batch = g->batch, .a_off = g->a_off, .b_off = g->b_off,
                     .c_off = g->c_off, .a_stride = g->a_stride, .b_stride = g->b_stride,
                     .c_stride = g->c_stride, .alpha = g->alpha, .beta = g->beta,
                     .per_matrix = per_matrix, .dots = dots,
                     .b16 = (const uint16_t *)addr[3], .b16_fp16 = ctx->half_weights.fp16,
                     .round_c = (int)g->round_c, .epilogue = (int)e->kind, .act = (int)e->act,
                     .bias = addr[4] ? addr[4] + e->bias_off : NULL,
                     .rows = addr[5] ? addr[5] + e->rows_off : NULL, .drop = e->drop};
    if (per_matrix) {
        unsigned char *tail = (unsigned char *)h + sizeof *h;
        const size_t n = g->batch;
        memcpy(tail, g->a_offs, n * sizeof(size_t));
        memcpy(tail + n * sizeof(size_t), g->b_offs, n * sizeof(size_t));
        memcpy(tail + 2 * n * sizeof(size_t), g->c_offs, n * sizeof(size_t));
        memcpy(tail + 3 * n * sizeof(size_t), g->alphas, n * sizeof(float));
        memcpy(tail + 3 * n * sizeof(size_t) + n * sizeof(float), g->betas, n * sizeof(float));
    }
    cl_mem mems[OPERANDS];
    const void *locs[OPERANDS];
    cl_uint n_mems = 0;
    for (int i = 0; i < OPERANDS; i++) {
        if (!operands[i]) continue;
        cl_uint j = 0;
        while (j < n_mems && mems[j] != operands[i]) j++;
        if (j == n_mems) {
            locs[n_mems] = &h->slots[n_mems];
            h->slots[n_mems] = operands[i];
            mems[n_mems++] = operands[i];
        }
    }
    cl_event *slot = cf_profile_slot(ctx, "gemm", ctx->profiling ? cf_gemm_call_bytes(g) : 0,
                                     cf_gemm_call_flop(g));
    cl_int err =
        clEnqueueNativeKernel(ctx->queue, run, h, size, n_mems, mems, locs, 0, NULL, slot);
    free(h); /* the queue keeps its own copy */
    if (err != CL_SUCCESS) {
        if (slot) ctx->n_profile--;
        return cf_fail_cl(err, "clEnqueueNativeKernel (host gemm)", __FILE__, __LINE__);
    }
    return CLFORMER_OK;
}

clformer_status cf_host_items(cf_ctx *ctx, const char *family, cf_host_item_fn fn,
                              const void *args, size_t args_size, const cl_mem *buffers,
                              size_t n_buffers, size_t items, uint64_t bytes, uint64_t flop)
{
    if (!cf_host_items_available(ctx) || n_buffers > CF_HOST_ITEMS_MAX_BUFFERS)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "cf_host_items: %zu buffers on a context of the %s provider (the host "
                       "provider's, at most %d)",
                       n_buffers, clformer_gemm_provider_name(ctx->gemm_provider),
                       (int)CF_HOST_ITEMS_MAX_BUFFERS);
    if (items == 0) return CLFORMER_OK;
    const size_t size = sizeof(items_block) + args_size;
    items_block *op = calloc(1, size);
    if (!op) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    *op = (items_block){.fn = fn, .items = items, .threads = cf_host_items_threads()};
    memcpy(op + 1, args, args_size);
    const void *locs[CF_HOST_ITEMS_MAX_BUFFERS];
    clformer_status st = CLFORMER_OK;
    for (size_t i = 0; i < n_buffers && !st; i++) {
        st = address_of(ctx, buffers[i], &op->address[i]);
        op->slots[i] = buffers[i];
        locs[i] = &op->slots[i];
    }
    if (st) {
        free(op);
        return st;
    }
    cl_event *slot = cf_profile_slot(ctx, family, ctx->profiling ? bytes : 0, flop);
    const cl_int err = clEnqueueNativeKernel(ctx->queue, run_items, op, size, (cl_uint)n_buffers,
                                             buffers, locs, 0, NULL, slot);
    free(op); /* the queue keeps its own copy */
    if (err != CL_SUCCESS) {
        if (slot) ctx->n_profile--;
        return cf_fail_cl(err, "clEnqueueNativeKernel (host items)", __FILE__, __LINE__);
    }
    return CLFORMER_OK;
}

void cf_host_product(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                     const float *a, int lda, const float *b, int ldb, float beta, float *c,
                     int ldc)
{
    if (cf_gemm_avx512_wanted() &&
        cf_gemm_avx512(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))
        return;
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

bool cf_host_items_available(const cf_ctx *ctx)
{
    return ctx->gemm_provider == CLFORMER_GEMM_HOST;
}

int cf_host_items_threads(void) { return 1 + cf_gemm_host_start_helpers(); }

bool cf_gemm_host_available(void) { return true; }

bool cf_gemm_host_rounds(void) { return cf_round_avx512_available(); }

bool cf_gemm_reads_half_weights(const cf_ctx *ctx)
{
    return ctx->gemm_provider == CLFORMER_GEMM_HOST && cf_gemm_dots_wanted();
}

#else /* built without OpenBLAS */

clformer_status cf_gemm_host(cf_ctx *ctx, const cf_gemm_call *g)
{
    (void)ctx, (void)g;
    return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                   "the host GEMM provider is not in this build (install libopenblas-dev and "
                   "rebuild)");
}

bool cf_gemm_host_available(void) { return false; }

bool cf_gemm_host_rounds(void) { return false; }

bool cf_gemm_reads_half_weights(const cf_ctx *ctx)
{
    (void)ctx;
    return false;
}

int cf_gemm_host_start_helpers(void) { return 0; }

bool cf_host_items_available(const cf_ctx *ctx)
{
    (void)ctx;
    return false;
}

int cf_host_items_threads(void) { return 1; }

clformer_status cf_host_items(cf_ctx *ctx, const char *family, cf_host_item_fn fn,
                              const void *args, size_t args_size, const cl_mem *buffers,
                              size_t n_buffers, size_t items, uint64_t bytes, uint64_t flop)
{
    (void)ctx, (void)family, (void)fn, (void)args, (void)args_size, (void)buffers;
    (void)n_buffers, (void)items, (void)bytes, (void)flop;
    return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                   "host items need the host provider, which is not in this build");
}

void cf_host_product(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                     const float *a, int lda, const float *b, int ldb, float beta, float *c,
                     int ldc)
{
    (void)trans_a, (void)trans_b, (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda;
    (void)b, (void)ldb, (void)beta, (void)c, (void)ldc;
}

#endif
