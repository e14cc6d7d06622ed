/* A language model's text <-> ids under its tokenizer (lm_codec.h). */
#include "lm_codec.h"
#include "fileio.h"
#include "lm_text.h"
#include "status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* --- a growing byte or id buffer ------------------------------------------ */

static clformer_status reserve(void **p, size_t *cap, size_t want, size_t elem)
{
    if (want <= *cap) return CLFORMER_OK;
    size_t c = *cap ? *cap : 256;
    while (c < want) c *= 2;
    void *grown = realloc(*p, c * elem);
    if (!grown) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    *p = grown;
    *cap = c;
    return CLFORMER_OK;
}

/* --- SentencePiece: a text as lines ---------------------------------------- */

static clformer_status spm_encode(const cf_spm *spm, const char *text, size_t len,
                                  int32_t **ids, size_t *n, size_t *unknown)
{
    int32_t *out = NULL;
    size_t m = 0, cap = 0, unk = 0;
    clformer_status st = CLFORMER_OK;
    for (size_t at = 0; at < len && st == CLFORMER_OK;) {
        const char *nl = memchr(text + at, '\n', len - at);
        const size_t end = nl ? (size_t)(nl - text) : len;
        size_t count = 0, u = 0;
        st = cf_spm_encode(spm, text + at, end - at, false, NULL, 0, &count, NULL);
        if (st == CLFORMER_OK) st = reserve((void **)&out, &cap, m + count + 1, sizeof *out);
        if (st == CLFORMER_OK)
            st = cf_spm_encode(spm, text + at, end - at, false, out + m, count, &count, &u);
        m += count, unk += u;
        if (nl && st == CLFORMER_OK) out[m++] = CF_EOS; /* the newline */
        at = end + (nl != NULL);
    }
    if (st == CLFORMER_OK && !out) st = reserve((void **)&out, &cap, 1, sizeof *out);
    if (st != CLFORMER_OK) {
        free(out);
        return st;
    }
    *ids = out, *n = m, *unknown = unk;
    return CLFORMER_OK;
}

/* A piece's text: "▁" is a space, "<0xNN>" that byte, the specials nothing
 * (<unk> SentencePiece's " ⁇ "). Appends to out (room: 3 x the piece). */
static size_t spm_piece_text(const char *piece, int32_t id, char *out)
{
    if (id == CF_UNK) return (size_t)sprintf(out, " \xE2\x81\x87 ");
    if (id < CF_N_SPECIALS) return 0;
    if (!strncmp(piece, "<0x", 3)) return cf_lm_token_text(piece, out);
    size_t k = 0;
    for (const char *p = piece; *p;) {
        if (!strncmp(p, "\xE2\x96\x81", 3)) out[k++] = ' ', p += 3;
        else out[k++] = *p++;
    }
    return k;
}

/* --- encode / decode -------------------------------------------------------- */

/* A Hugging Face tokenizer's text, its special tokens left out; ids past
 * its own (a vocabulary padded up) stand for nothing. */
static clformer_status hf_decode(const cf_lm_codec *c, const int32_t *ids, size_t n, char **text,
                                 size_t *len)
{
    int32_t *kept = malloc((n ? n : 1) * sizeof *kept);
    if (!kept) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    size_t k = 0, got = 0;
    for (size_t i = 0; i < n; i++)
        if (ids[i] < cf_hf_tokenizer_size(c->hf)) kept[k++] = ids[i];
    clformer_status st = cf_hf_tokenizer_decode(c->hf, kept, k, true, text, &got);
    free(kept);
    if (st == CLFORMER_OK && len) *len = got;
    return st;
}

clformer_status cf_lm_codec_encode(const cf_lm_codec *c, const char *text, size_t len,
                                   int32_t **ids, size_t *n, size_t *unknown)
{
    *unknown = 0;
    if (c->hf) return cf_hf_tokenizer_encode(c->hf, text, len, true, ids, n);
    if (c->bpe) return cf_bpe_encode(c->bpe, text, len, ids, n);
    if (c->spm) return spm_encode(c->spm, text, len, ids, n, unknown);
    return cf_lm_encode(c->vocab, text, len, ids, n, unknown);
}

clformer_status cf_lm_codec_decode(const cf_lm_codec *c, const int32_t *ids, size_t n,
                                   char **text, size_t *len)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= c->size)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "id %d at %zu is outside the vocabulary of %d tokens", (int)ids[i], i,
                           (int)c->size);
    if (c->hf) return hf_decode(c, ids, n, text, len);
    if (c->bpe) { /* ids past the BPE's (a vocabulary padded up) stand for nothing */
        int32_t *kept = malloc((n ? n : 1) * sizeof *kept);
        if (!kept) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (ids[i] < cf_bpe_vocab_size(c->bpe)) kept[k++] = ids[i];
        size_t got = 0;
        clformer_status st = cf_bpe_decode(c->bpe, kept, k, text, &got);
        free(kept);
        if (st == CLFORMER_OK && len) *len = got;
        return st;
    }
    size_t total = 1;
    for (size_t i = 0; i < n; i++) {
        const char *t = c->spm ? cf_spm_piece(c->spm, ids[i]) : cf_vocab_token(c->vocab, ids[i]);
        total += 3 * strlen(t ? t : "") + 8;
    }
    char *out = malloc(total);
    if (!out) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        if (!c->spm) {
            at += cf_lm_token_text(cf_vocab_token(c->vocab, ids[i]), out + at);
        } else if (ids[i] == CF_EOS) {
            out[at++] = '\n';
        } else {
            const size_t from = at;
            at += spm_piece_text(cf_spm_piece(c->spm, ids[i]), ids[i], out + at);
            /* the space SentencePiece puts before a line's first word */
            if ((i == 0 || ids[i - 1] == CF_EOS) && at > from && out[from] == ' ')
                memmove(out + from, out + from + 1, --at - from);
        }
    }
    out[at] = '\0';
    *text = out;
    if (len) *len = at;
    return CLFORMER_OK;
}

/* --- files in chunks ----------------------------------------------------- */

static bool ascii_word_char(unsigned char c) { return c >= 0x21 && c <= 0x7E; }

/* The last place in s[0..n) where the text may be cut without changing its
 * tokens, 0 for none; s[0..from) is known to hold none (so a text without
 * a newline costs one look per byte, not one per byte per chunk). Always after a newline: SentencePiece's lines and the
 * characters of a char/byte vocabulary are independent there. GPT-2's
 * pre-tokenizer looks at runs of whitespace, so for it the newline must
 * stand alone between two printable ASCII characters ("x\ny"): then "\n" is
 * one word whether the text goes on or ends after it. */
static size_t cut_point(const cf_lm_codec *c, const unsigned char *s, size_t n, size_t from)
{
    if (c->hf && !cf_hf_tokenizer_is_bpe(c->hf)) return 0; /* SentencePiece: the text whole */
    const bool bpe = c->bpe || c->hf;
    for (size_t p = n; p >= 2 && p + 2 > from; p--) {
        if (s[p - 1] != '\n') continue;
        if (!bpe) return p;
        if (p < n && ascii_word_char(s[p]) && ascii_word_char(s[p - 2])) return p;
    }
    return 0;
}

/* Reads `path` `chunk` bytes at a time and hands `take` each piece up to
 * its last cut (cut_point; everything at the end of the file). */
typedef clformer_status (*piece_fn)(void *user, const char *text, size_t len);

static clformer_status read_pieces(const cf_lm_codec *c, const char *path, size_t chunk,
                                   piece_fn take, void *user, size_t *bytes)
{
    if (!chunk) chunk = (size_t)1 << 20;
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode)) {
        /* a pipe or device has no size to check and may go on for ever
         * (/dev/zero): read whole, up to cf_read_file's limit, then taken */
        char *all;
        size_t n;
        CF_TRY(cf_read_file(path, &all, &n));
        clformer_status st = take(user, all, n);
        free(all);
        if (st == CLFORMER_OK && bytes) *bytes = n;
        return st;
    }
    FILE *f = fopen(path, "rb");
    if (!f) return cf_fail(CLFORMER_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
    char *buf = NULL;
    size_t have = 0, cap = 0, total = 0;
    clformer_status st = CLFORMER_OK;
    for (bool end = false; st == CLFORMER_OK && !end;) {
        st = reserve((void **)&buf, &cap, have + chunk, 1);
        if (st != CLFORMER_OK) break;
        const size_t got = fread(buf + have, 1, chunk, f);
        if (got < chunk) {
            if (ferror(f)) {
                st = cf_fail(CLFORMER_ERR_IO, "reading '%s': %s", path, strerror(errno));
                break;
            }
            end = true;
        }
        have += got, total += got;
        const size_t cut = end ? have : cut_point(c, (const unsigned char *)buf, have, have - got);
        if (cut == 0) continue; /* no safe cut yet: read on */
        st = take(user, buf, cut);
        memmove(buf, buf + cut, have - cut);
        have -= cut;
    }
    fclose(f);
    free(buf);
    if (st == CLFORMER_OK && bytes) *bytes = total;
    return st;
}

typedef struct {
    const cf_lm_codec *c;
    int32_t *ids;
    size_t n, cap, unknown;
} encoding;

static clformer_status append(encoding *e, const int32_t *ids, size_t k)
{
    CF_TRY(reserve((void **)&e->ids, &e->cap, e->n + k + 1, sizeof *e->ids));
    if (k) memcpy(e->ids + e->n, ids, k * sizeof *ids);
    e->n += k;
    return CLFORMER_OK;
}

static clformer_status encode_piece(void *user, const char *text, size_t len)
{
    encoding *e = user;
    int32_t *part = NULL;
    size_t k = 0, u = 0;
    /* a Hugging Face tokenizer's BOS (or template) goes around the whole file */
    CF_TRY(e->c->hf ? cf_hf_tokenizer_encode(e->c->hf, text, len, false, &part, &k)
                    : cf_lm_codec_encode(e->c, text, len, &part, &k, &u));
    clformer_status st = append(e, part, k);
    free(part);
    e->unknown += u;
    return st;
}

clformer_status cf_lm_codec_encode_file(const cf_lm_codec *c, const char *path, size_t chunk,
                                        int32_t **ids, size_t *n, size_t *unknown,
                                        size_t *bytes)
{
    encoding e = {c, NULL, 0, 0, 0};
    size_t n_prefix = 0, n_suffix = 0;
    const int32_t *prefix = c->hf ? cf_hf_tokenizer_specials(c->hf, false, &n_prefix) : NULL,
                  *suffix = c->hf ? cf_hf_tokenizer_specials(c->hf, true, &n_suffix) : NULL;
    clformer_status st = append(&e, prefix, n_prefix);
    if (st == CLFORMER_OK) st = read_pieces(c, path, chunk, encode_piece, &e, bytes);
    if (st == CLFORMER_OK) st = append(&e, suffix, n_suffix);
    if (st == CLFORMER_OK && !e.ids) st = reserve((void **)&e.ids, &e.cap, 1, sizeof *e.ids);
    if (st != CLFORMER_OK) {
        free(e.ids);
        return st;
    }
    int32_t *fit = realloc(e.ids, (e.n ? e.n : 1) * sizeof *fit); /* the doubling's slack back */
    if (fit) e.ids = fit;
    *ids = e.ids, *n = e.n, *unknown = e.unknown;
    return CLFORMER_OK;
}

/* --- a char or byte vocabulary from a file in chunks ---------------------- */

/* What a vocabulary build needs to see of the text: each byte token's byte
 * once (in byte order, so no lead byte is followed by a continuation byte)
 * and each character once; cf_lm_vocab_build of this digest gives the
 * vocabulary of the whole text. */
typedef struct {
    bool bytes;
    bool byte_seen[256];
    char *chars; /* the distinct characters so far, concatenated */
    size_t len, cap;
} digest;

static clformer_status digest_piece(void *user, const char *text, size_t len)
{
    digest *d = user;
    if (d->bytes) return CLFORMER_OK; /* every byte is a token anyway */
    /* the piece's characters, plus those seen before: its vocabulary's tokens */
    CF_TRY(reserve((void **)&d->chars, &d->cap, d->len + len + 1, 1));
    memcpy(d->chars + d->len, text, len);
    char **tokens = NULL;
    int n = 0;
    CF_TRY(cf_lm_vocab_build(d->chars, d->len + len, false, &tokens, &n));
    d->len = 0;
    for (int i = CF_N_SPECIALS; i < n; i++) {
        const size_t k = strlen(tokens[i]);
        char b[8];
        if (k == 6 && !strncmp(tokens[i], "<0x", 3) && cf_lm_token_text(tokens[i], b) == 1) {
            d->byte_seen[(unsigned char)b[0]] = true;
            continue;
        }
        memcpy(d->chars + d->len, tokens[i], k); /* fits: fewer bytes than the text held */
        d->len += k;
    }
    cf_lm_tokens_free(tokens, n);
    return CLFORMER_OK;
}

clformer_status cf_lm_vocab_build_file(const char *path, bool bytes, size_t chunk, char ***tokens,
                                       int *n)
{
    if (bytes) return cf_lm_vocab_build("", 0, true, tokens, n); /* all 256, whatever the text */
    digest d = {.bytes = bytes};
    const cf_lm_codec any = {NULL, NULL, NULL, 0, NULL}; /* cut after any newline */
    clformer_status st = read_pieces(&any, path, chunk, digest_piece, &d, NULL);
    char *all = NULL;
    size_t len = 0;
    if (st == CLFORMER_OK) {
        all = malloc(256 + d.len + 1);
        if (!all) st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    for (int b = 0; all && b < 256; b++)
        if (d.byte_seen[b]) all[len++] = (char)b;
    if (all && d.len) memcpy(all + len, d.chars, d.len), len += d.len; /* empty text: none */
    if (st == CLFORMER_OK) st = cf_lm_vocab_build(all, len, bytes, tokens, n);
    free(all);
    free(d.chars);
    return st;
}
