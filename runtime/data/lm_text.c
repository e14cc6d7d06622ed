/* Character and byte token streams (lm_text.h). */
#include "lm_text.h"
#include "status.h"
#include "text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The length of the UTF-8 character at s[i] (1 for a byte that starts none). */
static size_t char_len(const unsigned char *s, size_t i, size_t n)
{
    const unsigned char c = s[i];
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    if (len == 1 || i + len > n || !clformer_utf8_valid((const char *)s + i, len, NULL)) return 1;
    return len;
}

/* Whether the character s[0..len) is spelled as its bytes: whitespace,
 * control characters and bytes that are no UTF-8 character. */
static bool as_bytes(const unsigned char *s, size_t len)
{
    if (len == 1) return s[0] < 0x21 || s[0] >= 0x7F;
    return cf_has_whitespace((const char *)s, len);
}

static void byte_token(unsigned char b, char out[8]) { snprintf(out, 8, "<0x%02X>", b); }

void cf_lm_tokens_free(char **tokens, int n)
{
    for (int i = 0; tokens && i < n; i++) free(tokens[i]);
    free(tokens);
}

typedef struct {
    const unsigned char *s;
    size_t len;
} span;

static int by_bytes(const void *a, const void *b)
{
    const span *x = a, *y = b;
    const int c = memcmp(x->s, y->s, x->len < y->len ? x->len : y->len);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* The most distinct characters a character vocabulary takes (a text of
 * more, random bytes say, wants --tokenizer byte or spm). */
enum { MAX_CHARS = 1 << 20 };

/* The distinct characters of a text: spans into it, found through an
 * open-addressing table of their indices (a linear scan made random bytes
 * cost hours). */
typedef struct {
    span *chars;
    size_t count, cap;
    size_t *slot; /* index + 1 of a char, 0: empty; 2 * cap of them */
} char_set;

static size_t span_hash(const unsigned char *s, size_t k)
{
    size_t h = 1469598103u;
    for (size_t i = 0; i < k; i++) h = (h ^ s[i]) * 16777619u;
    return h;
}

/* Adds s[0..k) unless known; false when out of memory. */
static bool char_set_add(char_set *c, const unsigned char *s, size_t k)
{
    if (c->count == c->cap) {
        const size_t cap = c->cap ? 2 * c->cap : 256;
        span *grown = realloc(c->chars, cap * sizeof *grown);
        size_t *slot = grown ? calloc(2 * cap, sizeof *slot) : NULL;
        if (grown) c->chars = grown;
        if (!slot) return false;
        free(c->slot);
        c->slot = slot;
        c->cap = cap;
        for (size_t i = 0; i < c->count; i++) { /* rehash */
            size_t h = span_hash(c->chars[i].s, c->chars[i].len) & (2 * cap - 1);
            while (c->slot[h]) h = (h + 1) & (2 * cap - 1);
            c->slot[h] = i + 1;
        }
    }
    size_t h = span_hash(s, k) & (2 * c->cap - 1);
    for (; c->slot[h]; h = (h + 1) & (2 * c->cap - 1)) {
        const span *known = &c->chars[c->slot[h] - 1];
        if (known->len == k && !memcmp(known->s, s, k)) return true;
    }
    c->chars[c->count++] = (span){s, k};
    c->slot[h] = c->count;
    return true;
}

clformer_status cf_lm_vocab_build(const char *text, size_t len, bool bytes, char ***tokens,
                                  int *n)
{
    const unsigned char *s = (const unsigned char *)text;
    bool seen_byte[256] = {false};
    char_set set = {0};
    clformer_status st = CLFORMER_OK;
    for (size_t i = 0; i < len && st == CLFORMER_OK;) {
        const size_t k = bytes ? 1 : char_len(s, i, len);
        if (bytes || as_bytes(s + i, k)) {
            for (size_t j = 0; j < k; j++) seen_byte[s[i + j]] = true;
        } else if (!char_set_add(&set, s + i, k)) {
            st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
        } else if (set.count > MAX_CHARS) {
            st = cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "the text has more than %d distinct "
                         "characters: use --tokenizer byte or spm", MAX_CHARS);
        }
        i += k;
    }
    free(set.slot);
    span *chars = set.chars;
    const size_t count = set.count;
    /* no characters (a byte vocabulary): chars is NULL, which qsort may not take */
    if (st == CLFORMER_OK && count) qsort(chars, count, sizeof *chars, by_bytes);
    char **t = st == CLFORMER_OK ? calloc(4 + 256 + count, sizeof *t) : NULL;
    if (st == CLFORMER_OK && !t) st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    int m = 0;
    static const char *const specials[4] = {"<pad>", "<sos>", "<eos>", "<unk>"};
    for (int i = 0; t && i < 4; i++) t[m++] = strdup(specials[i]);
    /* bytes first (in byte order), then characters (in byte order): a fixed
     * order, so the same text gives the same ids */
    for (int b = 0; t && b < 256; b++)
        if (bytes || seen_byte[b]) {
            char name[8];
            byte_token((unsigned char)b, name);
            t[m++] = strdup(name);
        }
    for (size_t c = 0; t && c < count; c++) {
        char *tok = malloc(chars[c].len + 1);
        if (tok) memcpy(tok, chars[c].s, chars[c].len), tok[chars[c].len] = '\0';
        t[m++] = tok;
    }
    for (int i = 0; t && i < m; i++)
        if (!t[i] && st == CLFORMER_OK) st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    free(chars);
    if (st != CLFORMER_OK) {
        cf_lm_tokens_free(t, m);
        return st;
    }
    *tokens = t;
    *n = m;
    return CLFORMER_OK;
}

clformer_status cf_lm_encode(const cf_vocab *v, const char *text, size_t len, int32_t **ids,
                             size_t *n, size_t *unknown)
{
    const unsigned char *s = (const unsigned char *)text;
    int32_t *out = malloc((len ? len : 1) * sizeof *out); /* at most one id per byte */
    if (!out) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    size_t m = 0, unk = 0;
    for (size_t i = 0; i < len;) {
        const size_t k = char_len(s, i, len);
        const int32_t id = as_bytes(s + i, k) ? -1 : cf_vocab_id(v, text + i, k);
        if (id >= 0 && id != CLFORMER_UNK) {
            out[m++] = id;
        } else {
            for (size_t j = 0; j < k; j++) {
                char name[8];
                byte_token(s[i + j], name);
                const int32_t b = cf_vocab_id(v, name, strlen(name));
                unk += b == CLFORMER_UNK;
                out[m++] = b;
                if (b == CLFORMER_UNK) break; /* one <unk> per unknown character */
            }
        }
        i += k;
    }
    *ids = out;
    *n = m;
    *unknown = unk;
    return CLFORMER_OK;
}

size_t cf_lm_token_text(const char *token, char *out)
{
    unsigned b;
    char end;
    if (strlen(token) == 6 && sscanf(token, "<0x%2X%c", &b, &end) == 2 && end == '>') {
        out[0] = (char)b;
        out[1] = '\0';
        return 1;
    }
    static const char *const specials[4] = {"<pad>", "<sos>", "<eos>", "<unk>"};
    for (int i = 0; i < 4; i++)
        if (!strcmp(token, specials[i])) {
            out[0] = '\0';
            return 0;
        }
    const size_t n = strlen(token);
    memcpy(out, token, n + 1);
    return n;
}
