/* A model on the device translating files line by line (see translator.h). */
#include "translator.h"
#include "context_open.h"
#include "progress.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

clformer_decode_options decode_flags_options(const decode_flags *f)
{
    clformer_decode_options o;
    clformer_decode_options_default(&o);
    o.beam = (int)f->beam;
    o.max_len = (int)f->max_len;
    o.length_penalty = (float)f->length_penalty;
    return o;
}

bool translator_model_readable(const char *command, const char *model_path)
{
    if (access(model_path, R_OK) == 0) return true;
    cli_error(command, "cannot read the model '%s': %s", model_path, strerror(errno));
    return false;
}

bool translator_open(const char *command, const char *model_path, translator *t)
{
    memset(t, 0, sizeof *t);
    /* a missing file is the user's typo: say so before waking a device */
    if (!translator_model_readable(command, model_path)) return false;
    if (cli_context_create(NULL, &t->ctx) != CLFORMER_OK) {
        cli_runtime_error(command, "opening the device");
        return false;
    }
    if (clformer_model_load(t->ctx, model_path, &t->model) != CLFORMER_OK) {
        cli_runtime_error(command, "loading the model");
        translator_close(t);
        return false;
    }
    /* a language model has no source side: name what it takes instead */
    if (clformer_model_check_task(t->model, CLFORMER_TASK_TRANSLATION, "translating") !=
        CLFORMER_OK) {
        cli_runtime_error(command, model_path);
        translator_close(t);
        return false;
    }
    if (clformer_session_create(t->model, &t->session) != CLFORMER_OK) {
        cli_runtime_error(command, "making a session on the model");
        translator_close(t);
        return false;
    }
    if (clformer_vocab_from_model(t->model, CLFORMER_SIDE_SOURCE, &t->src) != CLFORMER_OK ||
        clformer_vocab_from_model(t->model, CLFORMER_SIDE_TARGET, &t->tgt) != CLFORMER_OK) {
        cli_runtime_error(command, model_path);
        translator_close(t);
        return false;
    }
    return true;
}

void translator_close(translator *t)
{
    clformer_vocab_free(t->src);
    clformer_vocab_free(t->tgt);
    clformer_session_free(t->session); /* before its model */
    clformer_model_free(t->model);
    clformer_context_free(t->ctx);
    memset(t, 0, sizeof *t);
}

clformer_status session_set_precision_name(clformer_session *s, const char *precision)
{
    clformer_precision p = CLFORMER_FP32;
    const clformer_status st = clformer_precision_parse(precision ? precision : "fp32", &p);
    return st != CLFORMER_OK ? st : clformer_session_set_precision(s, p);
}

bool translator_set_precision(const char *command, translator *t, const char *precision)
{
    if (session_set_precision_name(t->session, precision) != CLFORMER_OK) {
        cli_runtime_error(command, "--precision");
        return false;
    }
    return true;
}

const char *translator_device(const translator *t)
{
    return clformer_context_device(t->ctx)->name;
}

typedef struct {
    double start;
} progress_state;

/* On a terminal only: "\r" and "erase to the end of the line" redraw it. */
static void show_progress(size_t done, size_t total, void *user)
{
    const progress_state *p = user;
    char line[160];
    progress_line(line, sizeof line, "translating", "sentences", done, total,
                  cli_now_s() - p->start);
    fprintf(stderr, "\r\033[K%s", line);
    fflush(stderr);
}

clformer_status translator_run(translator *t, const char *const *lines, size_t n,
                               const decode_flags *f, char **outputs, translate_stats *stats)
{
    memset(stats, 0, sizeof *stats);
    stats->lines = n;
    for (size_t i = 0; i < n; i++) stats->sentences += clformer_count_tokens(lines[i]) > 0;
    const clformer_decode_options o = decode_flags_options(f);
    progress_state ps = {cli_now_s()};
    const bool tty = isatty(STDERR_FILENO) && stats->sentences > 0;
    clformer_status st = clformer_translate_sentences(t->session, lines, n, &o, (size_t)f->batch_size,
                                                      outputs, &stats->truncated,
                                                      tty ? show_progress : NULL, &ps);
    stats->seconds = cli_now_s() - ps.start;
    if (tty) fputc('\n', stderr);
    for (size_t i = 0; i < n && st == CLFORMER_OK; i++)
        stats->tokens += clformer_count_tokens(outputs[i]);
    return st;
}

void translator_report(const char *command, const translator *t, const translate_stats *s)
{
    const int max_len = clformer_model_config(t->model)->max_len;
    if (s->truncated)
        fprintf(stderr, "clformer %s: note: %zu source sentence%s longer than the model's "
                "max_len (%d tokens with <sos> and <eos>) %s cut to fit\n", command,
                s->truncated, s->truncated == 1 ? "" : "s", max_len,
                s->truncated == 1 ? "was" : "were");
    fprintf(stderr, "clformer %s: %zu sentence%s (%zu line%s), %zu tokens in %.2f s "
            "(%.1f tokens/s) on %s\n", command, s->sentences, s->sentences == 1 ? "" : "s",
            s->lines, s->lines == 1 ? "" : "s", s->tokens, s->seconds,
            s->seconds > 0 ? (double)s->tokens / s->seconds : 0.0, translator_device(t));
}
