/*
 * GPT-2's byte-level BPE (runtime/data/tokenizer_bpe.h).
 *
 * Encoding has three steps, each as GPT-2 and Hugging Face `tokenizers` do it:
 * 1. Pre-tokenization: the text is cut into words by the regex
 *      's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *    written out by hand below (pretoken_end) over four classes of code
 *    point: letter, number, whitespace (Oniguruma's \s, which `tokenizers`
 *    uses: TAB..CR, NEL, and the Zs/Zl/Zp separators) and other. A byte that
 *    is not part of well-formed UTF-8 is "other", so any input encodes.
 * 2. Each byte of a word becomes the token spelled by its byte-to-unicode
 *    character (printable bytes stand for themselves, the others for
 *    U+0100 onwards, so vocab.json holds no control or space character).
 * 3. Merges: the adjacent pair with the best rank (leftmost on a tie) is
 *    merged until no pair has a rank, as `tokenizers` does with its heap.
 * Step 1 has two more regexes for tokenizer.json files (cf_bpe_set_split):
 * SmolLM's digits-then-GPT-2 and Llama 3's.
 */
#include "tokenizer_bpe.h"
#include "fileio.h"
#include "fnv1a.h"
#include "status.h"
#include "unicode_classes.h"
#include "utf8.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ---- byte <-> unicode (GPT-2's mapping) ---- */

/* The code point standing for byte b in vocab.json and merges.txt. */
static uint32_t byte_char(int b)
{
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF))
        return (uint32_t)b;
    /* The other 68 bytes, in order, take U+0100.. */
    int n = 0;
    for (int i = 0; i < b; i++)
        if (!((i >= 0x21 && i <= 0x7E) || (i >= 0xA1 && i <= 0xAC) || (i >= 0xAE && i <= 0xFF)))
            n++;
    return 0x100u + (uint32_t)n;
}

/* ---- code point classes for the pre-tokenizer ---- */

enum { CLS_OTHER = 0, CLS_LETTER = CF_UNICODE_LETTER, CLS_NUMBER = CF_UNICODE_NUMBER, CLS_SPACE };

static int cp_class(uint32_t cp)
{
    if (cp < 0x80) {
        if ((cp | 0x20) >= 'a' && (cp | 0x20) <= 'z') return CLS_LETTER;
        if (cp >= '0' && cp <= '9') return CLS_NUMBER;
        if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D)) return CLS_SPACE;
        return CLS_OTHER;
    }
    if (cp == UINT32_MAX) return CLS_OTHER; /* a byte outside well-formed UTF-8 */
    if (cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
        cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000)
        return CLS_SPACE;
    size_t lo = 0, hi = cf_unicode_ln_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp > cf_unicode_ln_ranges[mid].last) lo = mid + 1;
        else if (cp < cf_unicode_ln_ranges[mid].first) hi = mid;
        else return (int)cf_unicode_ln_ranges[mid].cls;
    }
    return CLS_OTHER;
}

/* The class of the character at text[i] (i < n), its length in *cp_len. */
static int class_at(const unsigned char *text, size_t n, size_t i, size_t *cp_len)
{
    return cp_class(cf_utf8_get(text + i, n - i, cp_len));
}

/* Where the pre-token starting at text[i] (i < n) ends: the regex above,
 * alternative by alternative, the first that matches winning. */
static size_t pretoken_end(const unsigned char *text, size_t n, size_t i)
{
    /* 's 't 're 've 'm 'll 'd */
    if (text[i] == '\'' && i + 1 < n) {
        unsigned char a = text[i + 1], b = i + 2 < n ? text[i + 2] : 0;
        if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
            return i + 3;
    }
    size_t len;
    int cls = class_at(text, n, i, &len);
    size_t j = i;
    /* " ?" before a letter, number or other run */
    if (text[i] == ' ' && i + 1 < n) {
        size_t len1;
        int next = class_at(text, n, i + 1, &len1);
        if (next != CLS_SPACE) cls = next, j = i + 1;
    }
    if (cls != CLS_SPACE) {
        /* ?\p{L}+ | ?\p{N}+ | ?[^\s\p{L}\p{N}]+ */
        while (j < n && class_at(text, n, j, &len) == cls)
            j += len;
        return j;
    }
    /* \s+(?!\S): the whitespace run, less its last character when a
     * non-space follows it; \s+: that one character alone. */
    size_t last = i;
    while (j < n && class_at(text, n, j, &len) == CLS_SPACE) {
        last = j;
        j += len;
    }
    if (j < n && last > i) return last;
    return j;
}

/* Where the pre-token at text[i] ends after `tokenizers`' Digits
 * pre-tokenizer (individual digits) and then GPT-2's regex: a number
 * character is a piece of its own; the GPT-2 regex runs on the run of other
 * characters up to the next number, as on a text of its own. */
static size_t pretoken_end_digits(const unsigned char *text, size_t n, size_t i)
{
    size_t len;
    if (class_at(text, n, i, &len) == CLS_NUMBER) return i + len;
    size_t m = i;
    while (m < n && class_at(text, n, m, &len) != CLS_NUMBER) m += len;
    return pretoken_end(text, m, i);
}

static bool is_newline(unsigned char c) { return c == '\r' || c == '\n'; }

/* The class of text[j] (CLS_OTHER past the end), its length in *len. */
static int class_or_end(const unsigned char *text, size_t n, size_t j, size_t *len)
{
    if (j >= n) {
        *len = 0;
        return -1;
    }
    return class_at(text, n, j, len);
}

/* Where the pre-token at text[i] ends under Llama 3's regex (Qwen2's has
 * \p{N} for \p{N}{1,3}):
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *    ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * alternative by alternative, the first that matches winning. */
static size_t pretoken_end_llama3(const unsigned char *text, size_t n, size_t i)
{
    if (text[i] == '\'' && i + 1 < n) { /* contractions, any case */
        unsigned char a = (unsigned char)(text[i + 1] | 0x20), b = i + 2 < n ? text[i + 2] | 0x20 : 0;
        if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
            return i + 3;
    }
    size_t len, len1;
    const int cls = class_at(text, n, i, &len);
    /* [^\r\n\p{L}\p{N}]?\p{L}+ */
    size_t j = i;
    if (cls != CLS_LETTER && cls != CLS_NUMBER && !is_newline(text[i]) &&
        class_or_end(text, n, i + len, &len1) == CLS_LETTER)
        j = i + len;
    if (class_or_end(text, n, j, &len1) == CLS_LETTER) {
        while (class_or_end(text, n, j, &len1) == CLS_LETTER) j += len1;
        return j;
    }
    if (cls == CLS_NUMBER) { /* \p{N}{1,3} */
        j = i;
        for (int k = 0; k < 3 && class_or_end(text, n, j, &len1) == CLS_NUMBER; k++) j += len1;
        return j;
    }
    /*  ?[^\s\p{L}\p{N}]+[\r\n]* */
    j = text[i] == ' ' ? i + 1 : i;
    if (class_or_end(text, n, j, &len1) == CLS_OTHER) {
        while (class_or_end(text, n, j, &len1) == CLS_OTHER) j += len1;
        while (j < n && is_newline(text[j])) j++;
        return j;
    }
    /* cls is whitespace here. \s*[\r\n]+: the run up to its last newline */
    size_t end_nl = 0, last = i;
    for (j = i; class_or_end(text, n, j, &len1) == CLS_SPACE; j += len1) {
        last = j;
        if (is_newline(text[j])) end_nl = j + 1;
    }
    if (end_nl) return end_nl;
    /* \s+(?!\S) | \s+, as GPT-2's */
    if (j < n && last > i) return last;
    return j;
}

/* ---- hash tables ---- */

struct cf_bpe {
    int32_t n;            /* ids 0..n-1 */
    char **spelling;      /* [n] as in vocab.json, NUL-terminated */
    char **bytes;         /* [n] what each id decodes to */
    size_t *bytes_len;    /* [n] */
    int32_t *by_spelling; /* [spell_mask + 1] ids, -1 empty: spelling -> id */
    size_t spell_mask;
    int32_t byte_id[256]; /* the token of each single byte */
    /* merges: (left, right) -> rank, merged id; open addressing */
    uint64_t *merge_key;  /* left << 32 | right; UINT64_MAX empty */
    int32_t *merge_rank, *merge_id;
    size_t merge_mask;
    cf_bpe_split split;   /* the pre-tokenizer's regex */
};

static size_t table_size(size_t count)
{
    size_t size = 16;
    while (size < count * 2) size *= 2;
    return size;
}

static size_t spelling_slot(const cf_bpe *b, const char *s, size_t len)
{
    size_t i = (size_t)cf_fnv1a(CF_FNV1A_INIT, s, len) & b->spell_mask;
    for (;;) {
        int32_t id = b->by_spelling[i];
        if (id < 0 || (strlen(b->spelling[id]) == len && memcmp(b->spelling[id], s, len) == 0))
            return i;
        i = (i + 1) & b->spell_mask;
    }
}

static int32_t spelling_id(const cf_bpe *b, const char *s, size_t len)
{
    return b->by_spelling[spelling_slot(b, s, len)];
}

static size_t merge_slot(const cf_bpe *b, uint64_t key)
{
    size_t i = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 17) & b->merge_mask;
    while (b->merge_key[i] != UINT64_MAX && b->merge_key[i] != key)
        i = (i + 1) & b->merge_mask;
    return i;
}

/* The merge of (left, right): its rank (-1: none) and the merged id. */
static int32_t merge_find(const cf_bpe *b, int32_t left, int32_t right, int32_t *merged)
{
    uint64_t key = (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
    size_t i = merge_slot(b, key);
    if (b->merge_key[i] == UINT64_MAX) return -1;
    *merged = b->merge_id[i];
    return b->merge_rank[i];
}

void cf_bpe_free(cf_bpe *b)
{
    if (!b) return;
    for (int32_t id = 0; id < b->n; id++) {
        if (b->spelling) free(b->spelling[id]);
        if (b->bytes) free(b->bytes[id]);
    }
    free(b->spelling);
    free(b->bytes);
    free(b->bytes_len);
    free(b->by_spelling);
    free(b->merge_key);
    free(b->merge_rank);
    free(b->merge_id);
    free(b);
}

/* ---- loading ---- */

/* What a token spelled s decodes to: each character's byte, or, when a
 * character stands for no byte (an added token such as "<s> x"), the
 * spelling itself, as `tokenizers`' ByteLevel decoder does. */
static bool spelling_to_bytes(const char *s, const uint32_t *char_byte, char **out, size_t *len)
{
    size_t n = strlen(s), k = 0;
    char *bytes = malloc(n + 1);
    if (!bytes) return false;
    for (size_t i = 0; i < n;) {
        size_t cl;
        uint32_t cp = cf_utf8_get((const unsigned char *)s + i, n - i, &cl);
        if (cp >= 0x144 || char_byte[cp] == UINT32_MAX) {
            memcpy(bytes, s, n);
            k = n;
            break;
        }
        bytes[k++] = (char)char_byte[cp];
        i += cl;
    }
    bytes[k] = '\0';
    *out = bytes;
    *len = k;
    return true;
}

static clformer_status load_vocab(cf_bpe *b, const char *json, size_t len, const char *origin)
{
    json_error_t err;
    json_t *root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &err);
    if (!root)
        return cf_fail(CLFORMER_ERR_FORMAT,
                       "%s: line %d column %d: %s: vocab.json must be one JSON object of "
                       "token -> id, as GPT-2's vocab.json", origin, err.line, err.column, err.text);
    clformer_status st = CLFORMER_OK;
    if (!json_is_object(root) || json_object_size(root) == 0 ||
        json_object_size(root) > INT32_MAX / 2) {
        st = cf_fail(CLFORMER_ERR_FORMAT,
                     "%s: not a JSON object of token -> id (or an empty one): vocab.json maps "
                     "each token to its id, as {\"!\": 0, \"\\\"\": 1, ...}", origin);
        goto done;
    }
    b->n = (int32_t)json_object_size(root);
    b->spelling = calloc((size_t)b->n, sizeof *b->spelling);
    b->spell_mask = table_size((size_t)b->n) - 1;
    b->by_spelling = malloc((b->spell_mask + 1) * sizeof *b->by_spelling);
    if (!b->spelling || !b->by_spelling) {
        st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory loading %s", origin);
        goto done;
    }
    memset(b->by_spelling, 0xff, (b->spell_mask + 1) * sizeof *b->by_spelling);
    const char *key;
    json_t *value;
    json_object_foreach(root, key, value) {
        json_int_t id = json_is_integer(value) ? json_integer_value(value) : -1;
        if (id < 0 || id >= b->n) {
            st = cf_fail(CLFORMER_ERR_FORMAT,
                         "%s: token \"%s\" has id %s; ids must be the integers 0..%d (the file "
                         "holds %d tokens), each given once",
                         origin, key, json_is_integer(value) ? "out of range" : "that is not an integer",
                         b->n - 1, b->n);
            goto done;
        }
        if (b->spelling[id]) {
            st = cf_fail(CLFORMER_ERR_FORMAT,
                         "%s: tokens \"%s\" and \"%s\" both have id %lld; each id must name one "
                         "token", origin, b->spelling[id], key, (long long)id);
            goto done;
        }
        b->spelling[id] = strdup(key);
        if (!b->spelling[id]) {
            st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory loading %s", origin);
            goto done;
        }
        b->by_spelling[spelling_slot(b, key, strlen(key))] = (int32_t)id;
    }
done:
    json_decref(root);
    return st;
}

static clformer_status load_bytes(cf_bpe *b, const char *origin)
{
    uint32_t char_byte[0x144]; /* code point -> the byte it stands for */
    for (size_t i = 0; i < 0x144; i++) char_byte[i] = UINT32_MAX;
    for (int byte = 0; byte < 256; byte++) {
        uint32_t cp = byte_char(byte);
        char_byte[cp] = (uint32_t)byte;
        char s[CF_UTF8_MAX];
        size_t len = cf_utf8_put(cp, s);
        b->byte_id[byte] = spelling_id(b, s, len);
        if (b->byte_id[byte] < 0)
            return cf_fail(CLFORMER_ERR_FORMAT,
                           "%s: no token for byte 0x%02X (spelled \"%.*s\"): a byte-level BPE "
                           "vocabulary holds all 256 byte tokens; use GPT-2's vocab.json or one "
                           "trained with the byte-level alphabet", origin, byte, (int)len, s);
    }
    b->bytes = calloc((size_t)b->n, sizeof *b->bytes);
    b->bytes_len = calloc((size_t)b->n, sizeof *b->bytes_len);
    if (!b->bytes || !b->bytes_len)
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory loading %s", origin);
    for (int32_t id = 0; id < b->n; id++)
        if (!spelling_to_bytes(b->spelling[id], char_byte, &b->bytes[id], &b->bytes_len[id]))
            return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory loading %s", origin);
    return CLFORMER_OK;
}

static clformer_status load_merges(cf_bpe *b, const char *text, size_t len, const char *origin,
                                   const char *vocab_origin)
{
    size_t lines = 1;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    b->merge_mask = table_size(lines) - 1;
    b->merge_key = malloc((b->merge_mask + 1) * sizeof *b->merge_key);
    b->merge_rank = malloc((b->merge_mask + 1) * sizeof *b->merge_rank);
    b->merge_id = malloc((b->merge_mask + 1) * sizeof *b->merge_id);
    char *joined = malloc(len + 1);
    if (!b->merge_key || !b->merge_rank || !b->merge_id || !joined) {
        free(joined);
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory loading %s", origin);
    }
    memset(b->merge_key, 0xff, (b->merge_mask + 1) * sizeof *b->merge_key);
    clformer_status st = CLFORMER_OK;
    int32_t rank = 0;
    size_t line_no = 0;
    for (size_t at = 0; at < len && st == CLFORMER_OK;) {
        const char *line = text + at;
        const char *nl = memchr(line, '\n', len - at);
        size_t n = nl ? (size_t)(nl - line) : len - at;
        at += n + 1;
        line_no++;
        if (n > 0 && line[n - 1] == '\r') n--;
        if (n == 0 || (n >= 8 && memcmp(line, "#version", 8) == 0)) continue;
        const char *space = memchr(line, ' ', n);
        if (!space || space == line || space == line + n - 1 ||
            memchr(space + 1, ' ', n - (size_t)(space + 1 - line))) {
            st = cf_fail(CLFORMER_ERR_FORMAT,
                         "%s: line %zu (\"%.*s\") is not two tokens separated by one space: each "
                         "line of merges.txt holds one pair such as \"\xC4\xA0 t\"",
                         origin, line_no, (int)(n > 60 ? 60 : n), line);
            break;
        }
        size_t left_len = (size_t)(space - line), right_len = n - left_len - 1;
        int32_t left = spelling_id(b, line, left_len);
        int32_t right = spelling_id(b, space + 1, right_len);
        memcpy(joined, line, left_len);
        memcpy(joined + left_len, space + 1, right_len);
        int32_t merged = spelling_id(b, joined, left_len + right_len);
        const char *missing = left < 0 ? line : right < 0 ? space + 1 : merged < 0 ? joined : NULL;
        size_t missing_len = left < 0 ? left_len : right < 0 ? right_len : left_len + right_len;
        if (missing) {
            st = cf_fail(CLFORMER_ERR_FORMAT,
                         "%s: line %zu: token \"%.*s\" is not in %s: merges.txt and vocab.json "
                         "must come from the same tokenizer", origin, line_no, (int)missing_len,
                         missing, vocab_origin);
            break;
        }
        /* A pair listed twice keeps its later rank, as `tokenizers` does. */
        uint64_t key = (uint64_t)(uint32_t)left << 32 | (uint32_t)right;
        size_t slot = merge_slot(b, key);
        b->merge_key[slot] = key;
        b->merge_rank[slot] = rank++;
        b->merge_id[slot] = merged;
    }
    free(joined);
    return st;
}

clformer_status cf_bpe_load(const char *vocab_json, size_t vocab_len, const char *vocab_origin,
                            const char *merges, size_t merges_len, const char *merges_origin,
                            cf_bpe **out)
{
    *out = NULL;
    cf_bpe *b = calloc(1, sizeof *b);
    if (!b) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory loading a tokenizer");
    clformer_status st = load_vocab(b, vocab_json, vocab_len, vocab_origin);
    if (st == CLFORMER_OK) st = load_bytes(b, vocab_origin);
    if (st == CLFORMER_OK) st = load_merges(b, merges, merges_len, merges_origin, vocab_origin);
    if (st != CLFORMER_OK) {
        cf_bpe_free(b);
        return st;
    }
    *out = b;
    return CLFORMER_OK;
}

clformer_status cf_bpe_load_files(const char *vocab_path, const char *merges_path, cf_bpe **out)
{
    *out = NULL;
    char *vocab = NULL, *merges = NULL;
    size_t vocab_len = 0, merges_len = 0;
    clformer_status st = cf_read_text_file(vocab_path, &vocab, &vocab_len);
    if (st == CLFORMER_OK) st = cf_read_text_file(merges_path, &merges, &merges_len);
    if (st == CLFORMER_OK)
        st = cf_bpe_load(vocab, vocab_len, vocab_path, merges, merges_len, merges_path, out);
    free(vocab);
    free(merges);
    return st;
}

void cf_bpe_set_split(cf_bpe *b, cf_bpe_split split)
{
    b->split = split;
}

int32_t cf_bpe_vocab_size(const cf_bpe *b)
{
    return b->n;
}

int32_t cf_bpe_token_id(const cf_bpe *b, const char *token)
{
    return spelling_id(b, token, strlen(token));
}

const char *cf_bpe_token_bytes(const cf_bpe *b, int32_t id, size_t *len)
{
    if (id < 0 || id >= b->n) return NULL;
    *len = b->bytes_len[id];
    return b->bytes[id];
}

/* ---- encoding ---- */

typedef struct {
    int32_t rank, pos, merged;
} merge_entry;

static bool entry_before(merge_entry a, merge_entry b)
{
    return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos);
}

typedef struct {
    int32_t *id, *prev, *next; /* the word's symbols, a linked list; id -1: merged away */
    merge_entry *heap;
    size_t heap_n, cap;
} word_scratch;

static void heap_push(word_scratch *w, merge_entry e)
{
    size_t i = w->heap_n++;
    while (i > 0 && entry_before(e, w->heap[(i - 1) / 2])) {
        w->heap[i] = w->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    w->heap[i] = e;
}

static merge_entry heap_pop(word_scratch *w)
{
    merge_entry top = w->heap[0], last = w->heap[--w->heap_n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= w->heap_n) break;
        if (c + 1 < w->heap_n && entry_before(w->heap[c + 1], w->heap[c])) c++;
        if (!entry_before(w->heap[c], last)) break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (w->heap_n > 0) w->heap[i] = last;
    return top;
}

static void push_pair(const cf_bpe *b, word_scratch *w, int32_t pos)
{
    int32_t right = w->next[pos], merged;
    if (pos < 0 || right < 0) return;
    int32_t rank = merge_find(b, w->id[pos], w->id[right], &merged);
    if (rank >= 0) heap_push(w, (merge_entry){rank, pos, merged});
}

/* Merges the bytes of one word; appends its ids to out[*n..). */
static void encode_word(const cf_bpe *b, word_scratch *w, const unsigned char *word, size_t len,
                        int32_t *out, size_t *n)
{
    int32_t m = (int32_t)len;
    for (int32_t i = 0; i < m; i++) {
        w->id[i] = b->byte_id[word[i]];
        w->prev[i] = i - 1;
        w->next[i] = i + 1 < m ? i + 1 : -1;
    }
    w->heap_n = 0;
    for (int32_t i = 0; i + 1 < m; i++) push_pair(b, w, i);
    while (w->heap_n > 0) {
        merge_entry top = heap_pop(w);
        int32_t left = top.pos, right = w->next[left], merged;
        /* Stale entries: the left symbol was merged away, or its pair changed. */
        if (w->id[left] < 0 || right < 0) continue;
        if (merge_find(b, w->id[left], w->id[right], &merged) < 0 || merged != top.merged)
            continue;
        w->id[left] = merged;
        w->id[right] = -1;
        w->next[left] = w->next[right];
        if (w->next[right] >= 0) w->prev[w->next[right]] = left;
        push_pair(b, w, w->prev[left]);
        push_pair(b, w, left);
    }
    for (int32_t i = 0; i >= 0; i = w->next[i]) out[(*n)++] = w->id[i];
}

clformer_status cf_bpe_encode(const cf_bpe *b, const char *text, size_t len, int32_t **ids,
                              size_t *n)
{
    *ids = NULL;
    *n = 0;
    /* At most one id a byte. */
    int32_t *out = malloc((len ? len : 1) * sizeof *out);
    word_scratch w = {0};
    if (!out) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory encoding %zu bytes", len);
    const unsigned char *t = (const unsigned char *)text;
    for (size_t i = 0; i < len;) {
        size_t end = b->split == CF_BPE_SPLIT_DIGITS_GPT2 ? pretoken_end_digits(t, len, i)
                     : b->split == CF_BPE_SPLIT_LLAMA3  ? pretoken_end_llama3(t, len, i)
                                                        : pretoken_end(t, len, i);
        size_t wl = end - i;
        if (wl > INT32_MAX / 4) {
            free(out);
            free(w.id);
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "a word of %zu bytes without a break is too long to encode", wl);
        }
        if (wl > w.cap) {
            size_t cap = wl * 2;
            int32_t *buf = realloc(w.id, cap * (3 * sizeof(int32_t) + 3 * sizeof(merge_entry)));
            if (!buf) {
                free(out);
                free(w.id);
                return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory encoding a "
                               "word of %zu bytes", wl);
            }
            w.id = buf;
            w.prev = buf + cap;
            w.next = buf + 2 * cap;
            w.heap = (merge_entry *)(void *)(buf + 3 * cap);
            w.cap = cap;
        }
        encode_word(b, &w, t + i, wl, out, n);
        i = end;
    }
    free(w.id);
    *ids = out;
    return CLFORMER_OK;
}

clformer_status cf_bpe_decode(const cf_bpe *b, const int32_t *ids, size_t n, char **text,
                              size_t *len)
{
    *text = NULL;
    *len = 0;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= b->n)
            return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "id %d (position %zu) is not in the tokenizer's vocabulary of %d "
                           "ids", ids[i], i, b->n);
        total += b->bytes_len[ids[i]];
    }
    char *out = malloc(total + 1);
    if (!out) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory decoding ids");
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        memcpy(out + k, b->bytes[ids[i]], b->bytes_len[ids[i]]);
        k += b->bytes_len[ids[i]];
    }
    out[k] = '\0';
    *text = out;
    *len = k;
    return CLFORMER_OK;
}
