/*
 * `clformer bench`: how fast a preset model trains and translates on the
 * selected device.
 *
 * One run: create the model (tiny, small or base; random weights, fixed
 * seed), take a first training step (kernel compilation happens here, so it
 * is reported on its own), --warmup untimed steps, --steps timed steps (wall
 * clock; a step reads back its loss, so it ends when the device is done),
 * then up to three more steps with OpenCL profiling on for the time of each
 * kernel family and the bytes it moves (each launch's ideal traffic), set
 * against the device's copy bandwidth measured first: a roofline table. Translation follows the same pattern: a first greedy batch,
 * --warmup untimed, --steps timed, one profiled. --quick (for simulators,
 * where a tiny step takes minutes) shrinks the model and profiles the timed
 * repetitions instead of running more.
 *
 * Counting, kept identical to tools/reference/bench_torch.py so the two compare:
 * - a training step is B sentence pairs of T tokens: the source is
 *   <sos> w1..w(T-2) <eos>, the target <sos> w1..w(T-1) <eos>, so the decoder
 *   reads T tokens and predicts T labels; it counts B*T target tokens;
 * - translation decodes B sources of T tokens greedily for T output tokens
 *   each and counts the tokens generated. bench_torch.py decodes a fixed
 *   length without stopping; here <eos> is ruled out instead (its generator
 *   bias set to -1e9 after training: a model trained on these targets soon
 *   predicts <eos> first, since it ends every one), so every sentence runs
 *   the full T steps. The count is still taken from the output;
 * - FLOP are the GEMMs' 2*m*n*k, counted from the shapes of the blocks the
 *   model's family runs (clformer_config_train_flop, clformer_config_decode_flop).
 *
 * Profiling is turned on and off (clformer_context_set_profiling) on a
 * context created with profiling, so the timed steps record no events and
 * the profiled ones run on the same compiled programs and buffers.
 */
#include "bench_roofline.h"
#include "blas_kernels.h"
#include "cli.h"
#include "clformer.h"
#include "clformer_util.h"
#include "commands.h"
#include "context_open.h"
#include "translator.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAX_FAMILIES = 32, MAX_KERNELS = 192, TOP_KERNELS = 12, N_BATCHES = 4,
       MAX_PROFILED_STEPS = 3 };
#define MAX_LEN 256      /* the presets' max_len, raised to --len + 1 for longer sentences */
#define LONGEST_LEN 4096
#define LEARNING_RATE 1e-4f /* tools/reference/bench_torch.py's */
#define QUICK_VOCAB 32

/* Kernel time and bytes per family and per kernel, divided by the number of
 * profiled repetitions. */
typedef struct {
    clformer_kernel_time f[MAX_FAMILIES];
    size_t n;
    clformer_named_kernel_time kernels[MAX_KERNELS]; /* largest time first */
    size_t n_kernels;
    double total_ms;  /* sum over families */
    double wall_ms;   /* wall clock of one profiled repetition */
    size_t reps;
} kernel_times;

typedef struct bench_task bench_task;

typedef struct {
    /* what was asked */
    const char *preset; /* clformer_config_preset's or clformer_config_lm_preset's name */
    const bench_task *task; /* the preset's: translation, or a language model's generation */
    size_t B, T, steps, warmup, vocab;
    uint64_t seed;
    bool quick;
    bool remeasure_roofs; /* --remeasure-roofs */
    bool recompute; /* --recompute: layers recomputed in backward */
    clformer_precision precision; /* --precision */
    clformer_config cfg;
    /* what was measured */
    size_t params;
    double copy_gbps; /* the device's copy bandwidth, GB/s */
    bench_roofs roofs; /* its FMA peak and copy bandwidth (bench_roofline.h) */
    double create_s, first_step_s, train_step_s;
    double loss_first, loss_last;
    uint64_t train_flop;
    double translate_first_s, translate_s;  /* mean seconds per batch */
    double translate_tokens;                /* mean generated tokens per batch */
    size_t translate_steps;                 /* decoder steps of the last batch */
    uint64_t translate_flop;
    kernel_times train_k, translate_k;
    clformer_program_stats programs_first; /* after the first step */
    clformer_program_stats programs;       /* at the end */
    const char *gemm_provider;             /* "clblast" or "host" */
    const char *attention_path;            /* the training steps': "fused", "unfused" or
                                            * "gemm-backward" (auto's choice, or the context's) */
    clformer_attention_path attention_choice; /* the context's (CLFORMER_ATTENTION) */
    char attention_tiles[128];             /* the tiled kernels' tiles, where the steps ran them */
    const char *attention_tiles_how;       /* "searched" or "profile"; NULL: no tiled kernels */
    clformer_memory memory;
} bench;

static bool verbose; /* progress lines on stderr when it is a terminal */
static void progress(const char *what)
{
    if (verbose) fprintf(stderr, "clformer bench: %s\n", what);
}

/* ------------------------------------------------------------------------- */
/* Synthetic data                                                             */
/* ------------------------------------------------------------------------- */

/* A 64-bit linear congruential step (Knuth's MMIX constants): the same
 * synthetic words on every machine, which rand() does not promise. */
static uint64_t next_random(uint64_t *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return *state >> 33;
}

/* <sos> n random words <eos>, words drawn from ids 4..vocab-1. */
static void sentence(int32_t *out, size_t n, size_t vocab, uint64_t *rng)
{
    out[0] = CLFORMER_SOS;
    for (size_t i = 1; i <= n; i++) out[i] = 4 + (int32_t)(next_random(rng) % (vocab - 4));
    out[n + 1] = CLFORMER_EOS;
}

typedef struct {
    int32_t *src, *tgt; /* B x T and B x (T+1) */
} batch_data;

typedef struct given_options given_options;
typedef struct shape_options shape_options;

/* What bench does for a task: translation (an encoder-decoder preset) or a
 * language model's generation (a decoder-only preset). */
struct bench_task {
    const char *name;     /* --task's, and the JSON report's "task" */
    const char *const *(*presets)(void); /* the library's presets of the task */
    const char *preset;   /* --task's without --config */
    const char *use;      /* the presets to use instead of another task's */
    const char *decoding; /* its decoding: JSON keys' and the roofline's prefix */
    const char *decoded;  /* "kernels per ... batch" */
    const char *rows;     /* what a batch's rows are */
    int sources;          /* 1: the model reads a source (its vocabulary and --quick's
                             encoder layer), 0: none */
    /* the preset's config and the bench shape it implies (0, else the exit code) */
    int (*configure)(bench *b, const given_options *g, long *batch, long *len, long *vocab,
                     const shape_options *sh);
    clformer_batch (*train_batch)(const bench *b, const batch_data *d);
    /* what the decoding batches start from, and what is done to the model first */
    const int32_t *(*decode_input)(const batch_data *d);
    clformer_status (*before_decoding)(clformer_model *m);
    /* one decoding batch: the tokens generated and the decoder steps run */
    clformer_status (*decode_once)(clformer_session *s, const bench *b, const int32_t *in,
                                   size_t *tokens, size_t *steps);
    void (*layers)(const clformer_config *c, char *buf, size_t cap);
    void (*print_decoding)(const bench *b); /* the decoding table's title */
};

static bool make_batches(const bench *b, batch_data *out)
{
    uint64_t rng = b->seed ^ 0xB3C4D5E6F7A80912ull;
    for (size_t k = 0; k < N_BATCHES; k++) {
        out[k].src = malloc(b->B * b->T * sizeof(int32_t));
        out[k].tgt = malloc(b->B * (b->T + 1) * sizeof(int32_t));
        if (!out[k].src || !out[k].tgt) return false;
        for (size_t r = 0; r < b->B; r++) {
            sentence(out[k].src + r * b->T, b->T - 2, b->vocab, &rng);
            sentence(out[k].tgt + r * (b->T + 1), b->T - 1, b->vocab, &rng);
        }
    }
    return true;
}

/* ------------------------------------------------------------------------- */
/* Measuring                                                                  */
/* ------------------------------------------------------------------------- */

static clformer_status train_steps(clformer_session *s, const bench *b, const batch_data *data,
                                   size_t n, size_t *next, double *loss)
{
    for (size_t i = 0; i < n; i++, (*next)++) {
        const clformer_batch batch = b->task->train_batch(b, &data[*next % N_BATCHES]);
        clformer_step_stats stats;
        CLI_TRY(clformer_session_train_step(s, &batch, LEARNING_RATE, &stats));
        *loss = stats.loss;
    }
    return CLFORMER_OK;
}

/* The tiles of the tiled attention kernels, where the training steps ran
 * them (the fused path, or the backward by GEMMs after its forward). */
static void record_attention_tiles(clformer_context *ctx, clformer_session *session, bench *b)
{
    b->attention_tiles_how = NULL;
    if (clformer_session_training_attention(session) == CLFORMER_ATTENTION_UNFUSED) return;
    b->attention_tiles_how = clformer_context_attention_tiles(
        ctx, (size_t)(b->cfg.d_model / b->cfg.n_heads), b->attention_tiles,
        sizeof b->attention_tiles);
}

/* One greedy batch; `tokens` gets the tokens generated (<eos> included) and
 * `steps` the decoder steps run (the longest sentence). */
static clformer_status translate_once(clformer_session *s, const bench *b, const int32_t *src,
                                      size_t *tokens, size_t *steps)
{
    clformer_decode_options o;
    clformer_decode_options_default(&o);
    o.max_len = (int)b->T;
    clformer_translation tr;
    CLI_TRY(clformer_session_translate(s, src, b->B, b->T, &o, &tr));
    *tokens = *steps = 0;
    for (size_t r = 0; r < b->B; r++) {
        /* lengths exclude <eos>; a sentence shorter than max_len ended with one */
        size_t n = tr.lengths[r] < tr.max_len ? tr.lengths[r] + 1 : tr.max_len;
        *tokens += n;
        if (n > *steps) *steps = n;
    }
    clformer_translation_free(&tr);
    return CLFORMER_OK;
}

/* A language model's counterpart of a translated batch: B rows, each
 * prompted with its window's first token, continued greedily by T - 1
 * tokens (the window stays within the context, so no cache restarts). */
static clformer_status generate_once(clformer_session *s, const bench *b, const int32_t *tgt,
                                     size_t *tokens, size_t *steps)
{
    const int32_t **prompts = malloc(b->B * sizeof *prompts);
    size_t *lengths = malloc(b->B * sizeof *lengths), *counts = malloc(b->B * sizeof *counts);
    clformer_status st = CLFORMER_OK;
    if (!prompts || !lengths || !counts)
        st = clformer_set_error(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    clformer_sample_options o;
    clformer_sample_options_default(&o);
    o.temperature = 0.0f; /* greedy, as translation */
    o.max_tokens = (int)b->T - 1;
    for (size_t r = 0; st == CLFORMER_OK && r < b->B; r++) {
        prompts[r] = tgt + r * (b->T + 1);
        lengths[r] = 1;
    }
    if (st == CLFORMER_OK)
        st = clformer_session_generate_batch(s, prompts, lengths, b->B, 1, &o, NULL, NULL, NULL,
                                             counts);
    *tokens = 0;
    *steps = (size_t)o.max_tokens;
    for (size_t r = 0; st == CLFORMER_OK && r < b->B; r++) *tokens += counts[r];
    free(prompts);
    free(lengths);
    free(counts);
    return st;
}

/* A recorded total divided by the repetitions it covers. */
static void per_rep(clformer_kernel_time *t, size_t reps)
{
    t->ms /= (double)reps;
    t->bytes /= reps;
    t->flop /= reps;
}

static clformer_status collect(clformer_context *ctx, kernel_times *k, size_t reps, double wall_s)
{
    CLI_TRY(clformer_context_kernel_times_named(ctx, k->f, MAX_FAMILIES, &k->n, k->kernels,
                                                MAX_KERNELS, &k->n_kernels));
    k->reps = reps;
    k->total_ms = 0.0;
    for (size_t i = 0; i < k->n; i++) {
        per_rep(&k->f[i], reps);
        k->total_ms += k->f[i].ms;
    }
    for (size_t i = 0; i < k->n_kernels; i++) per_rep(&k->kernels[i].time, reps);
    k->wall_ms = 1e3 * wall_s / (double)reps;
    return CLFORMER_OK;
}

/* n training steps timed as a whole; with k, their kernel times too. */
static clformer_status timed_steps(clformer_context *ctx, clformer_session *s, const bench *b,
                                   const batch_data *data, size_t n, size_t *next, double *loss,
                                   double *seconds, kernel_times *k)
{
    CLI_TRY(clformer_context_set_profiling(ctx, k != NULL));
    double t0 = cli_now_s();
    clformer_status st = train_steps(s, b, data, n, next, loss);
    *seconds = cli_now_s() - t0;
    clformer_context_set_profiling(ctx, false);
    if (st == CLFORMER_OK && k) st = collect(ctx, k, n, *seconds);
    return st;
}

/* Rules out <eos> so that greedy decoding runs its full length (see the top). */
static clformer_status suppress_eos(clformer_model *m)
{
    const size_t V = (size_t)clformer_model_config(m)->tgt_vocab;
    float *bias = malloc(V * sizeof *bias);
    if (!bias) return clformer_set_error(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    clformer_status st = clformer_model_read_tensor(m, "generator.bias", false, bias, V);
    bias[CLFORMER_EOS] = -1e9f;
    if (st == CLFORMER_OK) st = clformer_model_write_tensor(m, "generator.bias", bias, V);
    free(bias);
    return st;
}

/* n greedy batches timed as a whole; with k, their kernel times too. */
static clformer_status timed_translations(clformer_context *ctx, clformer_session *s,
                                          const bench *b, const int32_t *src, size_t n,
                                          double *seconds,
                                          double *tokens, size_t *steps, kernel_times *k)
{
    size_t sum = 0, count = 0;
    CLI_TRY(clformer_context_set_profiling(ctx, k != NULL));
    clformer_status st = CLFORMER_OK;
    double t0 = cli_now_s();
    for (size_t i = 0; i < n && st == CLFORMER_OK; i++) {
        st = b->task->decode_once(s, b, src, &count, steps);
        sum += count;
    }
    *seconds = cli_now_s() - t0;
    clformer_context_set_profiling(ctx, false);
    if (tokens) *tokens = (double)sum / (double)n;
    if (st == CLFORMER_OK && k) st = collect(ctx, k, n, *seconds);
    return st;
}

/* The device memory of the model and of its one session, in one report. */
static clformer_memory device_memory(const clformer_model *m, const clformer_session *s)
{
    clformer_memory r = clformer_model_memory(m);
    const clformer_memory sm = clformer_session_memory(s);
    r.activations = sm.activations;
    r.decoding = sm.decoding;
    r.total += sm.total;
    return r;
}

/* The environment's device and settings, with queue profiling. */
static clformer_status open_profiling_context(clformer_context **ctx)
{
    clformer_context_params params;
    CLI_TRY(clformer_context_params_from_env(&params));
    params.profiling = true;
    if (isatty(STDERR_FILENO)) params.progress = cli_show_progress; /* compiles, GEMM search */
    return clformer_context_create_with_params(&params, ctx);
}

static clformer_status measure(clformer_context *ctx, bench *b, const batch_data *data)
{
    /* The queue can profile; commands record events only while profiling is on. */
    CLI_TRY(clformer_context_set_profiling(ctx, false));
    clformer_model *m = NULL;
    clformer_session *session = NULL;
    progress("the device's FMA peak and copy bandwidth (measured once, then cached)");
    CLI_TRY(bench_roofs_measure(ctx, b->quick, b->remeasure_roofs, &b->roofs));
    b->copy_gbps = b->roofs.copy_gbps;
    double t0 = cli_now_s();
    progress("creating the model");
    CLI_TRY(clformer_model_create(ctx, &b->cfg, b->seed, &m));
    b->create_s = cli_now_s() - t0;
    clformer_status st = clformer_session_create(m, &session);
    if (st != CLFORMER_OK) {
        clformer_model_free(m);
        return st;
    }
    clformer_session_set_recompute(session, b->recompute);
    if (st == CLFORMER_OK) st = clformer_session_set_precision(session, b->precision);
    if (st != CLFORMER_OK) {
        clformer_session_free(session);
        clformer_model_free(m);
        return st;
    }
    b->params = clformer_model_parameter_count(m);
    /* --quick profiles the timed repetitions instead of running more */
    kernel_times *train_k = b->quick ? &b->train_k : NULL;
    kernel_times *translate_k = b->quick ? &b->translate_k : NULL;
    const size_t profiled = b->steps < MAX_PROFILED_STEPS ? b->steps : MAX_PROFILED_STEPS;
    const int32_t *src = b->task->decode_input(&data[0]);
    size_t next = 0, steps;
    double s, loss, tokens;

    progress("first training step (compiles kernels)");
    st = timed_steps(ctx, session, b, data, 1, &next, &b->loss_first, &b->first_step_s, NULL);
    b->programs_first = clformer_context_program_stats(ctx);
    b->gemm_provider = clformer_gemm_provider_name(clformer_context_gemm_provider(ctx));
    b->attention_choice = clformer_context_attention_path(ctx);
    if (st == CLFORMER_OK && b->warmup) {
        progress("warm-up steps");
        st = timed_steps(ctx, session, b, data, b->warmup, &next, &loss, &s, NULL);
    }
    if (st == CLFORMER_OK) {
        progress("timed training steps");
        st = timed_steps(ctx, session, b, data, b->steps, &next, &b->loss_last, &s, train_k);
        b->train_step_s = s / (double)b->steps;
        b->attention_path =
            clformer_attention_path_name(clformer_session_training_attention(session));
        record_attention_tiles(ctx, session, b);
    }
    if (st == CLFORMER_OK && !b->quick) {
        progress("profiled training steps");
        st = timed_steps(ctx, session, b, data, profiled, &next, &loss, &s, &b->train_k);
    }

    if (st == CLFORMER_OK) st = b->task->before_decoding(m);
    if (st == CLFORMER_OK) {
        progress("first translation (compiles kernels)");
        st = timed_translations(ctx, session, b, src, 1, &b->translate_first_s, NULL, &steps,
                                NULL);
    }
    if (st == CLFORMER_OK && b->warmup) {
        progress("warm-up translations");
        st = timed_translations(ctx, session, b, src, b->warmup, &s, NULL, &steps, NULL);
    }
    if (st == CLFORMER_OK) {
        progress("timed translations");
        st = timed_translations(ctx, session, b, src, b->steps, &s, &b->translate_tokens,
                                &b->translate_steps, translate_k);
        b->translate_s = s / (double)b->steps;
    }
    if (st == CLFORMER_OK && !b->quick) {
        progress("profiled translation");
        st = timed_translations(ctx, session, b, src, 1, &s, &tokens, &steps, &b->translate_k);
    }
    b->memory = device_memory(m, session);
    b->programs = clformer_context_program_stats(ctx);
    clformer_session_free(session);
    clformer_model_free(m);
    if (st != CLFORMER_OK) return st;
    const size_t src_len = b->task->train_batch(b, &data[0]).src_len;
    b->train_flop = clformer_config_train_flop(&b->cfg, b->B, src_len, b->T);
    b->translate_flop = clformer_config_decode_flop(&b->cfg, b->B, src_len, b->translate_steps);
    return CLFORMER_OK;
}

/* ------------------------------------------------------------------------- */
/* Reporting                                                                  */
/* ------------------------------------------------------------------------- */

static double train_tokens_per_s(const bench *b) { return (double)(b->B * b->T) / b->train_step_s; }
static double translate_tokens_per_s(const bench *b) { return b->translate_tokens / b->translate_s; }
static double gflops(uint64_t flop, double s) { return (double)flop / s * 1e-9; }

static void put_int(json_t *o, const char *key, uint64_t v)
{
    json_object_set_new(o, key, json_integer((json_int_t)v));
}
static void put_real(json_t *o, const char *key, double v) { json_object_set_new(o, key, cli_json_number(v)); }
static void put_str(json_t *o, const char *key, const char *v) { json_object_set_new(o, key, json_string(v)); }

/* A family's achieved bandwidth: its bytes over its time, GB/s. */
static double family_gbps(const clformer_kernel_time *f)
{
    return f->ms > 0 ? (double)f->bytes / (f->ms * 1e-3) * 1e-9 : 0.0;
}

/* A family's or kernel's GFLOP/s over its own time (0 where it states no
 * FLOP or took no time). */
static double family_gflops(const clformer_kernel_time *f)
{
    return f->ms > 0 ? gflops(f->flop, 1e-3 * f->ms) : 0.0;
}

/* Its launches per profiled repetition. */
static double launches_of(const kernel_times *k, const clformer_kernel_time *f)
{
    return (double)f->count / (double)k->reps;
}

/* The GEMM family's figures per repetition, or NULL when none ran. Its FLOP
 * are the step's products less those the fused attention kernels do. */
static const clformer_kernel_time *gemm_family(const kernel_times *k)
{
    for (size_t i = 0; i < k->n; i++)
        if (!strcmp(k->f[i].family, "gemm")) return &k->f[i];
    return NULL;
}

/* The GEMM family's time per repetition (0 when none ran). */
static double gemm_ms(const kernel_times *k)
{
    const clformer_kernel_time *g = gemm_family(k);
    return g ? g->ms : 0.0;
}

/* Kernel launches per repetition, every family together (a GEMM call counts
 * once, however many kernels its provider enqueues): what small models pay
 * per launch whatever the kernels do. */
static double launches_per_rep(const kernel_times *k)
{
    uint64_t n = 0;
    for (size_t i = 0; i < k->n; i++) n += k->f[i].count;
    return k->reps ? (double)n / (double)k->reps : 0.0;
}

/* The JSON key of a figure of the decoding part: translate_... for the
 * translation presets, generate_... for the language models. */
static const char *decode_key(const bench *b, const char *figure)
{
    static char key[64];
    snprintf(key, sizeof key, "%s_%s", b->task->decoding, figure);
    return key;
}

typedef enum { PER_MS, PER_LAUNCHES, PER_BYTES, PER_GBPS, PER_COPY_FRACTION } per_family;

/* {family: one figure per repetition}: ms, launches, bytes, GB/s, or the
 * fraction of the copy bandwidth that GB/s is. */
static json_t *kernel_json(const kernel_times *k, per_family what, double copy_gbps)
{
    json_t *o = json_object();
    for (size_t i = 0; i < k->n && o; i++) {
        const clformer_kernel_time *f = &k->f[i];
        switch (what) {
        case PER_MS: put_real(o, f->family, f->ms); break;
        case PER_LAUNCHES: put_real(o, f->family, launches_of(k, f)); break;
        case PER_BYTES: put_int(o, f->family, f->bytes); break;
        case PER_GBPS: put_real(o, f->family, family_gbps(f)); break;
        case PER_COPY_FRACTION:
            put_real(o, f->family, copy_gbps > 0 ? family_gbps(f) / copy_gbps : 0.0);
            break;
        }
    }
    return o;
}

/* [{kernel, family, ms, launches, gflops}] per repetition, largest time
 * first: which kernel of a family takes its time (gflops where it states
 * FLOP, else 0). */
static json_t *kernels_json(const kernel_times *k)
{
    json_t *a = json_array();
    for (size_t i = 0; i < k->n_kernels && a; i++) {
        const clformer_named_kernel_time *e = &k->kernels[i];
        json_t *o = json_object();
        if (!o || json_array_append_new(a, o)) {
            json_decref(a);
            return NULL;
        }
        put_str(o, "kernel", e->kernel);
        put_str(o, "family", e->time.family);
        put_real(o, "ms", e->time.ms);
        put_real(o, "launches", launches_of(k, &e->time));
        put_real(o, "gflops", family_gflops(&e->time));
    }
    return a;
}

static int print_json(const bench *b, const clformer_device_info *dev)
{
    const clformer_config *c = &b->cfg;
    json_t *r = json_object(), *model = json_object(), *mem = json_object();
    if (!r || !model || !mem) {
        json_decref(r);
        json_decref(model);
        json_decref(mem);
        cli_error("bench", "out of host memory");
        return 1;
    }
    put_str(r, "config", b->preset);
    put_str(r, "task", b->task->name);
    put_str(r, "device", dev->name);
    put_str(r, "device_type", clformer_device_type_name(dev->type));
    put_str(r, "device_selector", dev->selector);
    put_str(r, "platform", dev->platform);
    put_str(r, "gemm_provider", b->gemm_provider);
    put_str(r, "attention_path", b->attention_path);
    const bool tiled = b->attention_tiles_how != NULL; /* null: the steps ran no tiled kernels */
    json_object_set_new(r, "attention_tiles", tiled ? json_string(b->attention_tiles) : json_null());
    json_object_set_new(r, "attention_tiles_chosen",
                        tiled ? json_string(b->attention_tiles_how) : json_null());
    put_str(r, "clformer_version", CLFORMER_VERSION);
    put_int(r, "batch", b->B);
    put_int(r, "len", b->T);
    put_int(r, "vocab", b->vocab);
    put_int(r, "steps", b->steps);
    put_int(r, "warmup", b->warmup);
    put_int(r, "seed", b->seed);
    json_object_set_new(r, "quick", json_boolean(b->quick));
    json_object_set_new(r, "recompute", json_boolean(b->recompute));
    json_object_set_new(r, "precision", json_string(clformer_precision_name(b->precision)));
    put_int(model, "d_model", (uint64_t)c->d_model);
    put_int(model, "n_heads", (uint64_t)c->n_heads);
    put_int(model, "d_ff", (uint64_t)c->d_ff);
    put_int(model, "n_enc_layers", (uint64_t)c->n_enc_layers);
    put_int(model, "n_dec_layers", (uint64_t)c->n_dec_layers);
    put_int(model, "max_len", (uint64_t)c->max_len);
    json_object_set_new(model, "norm_first", json_boolean(c->norm_first));
    json_object_set_new(model, "share_all_embeddings", json_boolean(c->share_all_embed));
    json_object_set_new(r, "model", model);
    put_real(r, "dropout", (double)c->dropout);
    put_real(r, "label_smoothing", (double)c->label_smoothing);
    put_real(r, "attention_dropout", (double)c->attention_dropout);
    put_real(r, "activation_dropout", (double)c->activation_dropout);
    put_int(r, "params", b->params);

    put_int(r, "train_tokens_per_step", b->B * b->T);
    put_real(r, "train_tokens_per_s", train_tokens_per_s(b));
    put_real(r, "train_step_ms", 1e3 * b->train_step_s);
    put_real(r, "train_gflops", gflops(b->train_flop, b->train_step_s));
    put_int(r, "flop_per_step", b->train_flop);
    put_real(r, "first_step_s", b->first_step_s);
    put_real(r, "model_create_s", b->create_s);
    put_real(r, "loss_first", b->loss_first);
    put_real(r, "loss_last", b->loss_last);
    put_int(r, "programs_built", b->programs.builds);
    put_int(r, "programs_built_first_step", b->programs_first.builds);
    put_int(r, "program_disk_hits", b->programs.disk_hits);
    put_int(r, "program_memory_hits", b->programs.memory_hits);

    put_real(r, decode_key(b, "tokens_per_s"), translate_tokens_per_s(b));
    put_real(r, decode_key(b, "batch_ms"), 1e3 * b->translate_s);
    put_real(r, decode_key(b, "first_s"), b->translate_first_s);
    put_real(r, decode_key(b, "tokens"), b->translate_tokens);
    put_int(r, decode_key(b, "steps"), b->translate_steps);
    put_int(r, decode_key(b, "flop"), b->translate_flop);
    put_real(r, decode_key(b, "gflops"), gflops(b->translate_flop, b->translate_s));

    const kernel_times *tk = &b->train_k, *xk = &b->translate_k;
    const double bw = b->copy_gbps;
    put_real(r, "copy_bandwidth_gbps", bw);
    json_object_set_new(r, "kernel_ms", kernel_json(tk, PER_MS, bw));
    json_object_set_new(r, "kernel_launches", kernel_json(tk, PER_LAUNCHES, bw));
    json_object_set_new(r, "kernels", kernels_json(tk));
    put_real(r, "launches_per_step", launches_per_rep(tk));
    json_object_set_new(r, "kernel_bytes", kernel_json(tk, PER_BYTES, bw));
    json_object_set_new(r, "kernel_gbps", kernel_json(tk, PER_GBPS, bw));
    json_object_set_new(r, "kernel_copy_fraction", kernel_json(tk, PER_COPY_FRACTION, bw));
    put_real(r, "kernel_total_ms", tk->total_ms);
    const clformer_kernel_time *g = gemm_family(tk);
    put_real(r, "gemm_kernel_gflops", g ? family_gflops(g) : 0.0);
    put_real(r, "non_gemm_kernel_ms", tk->total_ms - gemm_ms(tk));
    put_real(r, "non_gemm_step_fraction",
             tk->wall_ms > 0 ? (tk->total_ms - gemm_ms(tk)) / tk->wall_ms : 0.0);
    put_real(r, "profiled_step_ms", tk->wall_ms);
    put_int(r, "profiled_steps", tk->reps);
    json_object_set_new(r, decode_key(b, "kernel_ms"), kernel_json(xk, PER_MS, bw));
    json_object_set_new(r, decode_key(b, "kernels"), kernels_json(xk));
    json_object_set_new(r, decode_key(b, "kernel_bytes"), kernel_json(xk, PER_BYTES, bw));
    json_object_set_new(r, decode_key(b, "kernel_gbps"), kernel_json(xk, PER_GBPS, bw));
    put_real(r, decode_key(b, "kernel_total_ms"), xk->total_ms);
    put_real(r, decode_key(b, "profiled_batch_ms"), xk->wall_ms);
    put_real(r, decode_key(b, "launches_per_batch"), launches_per_rep(xk));
    json_t *roofline = bench_roofline_json(&b->roofs);
    bench_roofline_json_add(roofline, "train", tk->f, tk->n, &b->roofs);
    bench_roofline_json_add(roofline, b->task->decoding, xk->f, xk->n, &b->roofs);
    json_object_set_new(r, "roofline", roofline);

    put_int(mem, "parameters", b->memory.parameters);
    put_int(mem, "gradients", b->memory.gradients);
    put_int(mem, "optimizer", b->memory.optimizer);
    put_int(mem, "activations", b->memory.activations);
    put_int(mem, "decoding", b->memory.decoding);
    put_int(mem, "total", b->memory.total);
    json_object_set_new(r, "memory", mem);

    char *text = json_dumps(r, JSON_REAL_PRECISION(7) | JSON_PRESERVE_ORDER);
    json_decref(r);
    if (!text) {
        cli_error("bench", "out of host memory while formatting the JSON report");
        return 1;
    }
    printf("%s\n", text);
    free(text);
    return 0;
}

/* The roofline table: per family its time, share of kernel time, launches,
 * bytes (ideal traffic), achieved GB/s and that as a share of the copy
 * bandwidth; the families that state FLOP (GEMM, the fused attention) add
 * their GFLOP/s. */
static void print_kernels(const char *title, const kernel_times *k, const char *per,
                          double copy_gbps)
{
    printf("\n%s (OpenCL profiling, %zu %s%s; copy bandwidth %.1f GB/s)\n", title, k->reps, per,
           k->reps == 1 ? "" : "s", copy_gbps);
    printf("  %-12s %10s %7s %9s %10s %8s %7s\n", "family", "ms", "share", "launches", "MB",
           "GB/s", "% copy");
    for (size_t i = 0; i < k->n; i++) {
        const clformer_kernel_time *f = &k->f[i];
        const double gbps = family_gbps(f);
        printf("  %-12s %10.3f %6.1f%% %9.1f %10.2f %8.2f %6.1f%%", f->family, f->ms,
               k->total_ms > 0 ? 100.0 * f->ms / k->total_ms : 0.0,
               launches_of(k, f), (double)f->bytes * 1e-6, gbps,
               copy_gbps > 0 ? 100.0 * gbps / copy_gbps : 0.0);
        const double gf = family_gflops(f);
        if (gf > 0) printf("  %.2f GFLOP/s", gf);
        printf("\n");
    }
    const double non_gemm = k->total_ms - gemm_ms(k);
    printf("  %-12s %10.3f %7s %9.1f\n", "all kernels", k->total_ms, "", launches_per_rep(k));
    printf("  %-12s %10.3f  (wall clock minus kernel time: host work, transfers, gaps)\n",
           "other", k->wall_ms - k->total_ms);
    printf("  %-12s %10.3f  (%.1f%% of the %.3f ms %s)\n", "non-GEMM", non_gemm,
           k->wall_ms > 0 ? 100.0 * non_gemm / k->wall_ms : 0.0, k->wall_ms, per);
}

/* The kernels that take the most time, each with its family (a GEMM
 * provider's calls count as one kernel, "gemm"). */
static void print_top_kernels(const char *title, const kernel_times *k)
{
    if (k->n_kernels == 0) return;
    const size_t n = k->n_kernels < TOP_KERNELS ? k->n_kernels : TOP_KERNELS;
    printf("\n%s (%zu of %zu kernels)\n", title, n, k->n_kernels);
    printf("  %-34s %-12s %10s %7s %9s\n", "kernel", "family", "ms", "share", "launches");
    for (size_t i = 0; i < n; i++) {
        const clformer_kernel_time *t = &k->kernels[i].time;
        printf("  %-34s %-12s %10.3f %6.1f%% %9.1f", k->kernels[i].kernel, t->family, t->ms,
               k->total_ms > 0 ? 100.0 * t->ms / k->total_ms : 0.0,
               launches_of(k, t));
        const double gf = family_gflops(t);
        if (gf > 0) printf("  %.2f GFLOP/s", gf);
        printf("\n");
    }
}

static void print_mib(const char *what, size_t bytes)
{
    printf("  %-28s %10.2f MiB\n", what, (double)bytes / (1024.0 * 1024.0));
}

static void print_table(const bench *b, const clformer_device_info *dev)
{
    const clformer_config *c = &b->cfg;
    char layers[48];
    b->task->layers(c, layers, sizeof layers);
    printf("clformer bench: %s (d_model %d, %d heads, d_ff %d, %s, %s, vocab %zu%s), "
           "%zu parameters\n",
           b->preset, c->d_model, c->n_heads, c->d_ff, layers,
           c->norm_first ? "pre-norm" : "post-norm", b->vocab,
           c->share_all_embed ? " shared by all embeddings" : "", b->params);
    char gemm[192] = "CLBlast";
    if (strcmp(b->gemm_provider, "host") == 0) {
        char product[160];
        blas_kernels_describe(product, sizeof product);
        snprintf(gemm, sizeof gemm, "the host provider: %s", product);
    } else if (strcmp(b->gemm_provider, "tiled") == 0) {
        snprintf(gemm, sizeof gemm, "clformer's own kernel (the tiled provider)");
    }
    printf("device %s: %s (%s, %s), GEMM by %s\n", dev->selector, dev->name,
           clformer_device_type_name(dev->type), dev->platform, gemm);
    printf("batch %zu %s x len %zu tokens, dropout %.2g, label smoothing %.2g, "
           "%zu warm-up + %zu timed repetitions%s\n",
           b->B, b->task->rows, b->T, (double)c->dropout,
           (double)c->label_smoothing, b->warmup, b->steps,
           b->recompute ? ", layers recomputed in backward" : "");
    if (b->precision == CLFORMER_FP32)
        printf("precision fp32\n");
    else /* ops compute in fp32 containers; training keeps what backward reads in 16 bits */
        printf("precision %s (activations and weights rounded to %s%s; computed in fp32 "
               "containers, %s)\n",
               clformer_precision_name(b->precision), clformer_precision_name(b->precision),
               b->precision == CLFORMER_FP16 ? ", loss scaling" : "",
               b->recompute ? "nothing kept to store in 16 bits" : "kept for backward in 16 bits");

    printf("\ntraining (forward, loss, backward, clip, Adam)\n");
    printf("  %-28s %10.3f s   (%u programs built, %u from the disk cache)\n",
           "first step (compiles)", b->first_step_s, b->programs_first.builds,
           b->programs_first.disk_hits);
    printf("  %-28s %10.3f ms\n", "step", 1e3 * b->train_step_s);
    printf("  %-28s %10.1f target tokens/s (%zu per step)\n", "throughput",
           train_tokens_per_s(b), b->B * b->T);
    printf("  %-28s %10.4g GFLOP per step (matrix products, forward + backward)\n", "work",
           (double)b->train_flop * 1e-9);
    printf("  %-28s %10.2f GFLOP/s\n", "achieved", gflops(b->train_flop, b->train_step_s));
    printf("  %-28s %10.4f -> %.4f\n", "loss (first -> last)", b->loss_first, b->loss_last);
    printf("  %-28s %10s (CLFORMER_ATTENTION: %s)\n", "attention path", b->attention_path,
           clformer_attention_path_name(b->attention_choice));
    if (b->attention_tiles_how)
        printf("  %-28s %s (%s; CLFORMER_ATTENTION_TUNING)\n", "attention tiles",
               b->attention_tiles, b->attention_tiles_how);
    printf("  %-28s %10.1f per step (kernels and GEMM calls, profiled steps)\n", "launches",
           launches_per_rep(&b->train_k));

    b->task->print_decoding(b);
    printf("  %-28s %10.3f s\n", "first batch (compiles)", b->translate_first_s);
    printf("  %-28s %10.3f ms  (%.1f tokens generated, %zu decoder steps)\n", "batch",
           1e3 * b->translate_s, b->translate_tokens, b->translate_steps);
    printf("  %-28s %10.1f generated tokens/s\n", "throughput", translate_tokens_per_s(b));
    printf("  %-28s %10.4g GFLOP per batch\n", "work", (double)b->translate_flop * 1e-9);
    printf("  %-28s %10.2f GFLOP/s\n", "achieved", gflops(b->translate_flop, b->translate_s));

    print_kernels("kernels per training step", &b->train_k, "step", b->copy_gbps);
    print_top_kernels("slowest kernels per training step", &b->train_k);
    char title[64];
    snprintf(title, sizeof title, "kernels per %s batch", b->task->decoded);
    print_kernels(title, &b->translate_k, "batch", b->copy_gbps);
    bench_roofline_print("roofline per training step", b->train_k.f, b->train_k.n, &b->roofs);
    snprintf(title, sizeof title, "roofline per %s batch", b->task->decoded);
    bench_roofline_print(title, b->translate_k.f, b->translate_k.n, &b->roofs);

    printf("\ndevice memory\n");
    print_mib("parameters", b->memory.parameters);
    print_mib("gradients", b->memory.gradients);
    print_mib("optimizer (Adam m, v)", b->memory.optimizer);
    print_mib("activations", b->memory.activations);
    print_mib("decoding caches", b->memory.decoding);
    print_mib("total allocated by clformer", b->memory.total);
    printf("\nprograms: %u built, %u loaded from the disk cache, %u reused in memory\n",
           b->programs.builds, b->programs.disk_hits, b->programs.memory_hits);
}

/* ------------------------------------------------------------------------- */
/* The command                                                                */
/* ------------------------------------------------------------------------- */

/* Model options that replace the preset's (a recipe's shape, e.g. docs/RESULTS.md's
 * fairseq-like one); `g` records which were given. */
struct shape_options {
    long d_model, heads, d_ff, enc_layers, dec_layers;
    double dropout, attention_dropout, activation_dropout, label_smoothing;
    bool post_norm, share_all;
    struct {
        bool d_model, heads, d_ff, enc_layers, dec_layers, dropout, attention_dropout,
            activation_dropout, label_smoothing;
    } g;
};

static void apply_shape(const shape_options *sh, clformer_config *c)
{
    if (sh->g.d_model) c->d_model = (int)sh->d_model;
    if (sh->g.heads) c->n_heads = (int)sh->heads;
    if (sh->g.d_ff) c->d_ff = (int)sh->d_ff;
    if (sh->g.enc_layers) c->n_enc_layers = (int)sh->enc_layers;
    if (sh->g.dec_layers) c->n_dec_layers = (int)sh->dec_layers;
    if (sh->g.dropout) c->dropout = (float)sh->dropout;
    if (sh->g.attention_dropout) c->attention_dropout = (float)sh->attention_dropout;
    if (sh->g.activation_dropout) c->activation_dropout = (float)sh->activation_dropout;
    if (sh->g.label_smoothing) c->label_smoothing = (float)sh->label_smoothing;
    if (sh->post_norm) c->norm_first = false;
    if (sh->share_all) c->share_tgt_embed = c->share_all_embed = true;
}

/* The language-model presets' bench defaults where the command line is
 * silent: nanoGPT's batch for gpt-mini and gpt-char (their runs' 12 and 64
 * windows) and the GPT-2 figure's 8; Tiny Shakespeare's 65
 * characters, GPT-2's 50,257 tokens. llama-small: 8 windows of a small BPE's
 * 8,000 tokens (docs/PERFORMANCE.md's comparison); SmolLM-135M and
 * TinyLlama-1.1B: one window of their own vocabularies (49,152 and 32,000),
 * since at their 2,048-token context one window is already large. The
 * window is the preset's context. */
static const struct {
    const char *name;
    long batch, vocab;
} lm_bench_defaults[] = {{"gpt-mini", 12, 65},      {"gpt-char", 64, 65},
                         {"gpt2", 8, 50257},        {"llama-small", 8, 8000},
                         {"smollm-135m", 1, 49152}, {"tinyllama-1.1b", 1, 32000}};

/* What was given on the command line, for the language models' defaults. */
struct given_options {
    bool config, batch, len, vocab;
};

/* A language-model preset's model and bench shape (0 on success, else the exit code):
 * decoder-only, the preset's dropout unless --dropout says otherwise, the
 * context raised to a longer --len. */
static int configure_lm(bench *b, const given_options *g, long *batch, long *len, long *vocab,
                        const shape_options *sh)
{
    if (sh->g.enc_layers || sh->share_all) {
        cli_error("bench", "%s is decoder-only: remove --enc-layers and --share-all-embeddings",
                  b->preset);
        return EXIT_USAGE;
    }
    clformer_config_default(&b->cfg);
    if (clformer_config_lm_preset(b->preset, &b->cfg) != CLFORMER_OK) {
        cli_runtime_error("bench", "--config");
        return EXIT_USAGE;
    }
    for (size_t i = 0; i < sizeof lm_bench_defaults / sizeof lm_bench_defaults[0]; i++)
        if (!strcmp(lm_bench_defaults[i].name, b->preset)) {
            if (!g->batch) *batch = lm_bench_defaults[i].batch;
            if (!g->vocab) *vocab = lm_bench_defaults[i].vocab;
        }
    if (!g->len) *len = b->cfg.max_len;
    if (*len > b->cfg.max_len) b->cfg.max_len = (int)*len;
    return 0;
}

/* A translation preset's model: max_len raised for a long --len. */
static int configure_translation(bench *b, const given_options *g, long *batch, long *len,
                                 long *vocab, const shape_options *sh)
{
    (void)g, (void)batch, (void)vocab, (void)sh;
    clformer_config_default(&b->cfg);
    if (clformer_config_preset(b->preset, &b->cfg) != CLFORMER_OK) {
        cli_runtime_error("bench", "--config");
        return EXIT_USAGE;
    }
    b->cfg.max_len = *len < MAX_LEN ? MAX_LEN : (int)*len + 1; /* long --len: attention timings */
    return 0;
}

static clformer_batch pairs_batch(const bench *b, const batch_data *d)
{
    return (clformer_batch){b->B, b->T, b->T + 1, d->src, d->tgt};
}

/* a language model reads windows of T + 1 tokens: T inputs, T labels */
static clformer_batch windows_batch(const bench *b, const batch_data *d)
{
    return (clformer_batch){b->B, 0, b->T + 1, NULL, d->tgt};
}

/* translation: the first batch's sources; generation: its windows' first tokens */
static const int32_t *sources(const batch_data *d) { return d->src; }
static const int32_t *windows(const batch_data *d) { return d->tgt; }

static clformer_status keep_model(clformer_model *m)
{
    (void)m;
    return CLFORMER_OK;
}

static void encoder_decoder_layers(const clformer_config *c, char *buf, size_t cap)
{
    snprintf(buf, cap, "%d+%d layers", c->n_enc_layers, c->n_dec_layers);
}

static void decoder_layers(const clformer_config *c, char *buf, size_t cap)
{
    snprintf(buf, cap, "%d decoder-only layers", c->n_dec_layers);
}

static void print_translation(const bench *b)
{
    printf("\ntranslation (greedy, %zu tokens per sentence: <eos> ruled out)\n", b->T);
}

static void print_generation(const bench *b)
{
    printf("\ngeneration (greedy, %zu rows, each a 1-token prompt and %zu new tokens)\n", b->B,
           b->T - 1);
}

static const bench_task bench_translation = {
    "translate", clformer_config_presets, "tiny",
    "a translation preset (tiny, small, base) or --task lm", "translate", "translated", "sentences", 1, configure_translation,
    pairs_batch, sources, suppress_eos, translate_once, encoder_decoder_layers,
    print_translation,
};

static const bench_task bench_lm = {
    "lm", clformer_config_lm_presets, "gpt-mini",
    "a language-model preset (clformer presets lists them)", "generate", "generated", "windows", 0, configure_lm,
    windows_batch, windows, keep_model, generate_once, decoder_layers,
    print_generation,
};

static const bench_task *const bench_tasks[] = {&bench_translation, &bench_lm};

/* The task --task names (NULL: none given). */
static const bench_task *task_named(const char *name)
{
    for (size_t i = 0; name && i < sizeof bench_tasks / sizeof *bench_tasks; i++)
        if (!strcmp(name, bench_tasks[i]->name)) return bench_tasks[i];
    return NULL;
}

/* The task whose presets hold `config` (one of --config's choices: some task's). */
static const bench_task *preset_task(const char *config)
{
    for (size_t i = 0; i < sizeof bench_tasks / sizeof *bench_tasks; i++)
        if (cli_is_one_of(config, bench_tasks[i]->presets())) return bench_tasks[i];
    return bench_tasks[0];
}

/* The preset's task, which --task, when given, must be: --task alone takes
 * the task's first preset (0, else the exit code). */
static int choose_task(const char *task, const char **config, const given_options *g,
                       const bench_task **chosen)
{
    const bench_task *named = task_named(task);
    if (named && !g->config) *config = named->preset;
    *chosen = preset_task(*config);
    if (named && named != *chosen) {
        cli_error("bench", "--task %s does not take --config %s; use %s", task, *config,
                  named->use);
        return EXIT_USAGE;
    }
    return 0;
}

int cmd_bench(int argc, char **argv)
{
    const char *config = "tiny", *task = NULL; /* --task: the preset's */
    const char *presets[16] = {0};
    size_t np = 0;
    for (const char *const *p = clformer_config_presets(); *p && np < 7; p++) presets[np++] = *p;
    for (const char *const *p = clformer_config_lm_presets(); *p && np < 15; p++) presets[np++] = *p;
    char preset_choices[160];
    cli_choices(preset_choices, sizeof preset_choices, presets);
    given_options g = {0};
    long batch = 32, len = 32, steps = 5, warmup = 2, vocab = 8000, seed = 0;
    bool json = false, quick = false, recompute = false, remeasure_roofs = false;
    const char *precision = "fp32";
    shape_options sh = {0};
    const cli_option options[] = {
        {"--config", CLI_CHOICE, &config, NULL, "model preset (tiny; --task lm: gpt-mini; clformer presets lists them)", 0, 0, preset_choices, &g.config},
        {"--task", CLI_CHOICE, &task, NULL, "translate: an encoder-decoder (default); lm: a decoder-only language model (the gpt and llama presets)", 0, 0, "translate|lm"},
        {"--batch", CLI_INT, &batch, "B", "sentences or windows per batch (32; lm: the preset's, below)", 1, 65536, NULL, &g.batch},
        {"--len", CLI_INT, &len, "T", "tokens per sentence, <sos> and <eos> included (32); lm: tokens per window (the context)", 3,
         LONGEST_LEN, NULL, &g.len},
        {"--steps", CLI_INT, &steps, "N", "timed repetitions (5)", 1, 1000000},
        {"--warmup", CLI_INT, &warmup, "N", "untimed repetitions after the first (2)", 0, 1000000},
        {"--vocab", CLI_INT, &vocab, "V", "source and target vocabulary size (8000; lm: the preset's, below)", 5,
         1 << 20, NULL, &g.vocab},
        {"--seed", CLI_INT, &seed, "N", "seed of the weights, dropout and data (0)", 0, 1e15},
        {"--d-model", CLI_INT, &sh.d_model, "D", "model width (the preset's)", 8, 65536, NULL, &sh.g.d_model},
        {"--heads", CLI_INT, &sh.heads, "H", "attention heads (the preset's)", 1, 1024, NULL, &sh.g.heads},
        {"--d-ff", CLI_INT, &sh.d_ff, "F", "feed-forward width (the preset's)", 1, 1 << 20, NULL, &sh.g.d_ff},
        {"--enc-layers", CLI_INT, &sh.enc_layers, "N", "encoder layers (the preset's)", 1, 1024, NULL, &sh.g.enc_layers},
        {"--dec-layers", CLI_INT, &sh.dec_layers, "N", "decoder layers (the preset's)", 1, 1024, NULL, &sh.g.dec_layers},
        {"--post-norm", CLI_FLAG, &sh.post_norm, NULL, "post-norm blocks instead of pre-norm"},
        {"--dropout", CLI_DOUBLE, &sh.dropout, "P", "dropout (0.1)", 0, 0.99, NULL, &sh.g.dropout},
        {"--attention-dropout", CLI_DOUBLE, &sh.attention_dropout, "P", "dropout of the attention probabilities (--dropout's)", 0, 0.99, NULL, &sh.g.attention_dropout},
        {"--activation-dropout", CLI_DOUBLE, &sh.activation_dropout, "P", "dropout after the feed-forward activation (--dropout's)", 0, 0.99, NULL, &sh.g.activation_dropout},
        {"--label-smoothing", CLI_DOUBLE, &sh.label_smoothing, "E", "label smoothing (0)", 0, 0.99, NULL, &sh.g.label_smoothing},
        {"--share-all-embeddings", CLI_FLAG, &sh.share_all, NULL, "one matrix for the source and target embeddings and the generator"},
        {"--recompute", CLI_FLAG, &recompute, NULL,
         "keep only each layer's output; recompute the rest in backward (less memory)"},
        PRECISION_CLI_OPTION(precision),
        {"--json", CLI_FLAG, &json, NULL, "print one JSON object instead of the table"},
        {"--quick", CLI_FLAG, &quick, NULL,
         "smoke test for simulators: a micro model, timed runs also profiled"},
        {"--remeasure-roofs", CLI_FLAG, &remeasure_roofs, NULL,
         "measure the FMA peak and copy bandwidth again (the cache keeps the higher)"},
    };
    const cli_spec spec = {
        "bench",
        "Measure training and translation (or, for a language model, generation) speed of\n"
        "a preset model on the device: tokens/s, launches per step,\n"
        "achieved GFLOP/s, per kernel family its time (OpenCL profiling), bytes moved and\n"
        "GB/s against the device's copy bandwidth (a roofline table), device memory and\n"
        "the first step's compile time. Data are random tokens (fixed seed).",
        "clformer bench [--config PRESET] [--batch B] [--len T] [--json] [options]",
        "Presets: 'clformer presets' lists their sizes; the rest is max_len 256, pre-norm,\n"
        "ReLU, dropout 0.1, Adam with clipping 1.0 (max_len is --len + 1 for a longer --len).\n"
        "--d-model, --heads, --d-ff, --enc-layers, --dec-layers, --post-norm, --dropout,\n"
        "--attention-dropout, --activation-dropout, --label-smoothing and\n"
        "--share-all-embeddings replace the preset's values, as in\n"
        "clformer train (e.g. the fairseq-like recipe of docs/RESULTS.md; --quick\n"
        "overrides them). CLFORMER_ATTENTION picks the attention path (fused, unfused,\n"
        "gemm-backward or auto: docs/ENVIRONMENT.md); the report says which path the\n"
        "training steps took (JSON: attention_path) and, where they ran the tiled\n"
        "kernels of GPUs, their tiles (attention_tiles; CLFORMER_ATTENTION_TUNING).\n"
        "Language models (the gpt and llama presets, or --task lm for gpt-mini): the\n"
        "preset's shape and dropout (clformer train --task lm's), windows of --len tokens\n"
        "(default the context: 64, 256, 1024 for gpt-mini, gpt-char, gpt2; 256, 2048, 2048\n"
        "for llama-small, smollm-135m, tinyllama-1.1b), --batch 12, 64, 8; 8, 1, 1 and\n"
        "--vocab 65, 65, 50257; 8000, 49152, 32000 by default; a training step takes B\n"
        "windows of T + 1 tokens and counts B*T,\n"
        "as nanoGPT counts; generation prompts each of B rows with one token and continues\n"
        "it greedily by T - 1 (JSON keys generate_... instead of translate_...).\n"
        "Counting: a training step takes B pairs of T tokens and counts B*T target tokens;\n"
        "translation decodes B sources greedily for T tokens each (<eos> is ruled out so\n"
        "the length is fixed) and counts the tokens generated. FLOP are the matrix\n"
        "products' 2*m*n*k from the layer shapes (attention's QK^T and PV included);\n"
        "other kernels are not counted.\n"
        "Roofline: a family's bytes are its launches' ideal traffic (every input element\n"
        "read once, every output written once, from the shapes); GB/s is bytes over its\n"
        "time, '% copy' that against the copy bandwidth (the best of a few 256 MiB\n"
        "buffer copies, read + write counted). non-GEMM is every other family's time\n"
        "and its share of the profiled step's wall clock. The roofline tables set each\n"
        "family's FLOP/s (matrix products) and GB/s against the device's FMA peak (a\n"
        "kernel of independent fma() chains) and copy bandwidth, both measured once per\n"
        "device and driver and kept in the cache directory (CLFORMER_CACHE_DIR); '% of\n"
        "roof' is the time the nearer roof allows over the time taken.\n"
        "JSON keys: config, device, gemm_provider, batch, len, params, train_tokens_per_s,\n"
        "train_step_ms, train_gflops, flop_per_step, first_step_s, programs_built,\n"
        "translate_tokens_per_s, translate_batch_ms, copy_bandwidth_gbps, per family\n"
        "per step kernel_ms, kernel_launches, kernel_bytes, kernel_gbps,\n"
        "launches_per_step (all families, a GEMM call counted once),\n"
        "kernel_copy_fraction, kernels [{kernel, family, ms, launches, gflops}] per\n"
        "kernel of cl/ (largest time first; the table prints the slowest), then\n"
        "gemm_kernel_gflops, non_gemm_kernel_ms,\n"
        "non_gemm_step_fraction, memory {...: bytes}, roofline {fma_gflops, copy_gbps,\n"
        "train and translate {family: {gflops, peak_fraction, gbps, copy_fraction,\n"
        "flop_per_byte, bound, roof_fraction, ...}}}, and more.\n"
        "--quick replaces the preset by d_model 16, 2 heads (sharing 1 key/value head where\n"
        "the preset groups them), d_ff 32, 1+1 layers, vocab 32,\n"
        "and profiles the timed repetitions instead of running more: a check that the\n"
        "command works on a simulator, not a measurement.\n"
        "tools/reference/bench_torch.py --clformer build/clformer runs PyTorch on the same settings.\n"
        "The device is CLFORMER_DEVICE's choice (see clformer devices).",
        options, sizeof options / sizeof options[0], NULL, 0, NULL};
    cli_result r = cli_parse(&spec, argc, argv);
    if (r != CLI_OK) return r == CLI_HELP ? 0 : EXIT_USAGE;
    bench b = {0};
    int bad = choose_task(task, &config, &g, &b.task);
    if (bad) return bad;
    b.preset = config;
    if ((bad = b.task->configure(&b, &g, &batch, &len, &vocab, &sh))) return bad;
    b.B = (size_t)batch;
    b.T = (size_t)len;
    b.steps = (size_t)steps;
    b.warmup = (size_t)warmup;
    b.vocab = (size_t)vocab;
    b.seed = (uint64_t)seed;
    apply_shape(&sh, &b.cfg);
    b.quick = quick;
    b.remeasure_roofs = remeasure_roofs;
    b.recompute = recompute;
    clformer_precision_parse(precision, &b.precision); /* one of the choices */
    if (quick) {
        /* Oclgrind runs a tiny training step in minutes; this one in seconds */
        b.cfg.d_model = 16;
        /* a preset with grouped-query attention keeps it: 2 heads share 1 */
        const bool grouped = b.cfg.n_kv_heads > 0 && b.cfg.n_kv_heads < b.cfg.n_heads;
        b.cfg.n_heads = 2;
        b.cfg.n_kv_heads = grouped ? 1 : 0;
        b.cfg.d_ff = 32;
        b.cfg.n_enc_layers = b.task->sources; /* one encoder layer, or none */
        b.cfg.n_dec_layers = 1;
        b.vocab = QUICK_VOCAB;
    }
    b.cfg.src_vocab = (int)b.vocab * b.task->sources;
    b.cfg.tgt_vocab = (int)b.vocab;
    verbose = isatty(STDERR_FILENO);

    batch_data data[N_BATCHES] = {{0}};
    int rc = 1;
    clformer_context *ctx = NULL;
    if (!make_batches(&b, data)) {
        cli_error("bench", "out of host memory for %zu x %zu token batches", b.B, b.T);
    } else if (open_profiling_context(&ctx) != CLFORMER_OK) {
        cli_runtime_error("bench", "opening the device");
    } else if (measure(ctx, &b, data) != CLFORMER_OK) {
        cli_runtime_error("bench", b.preset);
    } else if (json) {
        rc = print_json(&b, clformer_context_device(ctx));
    } else {
        print_table(&b, clformer_context_device(ctx));
        rc = 0;
    }
    clformer_context_free(ctx);
    for (size_t k = 0; k < N_BATCHES; k++) {
        free(data[k].src);
        free(data[k].tgt);
    }
    return rc;
}
