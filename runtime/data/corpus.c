/*
 * Parallel corpus loading and encoding. A file is read whole, validated,
 * and split in place (each '\n' becomes a NUL), so the text costs its file
 * size plus one pointer per line; encoding is two passes (lengths, then ids)
 * into one exactly-sized int32 array.
 */
#include "corpus.h"
#include "fileio.h"
#include "status.h"
#include "text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What bad bytes in a corpus file are told. */
#define CORPUS_RULE "a corpus must be UTF-8 text"

static clformer_status oom(const char *what)
{
    return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory %s", what);
}

static bool has_token(const char *line)
{
    size_t pos = 0, start, len;
    return cf_next_token(line, strlen(line), &pos, &start, &len);
}

/* Builds the text from two buffers it takes ownership of (NUL-terminated at
 * size, as cf_read_file makes them). */
static clformer_status text_from_buffers(const char *src_name, char *src_buf, size_t src_size,
                                         const char *tgt_name, char *tgt_buf, size_t tgt_size,
                                         cf_parallel_text **out)
{
    *out = NULL;
    char **src_lines = NULL, **tgt_lines = NULL;
    cf_parallel_text *t = calloc(1, sizeof *t);
    clformer_status st = CLFORMER_OK;
    if (!t) {
        free(src_buf);
        free(tgt_buf);
        return oom("loading a corpus");
    }
    t->storage[0] = src_buf;
    t->storage[1] = tgt_buf;
    t->src_name = strdup(src_name);
    t->tgt_name = strdup(tgt_name);
    if (!t->src_name || !t->tgt_name) {
        st = oom("loading a corpus");
        goto fail;
    }

    /* a byte order mark is not part of the first sentence */
    char *src = src_buf, *tgt = tgt_buf;
    cf_skip_bom(&src, &src_size);
    cf_skip_bom(&tgt, &tgt_size);

    size_t n_src = cf_count_lines(src, src_size), n_tgt = cf_count_lines(tgt, tgt_size);
    if (n_src != n_tgt) {
        st = cf_fail(CLFORMER_ERR_FORMAT, "'%s' has %zu lines but '%s' has %zu: a parallel "
                     "corpus holds one sentence per line, the same number of lines on both sides",
                     src_name, n_src, tgt_name, n_tgt);
        goto fail;
    }
    if (n_src == 0) {
        st = cf_fail(CLFORMER_ERR_FORMAT, "'%s' and '%s' are empty: a corpus needs at least one "
                     "sentence pair", src_name, tgt_name);
        goto fail;
    }
    if ((st = cf_check_text(src_name, src, src_size, CORPUS_RULE)) != CLFORMER_OK) goto fail;
    if ((st = cf_check_text(tgt_name, tgt, tgt_size, CORPUS_RULE)) != CLFORMER_OK) goto fail;

    src_lines = malloc(n_src * sizeof *src_lines);
    tgt_lines = malloc(n_src * sizeof *tgt_lines);
    t->line = malloc(n_src * sizeof *t->line);
    if (!src_lines || !tgt_lines || !t->line) {
        st = oom("loading a corpus");
        goto fail;
    }
    cf_split_lines(src, src_size, src_lines, n_src);
    cf_split_lines(tgt, tgt_size, tgt_lines, n_src);

    /* keep the pairs with a token on both sides, compacting in place */
    t->n_lines = n_src;
    size_t kept = 0;
    for (size_t i = 0; i < n_src; i++) {
        if (!has_token(src_lines[i]) || !has_token(tgt_lines[i])) {
            t->n_empty++;
            continue;
        }
        src_lines[kept] = src_lines[i];
        tgt_lines[kept] = tgt_lines[i];
        t->line[kept] = i + 1;
        kept++;
    }
    if (kept == 0) {
        st = cf_fail(CLFORMER_ERR_FORMAT, "'%s' and '%s': none of the %zu lines holds a sentence "
                     "pair (each is empty on one side or both)", src_name, tgt_name, n_src);
        goto fail;
    }
    t->n = kept;
    t->src = (const char **)src_lines;
    t->tgt = (const char **)tgt_lines;
    *out = t;
    return CLFORMER_OK;

fail:
    free(src_lines);
    free(tgt_lines);
    cf_parallel_text_free(t);
    return st;
}

clformer_status cf_parallel_text_load(const char *src_path, const char *tgt_path,
                                      cf_parallel_text **out)
{
    *out = NULL;
    char *src, *tgt;
    size_t src_size, tgt_size;
    CF_TRY(cf_read_text_file(src_path, &src, &src_size));
    clformer_status st = cf_read_text_file(tgt_path, &tgt, &tgt_size);
    if (st != CLFORMER_OK) {
        free(src);
        return st;
    }
    return text_from_buffers(src_path, src, src_size, tgt_path, tgt, tgt_size, out);
}

/* Joins lines with '\n' into one malloc'd buffer, the shape of a file. */
static clformer_status join_lines(const char *const *lines, size_t n, const char *name,
                                  char **buf, size_t *size)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (strchr(lines[i], '\n'))
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "%s: line %zu contains a newline; "
                           "give one sentence per line", name, i + 1);
        total += strlen(lines[i]) + 1;
    }
    char *b = malloc(total + 1), *p = b;
    if (!b) return oom("copying sentences");
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(lines[i]);
        memcpy(p, lines[i], len);
        p += len;
        *p++ = '\n';
    }
    *p = '\0';
    *buf = b;
    *size = total;
    return CLFORMER_OK;
}

clformer_status cf_parallel_text_from_lines(const char *const *src, const char *const *tgt,
                                            size_t n, const char *src_name,
                                            const char *tgt_name, cf_parallel_text **out)
{
    *out = NULL;
    char *src_buf, *tgt_buf;
    size_t src_size, tgt_size;
    CF_TRY(join_lines(src, n, src_name, &src_buf, &src_size));
    clformer_status st = join_lines(tgt, n, tgt_name, &tgt_buf, &tgt_size);
    if (st != CLFORMER_OK) {
        free(src_buf);
        return st;
    }
    return text_from_buffers(src_name, src_buf, src_size, tgt_name, tgt_buf, tgt_size, out);
}

void cf_parallel_text_free(cf_parallel_text *text)
{
    if (!text) return;
    free((void *)text->src);
    free((void *)text->tgt);
    free(text->line);
    free(text->src_name);
    free(text->tgt_name);
    free(text->storage[0]);
    free(text->storage[1]);
    free(text);
}

/* --- encoding ------------------------------------------------------------- */

clformer_status cf_corpus_encode(const cf_parallel_text *text, const cf_vocab *src_vocab,
                                 const cf_vocab *tgt_vocab, int max_len, cf_corpus **out)
{
    *out = NULL;
    if (max_len < 0 || (max_len > 0 && max_len < 3))
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "max_len is %d; it must be 0 (no limit) or "
                       "at least 3 (<sos>, one word, <eos>)", max_len);

    /* pass 1: lengths decide which pairs are kept and size the arrays */
    unsigned char *keep = malloc(text->n);
    cf_corpus *c = calloc(1, sizeof *c);
    if (!keep || !c) {
        free(keep);
        free(c);
        return oom("encoding a corpus");
    }
    size_t total = 0, longest_src = 0, longest_tgt = 0;
    for (size_t i = 0; i < text->n; i++) {
        size_t ls = cf_vocab_encode(src_vocab, text->src[i], strlen(text->src[i]), true, NULL, 0,
                                    NULL);
        size_t lt = cf_vocab_encode(tgt_vocab, text->tgt[i], strlen(text->tgt[i]), true, NULL, 0,
                                    NULL);
        if (ls > longest_src) longest_src = ls;
        if (lt > longest_tgt) longest_tgt = lt;
        keep[i] = max_len == 0 || (ls <= (size_t)max_len && lt <= (size_t)max_len);
        if (keep[i]) {
            c->n++;
            total += ls + lt;
        } else {
            c->n_too_long++;
        }
    }
    if (c->n == 0) {
        free(keep);
        free(c);
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "'%s'/'%s': every one of the %zu sentence "
                       "pairs is longer than max_len %d tokens (longest: source %zu, target %zu, "
                       "<sos> and <eos> included); raise max_len", text->src_name, text->tgt_name,
                       text->n, max_len, longest_src, longest_tgt);
    }

    /* pass 2: the ids */
    c->tokens = malloc(total * sizeof *c->tokens);
    c->offset = malloc((2 * c->n + 1) * sizeof *c->offset);
    c->line = malloc(c->n * sizeof *c->line);
    if (!c->tokens || !c->offset || !c->line) {
        free(keep);
        cf_corpus_free(c);
        return oom("encoding a corpus");
    }
    c->max_len = max_len;
    c->n_lines = text->n_lines;
    c->n_empty = text->n_empty;
    size_t at = 0, k = 0;
    for (size_t i = 0; i < text->n; i++) {
        if (!keep[i]) continue;
        size_t unk_s, unk_t;
        c->offset[2 * k] = at;
        at += cf_vocab_encode(src_vocab, text->src[i], strlen(text->src[i]), true, c->tokens + at,
                              total - at, &unk_s);
        c->offset[2 * k + 1] = at;
        at += cf_vocab_encode(tgt_vocab, text->tgt[i], strlen(text->tgt[i]), true, c->tokens + at,
                              total - at, &unk_t);
        int ls = (int)(c->offset[2 * k + 1] - c->offset[2 * k]);
        int lt = (int)(at - c->offset[2 * k + 1]);
        if (ls > c->max_src_len) c->max_src_len = ls;
        if (lt > c->max_tgt_len) c->max_tgt_len = lt;
        c->n_src_tokens += (size_t)ls;
        c->n_tgt_tokens += (size_t)lt;
        c->n_src_unk += unk_s;
        c->n_tgt_unk += unk_t;
        c->line[k] = text->line[i];
        k++;
    }
    c->offset[2 * c->n] = at;
    free(keep);
    *out = c;
    return CLFORMER_OK;
}

clformer_status cf_corpus_load(const char *src_path, const char *tgt_path,
                               const cf_vocab *src_vocab, const cf_vocab *tgt_vocab,
                               int max_len, cf_corpus **out)
{
    *out = NULL;
    cf_parallel_text *text;
    CF_TRY(cf_parallel_text_load(src_path, tgt_path, &text));
    clformer_status st = cf_corpus_encode(text, src_vocab, tgt_vocab, max_len, out);
    cf_parallel_text_free(text);
    return st;
}

void cf_corpus_free(cf_corpus *c)
{
    if (!c) return;
    free(c->tokens);
    free(c->offset);
    free(c->line);
    free(c);
}

void cf_corpus_summary(const cf_corpus *c, char *buf, size_t size)
{
    int n = snprintf(buf, size, "%zu sentence pairs", c->n);
    if (c->n_too_long && n >= 0 && (size_t)n < size)
        n += snprintf(buf + n, size - (size_t)n, ", %zu skipped (longer than max_len %d)",
                      c->n_too_long, c->max_len);
    if (c->n_empty && n >= 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, ", %zu skipped (empty line)", c->n_empty);
}
