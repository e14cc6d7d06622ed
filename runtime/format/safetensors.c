/*
 * Safetensors reader and writer (format and guarantees: safetensors.h).
 *
 * The reader trusts nothing in the file: every number in the header is
 * checked, with overflow checks, against the file size and the other
 * tensors before it is reported, so callers may allocate from the shapes.
 * The JSON is parsed by jansson, which keeps the parsed tree (and so the
 * tensor names and metadata strings) alive until cf_st_close.
 */
#include "safetensors.h"
#include "crc32c.h"
#include "door.h"
#include "fileio.h"
#include "half.h"
#include "status.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* --- dtypes ---------------------------------------------------------------- */

static const struct {
    const char *name;
    size_t size;
} dtypes[CF_ST_DTYPE_COUNT] = {
    [CF_ST_BOOL] = {"BOOL", 1}, [CF_ST_U8] = {"U8", 1},     [CF_ST_I8] = {"I8", 1},
    [CF_ST_I16] = {"I16", 2},   [CF_ST_U16] = {"U16", 2},   [CF_ST_F16] = {"F16", 2},
    [CF_ST_BF16] = {"BF16", 2}, [CF_ST_I32] = {"I32", 4},   [CF_ST_U32] = {"U32", 4},
    [CF_ST_F32] = {"F32", 4},   [CF_ST_F64] = {"F64", 8},   [CF_ST_I64] = {"I64", 8},
    [CF_ST_U64] = {"U64", 8},
};

static bool dtype_valid(cf_st_dtype dtype) { return (unsigned)dtype < CF_ST_DTYPE_COUNT; }

const char *cf_st_dtype_name(cf_st_dtype dtype)
{
    return dtype_valid(dtype) ? dtypes[dtype].name : "(invalid dtype)";
}

size_t cf_st_dtype_size(cf_st_dtype dtype) { return dtype_valid(dtype) ? dtypes[dtype].size : 0; }

static bool dtype_parse(const char *name, cf_st_dtype *dtype)
{
    for (int i = 0; i < CF_ST_DTYPE_COUNT; i++)
        if (strcmp(name, dtypes[i].name) == 0) {
            *dtype = (cf_st_dtype)i;
            return true;
        }
    return false;
}

/* --- helpers ------------------------------------------------------------------ */

static bool utf8_valid(const char *s) { return clformer_utf8_valid(s, strlen(s), NULL); }

/* a * b, false on uint64 overflow */
static bool mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    if (b != 0 && a > UINT64_MAX / b) return false;
    *out = a * b;
    return true;
}

/* "[2, 3]" into buf */
static const char *shape_text(char *buf, size_t cap, int ndim, const int64_t *shape)
{
    size_t used = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < ndim && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (used < cap) snprintf(buf + used, cap - used, "]");
    return buf;
}

/* Reads exactly `size` bytes at `offset`; false on error or end of file. */
static bool read_at(int fd, void *dst, size_t size, uint64_t offset)
{
    char *p = dst;
    while (size > 0) {
        ssize_t got = pread(fd, p, size, (off_t)offset);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return false;
        p += got;
        size -= (size_t)got;
        offset += (uint64_t)got;
    }
    return true;
}

/* --- reader -------------------------------------------------------------------- */

struct cf_st_reader {
    char *path;
    int fd;
    uint64_t file_size;
    uint64_t data_start; /* 8 + header length */
    json_t *root;        /* owns the names and metadata strings */
    cf_st_tensor *tensors;
    size_t count;
    const char **meta_keys, **meta_values;
    size_t meta_count;
};

/* The end offset of each tensor while validating (tensor->file_offset holds
 * the begin offset until the end of cf_st_open). */
typedef struct {
    cf_st_tensor *tensor;
    uint64_t begin, end;
} span;

/* Formats "'<path>': tensor '<name>': <problem>" as a FORMAT failure. */
static clformer_status bad_tensor(const cf_st_reader *r, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static clformer_status bad_tensor(const cf_st_reader *r, const char *name, const char *fmt, ...)
{
    char problem[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(problem, sizeof problem, fmt, ap);
    va_end(ap);
    return cf_fail(CLFORMER_ERR_FORMAT, "'%s': tensor '%s': %s", r->path, name, problem);
}

static clformer_status parse_shape(const cf_st_reader *r, const char *name, json_t *shape,
                                   cf_st_tensor *t)
{
    if (!shape) return bad_tensor(r, name, "missing \"shape\"");
    if (!json_is_array(shape)) return bad_tensor(r, name, "\"shape\" is not an array");
    size_t ndim = json_array_size(shape);
    if (ndim > CF_ST_MAX_DIMS)
        return bad_tensor(r, name, "\"shape\" has %zu dimensions; at most %d are supported",
                          ndim, CF_ST_MAX_DIMS);
    t->ndim = (int)ndim;
    t->numel = 1;
    for (size_t i = 0; i < ndim; i++) {
        json_t *d = json_array_get(shape, i);
        if (!json_is_integer(d))
            return bad_tensor(r, name, "\"shape\" dimension %zu is not an integer", i);
        json_int_t v = json_integer_value(d);
        if (v < 0)
            return bad_tensor(r, name, "\"shape\" dimension %zu is negative (%lld)", i,
                              (long long)v);
        t->shape[i] = v;
        if (!mul_u64(t->numel, (uint64_t)v, &t->numel))
            return bad_tensor(r, name, "\"shape\" element count overflows 64 bits");
    }
    if (!mul_u64(t->numel, cf_st_dtype_size(t->dtype), &t->nbytes))
        return bad_tensor(r, name, "byte size overflows 64 bits");
    return CLFORMER_OK;
}

static clformer_status parse_offsets(const cf_st_reader *r, const char *name, json_t *offsets,
                                     span *s)
{
    if (!offsets) return bad_tensor(r, name, "missing \"data_offsets\"");
    if (!json_is_array(offsets) || json_array_size(offsets) != 2)
        return bad_tensor(r, name, "\"data_offsets\" is not an array of 2 integers");
    json_t *b = json_array_get(offsets, 0), *e = json_array_get(offsets, 1);
    if (!json_is_integer(b) || !json_is_integer(e) || json_integer_value(b) < 0 ||
        json_integer_value(e) < 0)
        return bad_tensor(r, name, "\"data_offsets\" are not non-negative integers");
    s->begin = (uint64_t)json_integer_value(b);
    s->end = (uint64_t)json_integer_value(e);
    return CLFORMER_OK;
}

/* Checks one tensor entry on its own (the data layout is checked after). */
static clformer_status parse_tensor(const cf_st_reader *r, const char *name, json_t *entry,
                                    span *s)
{
    cf_st_tensor *t = s->tensor;
    t->name = name;
    if (!json_is_object(entry)) return bad_tensor(r, name, "entry is not a JSON object");
    const char *field;
    json_t *value;
    json_object_foreach(entry, field, value) {
        if (strcmp(field, "dtype") != 0 && strcmp(field, "shape") != 0 &&
            strcmp(field, "data_offsets") != 0)
            return bad_tensor(r, name, "unknown field \"%s\"", field);
    }
    json_t *dtype = json_object_get(entry, "dtype");
    if (!dtype) return bad_tensor(r, name, "missing \"dtype\"");
    if (!json_is_string(dtype)) return bad_tensor(r, name, "\"dtype\" is not a string");
    if (!dtype_parse(json_string_value(dtype), &t->dtype))
        return bad_tensor(r, name, "unknown dtype \"%s\"", json_string_value(dtype));
    CF_TRY(parse_shape(r, name, json_object_get(entry, "shape"), t));
    CF_TRY(parse_offsets(r, name, json_object_get(entry, "data_offsets"), s));

    char shape[256];
    if (s->begin > s->end)
        return bad_tensor(r, name, "data_offsets [%llu, %llu] end before they begin",
                          (unsigned long long)s->begin, (unsigned long long)s->end);
    if (s->end - s->begin != t->nbytes)
        return bad_tensor(r, name,
                          "data_offsets [%llu, %llu] hold %llu bytes but %s %s needs %llu",
                          (unsigned long long)s->begin, (unsigned long long)s->end,
                          (unsigned long long)(s->end - s->begin), cf_st_dtype_name(t->dtype),
                          shape_text(shape, sizeof shape, t->ndim, t->shape),
                          (unsigned long long)t->nbytes);
    uint64_t data_size = r->file_size - r->data_start;
    if (s->end > data_size)
        return bad_tensor(r, name,
                          "data_offsets [%llu, %llu] run past the end of the data area "
                          "(%llu bytes; file truncated?)",
                          (unsigned long long)s->begin, (unsigned long long)s->end,
                          (unsigned long long)data_size);
    return CLFORMER_OK;
}

static clformer_status parse_metadata(cf_st_reader *r, json_t *meta)
{
    if (!json_is_object(meta))
        return cf_fail(CLFORMER_ERR_FORMAT, "'%s': \"__metadata__\" is not a JSON object",
                       r->path);
    size_t n = json_object_size(meta);
    if (n > CF_ST_MAX_METADATA)
        return cf_fail(CLFORMER_ERR_FORMAT,
                       "'%s': \"__metadata__\" has %zu entries; at most %d are supported",
                       r->path, n, CF_ST_MAX_METADATA);
    r->meta_keys = calloc(n ? n : 1, sizeof *r->meta_keys);
    r->meta_values = calloc(n ? n : 1, sizeof *r->meta_values);
    if (!r->meta_keys || !r->meta_values)
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory reading '%s'", r->path);
    const char *key;
    json_t *value;
    json_object_foreach(meta, key, value) {
        if (!json_is_string(value))
            return cf_fail(CLFORMER_ERR_FORMAT,
                           "'%s': \"__metadata__\" value of \"%s\" is not a string", r->path, key);
        r->meta_keys[r->meta_count] = key;
        r->meta_values[r->meta_count] = json_string_value(value);
        r->meta_count++;
    }
    return CLFORMER_OK;
}

/* ------------------------------------------------------------------------- */
/* The metadata checksum (CF_ST_META_CRC_KEY)                                 */
/* ------------------------------------------------------------------------- */

static bool meta_covered(const char *key)
{
    return strncmp(key, "clformer.", 9) == 0 && strcmp(key, CF_ST_CRC_KEY) != 0 &&
           strcmp(key, CF_ST_META_CRC_KEY) != 0 && strcmp(key, CF_ST_HEADER_CRC_KEY) != 0;
}

uint32_t cf_st_tensor_entry_crc(uint32_t crc, const char *name, const char *dtype, int ndim,
                                const int64_t *shape)
{
    crc = cf_crc32c(crc, name, strlen(name) + 1);
    crc = cf_crc32c(crc, dtype, strlen(dtype) + 1);
    for (int k = 0; k < ndim; k++) {
        char dim[32];
        const int n = snprintf(dim, sizeof dim, "%lld,", (long long)shape[k]);
        crc = cf_crc32c(crc, dim, (size_t)n);
    }
    return cf_crc32c(crc, "", 1);
}

/* An 8-digit lowercase hex checksum into *out; false when it is not one. */
static bool parse_crc_text(const char *text, uint32_t *out)
{
    uint32_t want = 0;
    bool ok = strlen(text) == 8;
    for (int k = 0; ok && k < 8; k++) {
        char h = text[k];
        ok = (h >= '0' && h <= '9') || (h >= 'a' && h <= 'f');
        want = (want << 4) | (uint32_t)(h <= '9' ? h - '0' : h - 'a' + 10);
    }
    *out = want;
    return ok;
}

uint32_t cf_st_metadata_crc(const char *const *keys, const char *const *values, size_t n)
{
    /* bytewise key order without sorting: the next key after `last` each
     * time (n is at most CF_ST_MAX_METADATA; keys are unique) */
    uint32_t crc = 0;
    const char *last = NULL;
    for (;;) {
        size_t next = n;
        for (size_t i = 0; i < n; i++)
            if (meta_covered(keys[i]) && (!last || strcmp(keys[i], last) > 0) &&
                (next == n || strcmp(keys[i], keys[next]) < 0))
                next = i;
        if (next == n) return crc;
        crc = cf_crc32c(crc, keys[next], strlen(keys[next]) + 1);
        crc = cf_crc32c(crc, values[next], strlen(values[next]) + 1);
        last = keys[next];
    }
}

/* A file with CF_ST_META_CRC_KEY (older files) or CF_ST_HEADER_CRC_KEY:
 * the metadata, and with the latter every tensor's name, dtype and shape
 * (r->tensors[0..count) in header order), must be what was written. */
static clformer_status check_header_crc(const cf_st_reader *r)
{
    const bool whole = cf_st_metadata(r, CF_ST_HEADER_CRC_KEY) != NULL;
    const char *key = whole ? CF_ST_HEADER_CRC_KEY : CF_ST_META_CRC_KEY;
    const char *text = cf_st_metadata(r, key);
    if (!text) return CLFORMER_OK;
    uint32_t want;
    if (!parse_crc_text(text, &want))
        return cf_fail(CLFORMER_ERR_FORMAT,
                       "'%s': metadata \"%s\" is not an 8-digit lowercase hex checksum", r->path,
                       key);
    uint32_t got = cf_st_metadata_crc(r->meta_keys, r->meta_values, r->meta_count);
    for (size_t i = 0; whole && i < r->count; i++) {
        const cf_st_tensor *t = &r->tensors[i];
        got = cf_st_tensor_entry_crc(got, t->name, cf_st_dtype_name(t->dtype), t->ndim, t->shape);
    }
    if (got != want)
        return cf_fail(CLFORMER_ERR_FORMAT,
                       "'%s': the %s does not match its checksum (CRC-32C %08x, stored %08x): "
                       "the file was damaged or edited. An intended edit must also remove the "
                       "\"%s\" entry (the file then loads unchecked, and `clformer export` writes "
                       "a fresh checksum)",
                       r->path,
                       whole ? "header (config, vocabularies, train state, tokenizer, or a "
                               "tensor's dtype or shape)"
                             : "metadata (config, vocabularies, train state or tokenizer)",
                       (unsigned)got, (unsigned)want, key);
    return CLFORMER_OK;
}

static int span_order(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return strcmp(x->tensor->name, y->tensor->name); /* names are unique: a total order */
}

/* The tensors, sorted by offset, must tile the data area exactly. */
static clformer_status check_layout(const cf_st_reader *r, span *spans, size_t n)
{
    qsort(spans, n, sizeof *spans, span_order);
    uint64_t pos = 0;
    const char *prev = NULL;
    for (size_t i = 0; i < n; i++) {
        const span *s = &spans[i];
        if (s->begin < pos)
            return cf_fail(CLFORMER_ERR_FORMAT,
                           "'%s': tensors '%s' and '%s' overlap (data_offsets [%llu, %llu] begin "
                           "before %llu)",
                           r->path, prev, s->tensor->name, (unsigned long long)s->begin,
                           (unsigned long long)s->end, (unsigned long long)pos);
        if (s->begin > pos)
            return cf_fail(CLFORMER_ERR_FORMAT,
                           "'%s': gap of %llu unused bytes before tensor '%s' (data_offsets begin "
                           "at %llu, the data before ends at %llu)",
                           r->path, (unsigned long long)(s->begin - pos), s->tensor->name,
                           (unsigned long long)s->begin, (unsigned long long)pos);
        pos = s->end;
        prev = s->tensor->name;
    }
    uint64_t data_size = r->file_size - r->data_start;
    if (pos != data_size)
        return cf_fail(CLFORMER_ERR_FORMAT,
                       "'%s': %llu trailing bytes after the last tensor's data (the tensors "
                       "cover %llu of %llu bytes)",
                       r->path, (unsigned long long)(data_size - pos), (unsigned long long)pos,
                       (unsigned long long)data_size);
    return CLFORMER_OK;
}

/* Counts the '{', '[' and ',' outside strings: a JSON text needs one of them
 * for every value past its first, so this bounds the parse tree's size. */
static size_t json_token_count(const char *text, size_t n)
{
    size_t count = 0;
    bool in_string = false;
    for (size_t i = 0; i < n; i++) {
        char c = text[i];
        if (in_string) {
            if (c == '\\') i++;
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[' || c == ',') {
            count++;
        }
    }
    return count;
}

/* The CF_ST_CRC_KEY value: `n` checksums, one per tensor entry in header
 * order, into crcs[] (NULL when the file has none). */
static clformer_status parse_checksums(const cf_st_reader *r, size_t n, uint32_t **crcs)
{
    *crcs = NULL;
    const char *text = cf_st_metadata(r, CF_ST_CRC_KEY);
    if (!text) return CLFORMER_OK;
    bool ok = strlen(text) == (n ? 9 * n - 1 : 0);
    uint32_t *c = calloc(n ? n : 1, sizeof *c);
    if (!c) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory reading '%s'", r->path);
    for (size_t i = 0; ok && i < n; i++) {
        const char *w = text + 9 * i;
        for (int k = 0; ok && k < 8; k++) {
            char h = w[k];
            ok = (h >= '0' && h <= '9') || (h >= 'a' && h <= 'f');
            c[i] = (c[i] << 4) | (uint32_t)(h <= '9' ? h - '0' : h - 'a' + 10);
        }
        ok = ok && (i + 1 == n || w[8] == ' ');
    }
    if (!ok) {
        free(c);
        return cf_fail(CLFORMER_ERR_FORMAT,
                       "'%s': metadata \"%s\" is not %zu space-separated 8-digit lowercase hex "
                       "checksums (one per tensor)",
                       r->path, CF_ST_CRC_KEY, n);
    }
    *crcs = c;
    return CLFORMER_OK;
}

/* Parses and validates the JSON header (already read, `n` bytes). */
static clformer_status parse_header(cf_st_reader *r, const char *text, size_t n)
{
    size_t bad;
    if (!clformer_utf8_valid(text, n, &bad))
        return cf_fail(CLFORMER_ERR_FORMAT, "'%s': header is not valid UTF-8 (byte %zu of %zu)",
                       r->path, bad, n);
    if (text[0] != '{')
        return cf_fail(CLFORMER_ERR_FORMAT,
                       "'%s': header is not a JSON object (its first byte is not '{')", r->path);
    size_t tokens = json_token_count(text, n);
    if (tokens > CF_ST_MAX_JSON_TOKENS)
        return cf_fail(CLFORMER_ERR_FORMAT,
                       "'%s': header has %zu JSON values, more than a file of at most %d tensors "
                       "can need (not a safetensors file, or a damaged one)",
                       r->path, tokens, CF_ST_MAX_TENSORS);
    json_error_t err;
    r->root = json_loadb(text, n, JSON_REJECT_DUPLICATES, &err);
    if (!r->root) {
        if (json_error_code(&err) == json_error_duplicate_key)
            return cf_fail(CLFORMER_ERR_FORMAT, "'%s': header has a duplicate key (%s)", r->path,
                           err.text);
        return cf_fail(CLFORMER_ERR_FORMAT,
                       "'%s': header is not valid JSON: %s (line %d, column %d)", r->path,
                       err.text, err.line, err.column);
    }
    if (!json_is_object(r->root)) /* unreachable after the '{' check; kept for safety */
        return cf_fail(CLFORMER_ERR_FORMAT, "'%s': header is not a JSON object", r->path);

    json_t *meta = json_object_get(r->root, "__metadata__");
    if (meta) CF_TRY(parse_metadata(r, meta));
    size_t n_entries = json_object_size(r->root) - (meta ? 1 : 0);
    if (n_entries > CF_ST_MAX_TENSORS)
        return cf_fail(CLFORMER_ERR_FORMAT, "'%s' has %zu tensors; at most %d are supported",
                       r->path, n_entries, CF_ST_MAX_TENSORS);
    uint32_t *crcs;
    CF_TRY(parse_checksums(r, n_entries, &crcs));
    r->tensors = calloc(n_entries ? n_entries : 1, sizeof *r->tensors);
    span *spans = calloc(n_entries ? n_entries : 1, sizeof *spans);
    if (!r->tensors || !spans) {
        free(spans);
        free(crcs);
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory reading '%s'", r->path);
    }
    clformer_status st = CLFORMER_OK;
    const char *name;
    json_t *entry;
    json_object_foreach(r->root, name, entry) {
        if (strcmp(name, "__metadata__") == 0) continue;
        spans[r->count].tensor = &r->tensors[r->count];
        st = parse_tensor(r, name, entry, &spans[r->count]);
        if (st != CLFORMER_OK) break;
        if (crcs) { /* jansson iterates an object in file order */
            r->tensors[r->count].has_crc32c = true;
            r->tensors[r->count].crc32c = crcs[r->count];
        }
        r->count++;
    }
    free(crcs);
    if (st == CLFORMER_OK) st = check_header_crc(r); /* the tensors still in header order */
    if (st == CLFORMER_OK) st = check_layout(r, spans, r->count);
    if (st == CLFORMER_OK) {
        /* report the tensors in data order: that is the order they are best read in */
        cf_st_tensor *sorted = calloc(r->count ? r->count : 1, sizeof *sorted);
        if (!sorted) {
            st = cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory reading '%s'", r->path);
        } else {
            for (size_t i = 0; i < r->count; i++) {
                sorted[i] = *spans[i].tensor;
                sorted[i].file_offset = r->data_start + spans[i].begin;
            }
            free(r->tensors);
            r->tensors = sorted;
        }
    }
    free(spans);
    return st;
}

static clformer_status open_and_validate(cf_st_reader *r)
{
    r->fd = open(r->path, O_RDONLY);
    if (r->fd < 0)
        return cf_fail(CLFORMER_ERR_IO, "cannot open '%s': %s", r->path, strerror(errno));
    struct stat sb;
    if (fstat(r->fd, &sb) != 0 || !S_ISREG(sb.st_mode))
        return cf_fail(CLFORMER_ERR_IO, "'%s' is not a regular file", r->path);
    r->file_size = (uint64_t)sb.st_size;
    if (r->file_size < 8)
        return cf_fail(CLFORMER_ERR_FORMAT,
                       "'%s' is not a safetensors file: %llu bytes, shorter than the 8-byte "
                       "header length",
                       r->path, (unsigned long long)r->file_size);
    unsigned char len_bytes[8];
    if (!read_at(r->fd, len_bytes, 8, 0))
        return cf_fail(CLFORMER_ERR_IO, "cannot read '%s': %s", r->path, strerror(errno));
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | len_bytes[i];
    if (n == 0)
        return cf_fail(CLFORMER_ERR_FORMAT, "'%s': header length is 0 (not a safetensors file?)",
                       r->path);
    if (n > CF_ST_MAX_HEADER)
        return cf_fail(CLFORMER_ERR_FORMAT,
                       "'%s': header length %llu is over the %u-byte limit (not a safetensors "
                       "file?)",
                       r->path, (unsigned long long)n, CF_ST_MAX_HEADER);
    if (n > r->file_size - 8)
        return cf_fail(CLFORMER_ERR_FORMAT,
                       "'%s': header length %llu runs past the end of the file (%llu bytes; "
                       "truncated?)",
                       r->path, (unsigned long long)n, (unsigned long long)r->file_size);
    r->data_start = 8 + n;
    char *text = malloc((size_t)n);
    if (!text)
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory reading '%s'", r->path);
    clformer_status st;
    if (!read_at(r->fd, text, (size_t)n, 8))
        st = cf_fail(CLFORMER_ERR_IO, "cannot read the header of '%s'", r->path);
    else
        st = parse_header(r, text, (size_t)n);
    free(text);
    return st;
}

clformer_status cf_st_open(const char *path, cf_st_reader **reader)
{
    *reader = NULL;
    cf_st_reader *r = calloc(1, sizeof *r);
    if (r) r->fd = -1;
    if (!r || !(r->path = strdup(path))) {
        free(r);
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    clformer_status st = open_and_validate(r);
    if (st != CLFORMER_OK) {
        cf_st_close(r);
        return st;
    }
    *reader = r;
    return CLFORMER_OK;
}

void cf_st_close(cf_st_reader *r)
{
    if (!r) return;
    if (r->fd >= 0) close(r->fd);
    json_decref(r->root);
    free(r->tensors);
    free(r->meta_keys);
    free(r->meta_values);
    free(r->path);
    free(r);
}

const char *cf_st_path(const cf_st_reader *r) { return r->path; }
size_t cf_st_count(const cf_st_reader *r) { return r->count; }

const cf_st_tensor *cf_st_tensor_at(const cf_st_reader *r, size_t index)
{
    return index < r->count ? &r->tensors[index] : NULL;
}

/* A linear search: checkpoints hold hundreds of tensors, not millions. */
const cf_st_tensor *cf_st_find(const cf_st_reader *r, const char *name)
{
    for (size_t i = 0; i < r->count; i++)
        if (strcmp(r->tensors[i].name, name) == 0) return &r->tensors[i];
    return NULL;
}

clformer_status cf_st_expect(const cf_st_reader *r, const char *name, cf_st_dtype dtype,
                             int ndim, const int64_t *shape, const cf_st_tensor **tensor)
{
    if (tensor) *tensor = NULL;
    const cf_st_tensor *t = cf_st_find(r, name);
    if (!t) return cf_fail(CLFORMER_ERR_FORMAT, "'%s' has no tensor '%s'", r->path, name);
    bool same = t->dtype == dtype && t->ndim == ndim;
    for (int i = 0; same && i < ndim; i++) same = t->shape[i] == shape[i];
    if (!same) {
        char got[256], want[256];
        return cf_fail(CLFORMER_ERR_FORMAT, "'%s': tensor '%s' is %s %s; expected %s %s", r->path,
                       name, cf_st_dtype_name(t->dtype),
                       shape_text(got, sizeof got, t->ndim, t->shape), cf_st_dtype_name(dtype),
                       shape_text(want, sizeof want, ndim, shape));
    }
    if (tensor) *tensor = t;
    return CLFORMER_OK;
}

clformer_status cf_st_read(const cf_st_reader *r, const cf_st_tensor *t, void *dst,
                           size_t dst_size)
{
    if (dst_size != t->nbytes)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "reading tensor '%s' of '%s': it is %llu bytes, the destination %zu",
                       t->name, r->path, (unsigned long long)t->nbytes, dst_size);
    errno = 0;
    if (dst_size > 0 && !read_at(r->fd, dst, dst_size, t->file_offset))
        return cf_fail(CLFORMER_ERR_IO,
                       "cannot read tensor '%s' of '%s' (%s; did the file change?)", t->name,
                       r->path, errno ? strerror(errno) : "short read");
    uint32_t crc = t->has_crc32c ? cf_crc32c(0, dst, dst_size) : 0;
    if (crc != t->crc32c)
        return cf_fail(CLFORMER_ERR_FORMAT,
                       "'%s': tensor '%s' does not match its stored checksum (CRC-32C %08x, "
                       "stored %08x): the file is damaged or was edited; use a good copy",
                       r->path, t->name, (unsigned)crc, (unsigned)t->crc32c);
    return CLFORMER_OK;
}

bool cf_st_is_float(cf_st_dtype d) { return d == CF_ST_F32 || d == CF_ST_BF16 || d == CF_ST_F16; }

/* The error for a tensor of a dtype clformer does not read as floats. */
static clformer_status not_float(const cf_st_reader *r, const cf_st_tensor *t)
{
    return cf_fail(CLFORMER_ERR_FORMAT,
                   "'%s': tensor '%s' is %s; clformer reads weights stored as F32, BF16 or F16: "
                   "convert the model first (in PyTorch: model.to(torch.float32) or "
                   "torch.bfloat16, then save_pretrained)",
                   r->path, t->name, cf_st_dtype_name(t->dtype));
}

clformer_status cf_st_expect_float(const cf_st_reader *r, const char *name, int ndim,
                                   const int64_t *shape, const cf_st_tensor **tensor)
{
    const cf_st_tensor *t = cf_st_find(r, name);
    if (t && !cf_st_is_float(t->dtype)) {
        if (tensor) *tensor = NULL;
        return not_float(r, t);
    }
    return cf_st_expect(r, name, t ? t->dtype : CF_ST_F32, ndim, shape, tensor);
}

clformer_status cf_st_read_f32(const cf_st_reader *r, const cf_st_tensor *t, float *dst, size_t n)
{
    if (!cf_st_is_float(t->dtype)) return not_float(r, t);
    if (n != t->numel)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "reading tensor '%s' of '%s': it has %llu elements, the destination %zu",
                       t->name, r->path, (unsigned long long)t->numel, n);
    if (t->dtype == CF_ST_F32) return cf_st_read(r, t, dst, n * sizeof *dst);
    uint16_t *h = malloc(n ? n * sizeof *h : 1);
    if (!h) return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    clformer_status st = cf_st_read(r, t, h, n * sizeof *h);
    if (st == CLFORMER_OK) {
        if (t->dtype == CF_ST_BF16) cf_f32_from_bf16_n(dst, h, n);
        else cf_f32_from_f16_n(dst, h, n);
    }
    free(h);
    return st;
}

const char *cf_st_metadata(const cf_st_reader *r, const char *key)
{
    for (size_t i = 0; i < r->meta_count; i++)
        if (strcmp(r->meta_keys[i], key) == 0) return r->meta_values[i];
    return NULL;
}

size_t cf_st_metadata_count(const cf_st_reader *r) { return r->meta_count; }

void cf_st_metadata_at(const cf_st_reader *r, size_t index, const char **key, const char **value)
{
    *key = index < r->meta_count ? r->meta_keys[index] : NULL;
    *value = index < r->meta_count ? r->meta_values[index] : NULL;
}

/* --- writer ----------------------------------------------------------------------- */

typedef struct {
    char *name;
    cf_st_dtype dtype;
    int ndim;
    int64_t shape[CF_ST_MAX_DIMS];
    uint64_t nbytes;
} decl;

typedef struct {
    char *key, *value;
} meta_entry;

typedef enum { W_DECLARING, W_WRITING, W_COMMITTED, W_FAILED } writer_state;

struct cf_st_writer {
    char *path;
    writer_state state;
    decl *tensors;
    size_t count, cap;
    meta_entry *meta;
    size_t meta_count, meta_cap;
    uint64_t data_size; /* sum of the declared sizes */
    size_t next;        /* the next tensor cf_st_write expects */
    cf_atomic_file file;
    bool file_open;
    bool checksums;      /* cf_st_checksums was called */
    uint32_t *crcs;      /* each written tensor's CRC-32C, in declared order */
    uint64_t crc_offset; /* file offset of the CF_ST_CRC_KEY placeholder */
};

/* Every failure is final: the temp file goes, and later calls fail. */
static clformer_status writer_fail(cf_st_writer *w, clformer_status st)
{
    if (w->file_open) cf_atomic_abort(&w->file);
    w->file_open = false;
    w->state = W_FAILED;
    return st;
}

static clformer_status writer_check_state(cf_st_writer *w, writer_state want, const char *call)
{
    if (w->state == want) return CLFORMER_OK;
    if (w->state == W_FAILED)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "%s: the safetensors writer for '%s' already failed; free it", call,
                       w->path);
    static const char *const what[] = {"before cf_st_begin", "between cf_st_begin and commit"};
    return writer_fail(w, cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                                  "%s on the safetensors writer for '%s' is only allowed %s",
                                  call, w->path, what[want]));
}

clformer_status cf_st_writer_new(const char *path, cf_st_writer **writer)
{
    *writer = NULL;
    cf_st_writer *w = calloc(1, sizeof *w);
    if (!w || !(w->path = strdup(path))) {
        free(w);
        return cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory");
    }
    *writer = w;
    return CLFORMER_OK;
}

/* Grows an array of `size`-byte items to hold one more. */
static bool grow(void **items, size_t *cap, size_t count, size_t size)
{
    if (count < *cap) return true;
    size_t n = *cap ? 2 * *cap : 16;
    void *p = realloc(*items, n * size);
    if (!p) return false;
    *items = p;
    *cap = n;
    return true;
}

clformer_status cf_st_set_metadata(cf_st_writer *w, const char *key, const char *value)
{
    CF_TRY(writer_check_state(w, W_DECLARING, "cf_st_set_metadata"));
    if (!utf8_valid(key) || !utf8_valid(value))
        return writer_fail(w, cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                                      "'%s': metadata key or value of \"%s\" is not valid UTF-8",
                                      w->path, key));
    for (size_t i = 0; i < w->meta_count; i++)
        if (strcmp(w->meta[i].key, key) == 0)
            return writer_fail(w, cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                                          "'%s': metadata key \"%s\" is set twice", w->path,
                                          key));
    if (!grow((void **)&w->meta, &w->meta_cap, w->meta_count, sizeof *w->meta))
        return writer_fail(w, cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory"));
    meta_entry *m = &w->meta[w->meta_count];
    m->key = strdup(key);
    m->value = strdup(value);
    if (!m->key || !m->value) {
        free(m->key);
        free(m->value);
        return writer_fail(w, cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory"));
    }
    w->meta_count++;
    return CLFORMER_OK;
}

clformer_status cf_st_declare(cf_st_writer *w, const char *name, cf_st_dtype dtype, int ndim,
                              const int64_t *shape)
{
    CF_TRY(writer_check_state(w, W_DECLARING, "cf_st_declare"));
#define DECLARE_FAIL(...) writer_fail(w, cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, __VA_ARGS__))
    if (!name[0] || strcmp(name, "__metadata__") == 0 || !utf8_valid(name))
        return DECLARE_FAIL("'%s': \"%s\" is not a valid tensor name (non-empty UTF-8, not "
                            "__metadata__)", w->path, name);
    if (!dtype_valid(dtype))
        return DECLARE_FAIL("'%s': tensor '%s': invalid dtype %d", w->path, name, (int)dtype);
    if (ndim < 0 || ndim > CF_ST_MAX_DIMS)
        return DECLARE_FAIL("'%s': tensor '%s': %d dimensions (0 to %d allowed)", w->path, name,
                            ndim, CF_ST_MAX_DIMS);
    if (ndim > 0 && !shape)
        return DECLARE_FAIL("'%s': tensor '%s': shape is NULL", w->path, name);
    for (size_t i = 0; i < w->count; i++)
        if (strcmp(w->tensors[i].name, name) == 0)
            return DECLARE_FAIL("'%s': tensor '%s' is declared twice", w->path, name);
    decl d = {.dtype = dtype, .ndim = ndim};
    uint64_t numel = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return DECLARE_FAIL("'%s': tensor '%s': dimension %d is negative (%lld)", w->path,
                                name, i, (long long)shape[i]);
        d.shape[i] = shape[i];
        if (!mul_u64(numel, (uint64_t)shape[i], &numel))
            return DECLARE_FAIL("'%s': tensor '%s': element count overflows", w->path, name);
    }
    /* offsets are JSON integers (int64 in jansson) */
    if (!mul_u64(numel, cf_st_dtype_size(dtype), &d.nbytes) ||
        d.nbytes > (uint64_t)INT64_MAX - w->data_size)
        return DECLARE_FAIL("'%s': tensor '%s': byte size overflows", w->path, name);
#undef DECLARE_FAIL
    if (!grow((void **)&w->tensors, &w->cap, w->count, sizeof *w->tensors) ||
        !(d.name = strdup(name)))
        return writer_fail(w, cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory"));
    w->tensors[w->count++] = d;
    w->data_size += d.nbytes;
    return CLFORMER_OK;
}

clformer_status cf_st_checksums(cf_st_writer *w)
{
    CF_TRY(writer_check_state(w, W_DECLARING, "cf_st_checksums"));
    w->checksums = true;
    return CLFORMER_OK;
}

/* n zero checksums in CF_ST_CRC_KEY's layout: patched in place at commit. */
static clformer_status declare_checksums(cf_st_writer *w)
{
    size_t len = w->count ? 9 * w->count - 1 : 0;
    char *placeholder = malloc(len + 1);
    w->crcs = calloc(w->count ? w->count : 1, sizeof *w->crcs);
    if (!placeholder || !w->crcs) {
        free(placeholder);
        return writer_fail(w, cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory"));
    }
    for (size_t i = 0; i < len; i++) placeholder[i] = i % 9 == 8 ? ' ' : '0';
    placeholder[len] = '\0';
    clformer_status st = cf_st_set_metadata(w, CF_ST_CRC_KEY, placeholder);
    free(placeholder);
    CF_TRY(st);
    /* the metadata's own checksum, now that every entry is set */
    const char **keys = malloc((w->meta_count ? w->meta_count : 1) * sizeof *keys);
    const char **values = malloc((w->meta_count ? w->meta_count : 1) * sizeof *values);
    if (!keys || !values) {
        free(keys);
        free(values);
        return writer_fail(w, cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory"));
    }
    for (size_t i = 0; i < w->meta_count; i++) keys[i] = w->meta[i].key, values[i] = w->meta[i].value;
    uint32_t crc = cf_st_metadata_crc(keys, values, w->meta_count);
    free(keys);
    free(values);
    for (size_t i = 0; i < w->count; i++) { /* the header lists them in declared order */
        const decl *d = &w->tensors[i];
        crc = cf_st_tensor_entry_crc(crc, d->name, cf_st_dtype_name(d->dtype), d->ndim, d->shape);
    }
    char text[9];
    snprintf(text, sizeof text, "%08x", (unsigned)crc);
    return cf_st_set_metadata(w, CF_ST_HEADER_CRC_KEY, text);
}

static int meta_order(const void *a, const void *b)
{
    return strcmp(((const meta_entry *)a)->key, ((const meta_entry *)b)->key);
}

/* The header JSON (unpadded) as a malloc'd string, or NULL if out of memory. */
static char *header_json(cf_st_writer *w)
{
    json_t *root = json_object();
    bool ok = root != NULL;
    if (ok && w->meta_count > 0) {
        qsort(w->meta, w->meta_count, sizeof *w->meta, meta_order);
        json_t *meta = json_object();
        ok = meta && json_object_set_new(root, "__metadata__", meta) == 0;
        for (size_t i = 0; ok && i < w->meta_count; i++)
            ok = json_object_set_new(meta, w->meta[i].key, json_string(w->meta[i].value)) == 0;
    }
    uint64_t offset = 0;
    for (size_t i = 0; ok && i < w->count; i++) {
        const decl *d = &w->tensors[i];
        json_t *shape = json_array();
        for (int k = 0; k < d->ndim; k++)
            json_array_append_new(shape, json_integer(d->shape[k]));
        bool shape_ok = shape && json_array_size(shape) == (size_t)d->ndim;
        /* json_pack keeps the field order given here and takes `shape` even on failure */
        json_t *entry = json_pack("{s:s, s:o, s:[I, I]}", "dtype", cf_st_dtype_name(d->dtype),
                                  "shape", shape, "data_offsets", (json_int_t)offset,
                                  (json_int_t)(offset + d->nbytes));
        ok = json_object_set_new(root, d->name, entry) == 0 && shape_ok; /* takes `entry` */
        offset += d->nbytes;
    }
    char *text = ok ? json_dumps(root, JSON_COMPACT) : NULL;
    json_decref(root);
    return text;
}

clformer_status cf_st_begin(cf_st_writer *w)
{
    CF_TRY(writer_check_state(w, W_DECLARING, "cf_st_begin"));
    if (w->checksums) CF_TRY(declare_checksums(w));
    char *json = header_json(w);
    if (!json) return writer_fail(w, cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory"));
    size_t len = strlen(json);
    if (w->checksums) {
        /* An unescaped quote only delimits strings, so this pattern is the key. */
        const char *key = strstr(json, "\"" CF_ST_CRC_KEY "\":\"");
        w->crc_offset = 8 + (uint64_t)(key - json) + strlen("\"" CF_ST_CRC_KEY "\":\"");
    }
    size_t padded = (len + 7) / 8 * 8;
    if (padded > CF_ST_MAX_HEADER) {
        free(json);
        return writer_fail(w, cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                                      "'%s': the header would be %zu bytes, over the %u-byte "
                                      "limit",
                                      w->path, padded, CF_ST_MAX_HEADER));
    }
    unsigned char prefix[8 + 8];
    for (int i = 0; i < 8; i++) prefix[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    memset(prefix + 8, ' ', 8);
    clformer_status st = cf_atomic_open(&w->file, w->path);
    if (st != CLFORMER_OK) {
        free(json);
        return writer_fail(w, st);
    }
    w->file_open = true;
    st = cf_atomic_write(&w->file, prefix, 8);
    if (st == CLFORMER_OK) st = cf_atomic_write(&w->file, json, len);
    if (st == CLFORMER_OK) st = cf_atomic_write(&w->file, prefix + 8, padded - len);
    free(json);
    if (st != CLFORMER_OK) return writer_fail(w, st);
    w->state = W_WRITING;
    return CLFORMER_OK;
}

clformer_status cf_st_write(cf_st_writer *w, const char *name, const void *data, size_t size)
{
    CF_TRY(writer_check_state(w, W_WRITING, "cf_st_write"));
    if (w->next == w->count)
        return writer_fail(w, cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                                      "'%s': tensor '%s' written after all %zu declared tensors",
                                      w->path, name, w->count));
    const decl *d = &w->tensors[w->next];
    if (strcmp(name, d->name) != 0)
        return writer_fail(w, cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                                      "'%s': tensor '%s' written where '%s' comes next (tensors "
                                      "are written in declared order)",
                                      w->path, name, d->name));
    if (size != d->nbytes) {
        char shape[256];
        return writer_fail(w, cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                                      "'%s': tensor '%s' is %s %s, %llu bytes, but %zu were "
                                      "written",
                                      w->path, name, cf_st_dtype_name(d->dtype),
                                      shape_text(shape, sizeof shape, d->ndim, d->shape),
                                      (unsigned long long)d->nbytes, size));
    }
    clformer_status st = cf_atomic_write(&w->file, data, size);
    if (st != CLFORMER_OK) return writer_fail(w, st);
    if (w->checksums) w->crcs[w->next] = cf_crc32c(0, data, size);
    w->next++;
    return CLFORMER_OK;
}

cf_st_dtype cf_st_dtype_of(clformer_precision p)
{
    return p == CLFORMER_BF16 ? CF_ST_BF16 : p == CLFORMER_FP16 ? CF_ST_F16 : CF_ST_F32;
}

clformer_status cf_st_write_f32(cf_st_writer *w, const char *name, const float *data, size_t n)
{
    CF_TRY(writer_check_state(w, W_WRITING, "cf_st_write_f32"));
    const cf_st_dtype dtype = w->next < w->count ? w->tensors[w->next].dtype : CF_ST_F32;
    if (dtype == CF_ST_F32 || !cf_st_is_float(dtype))
        return cf_st_write(w, name, data, n * sizeof *data); /* which checks the rest */
    uint16_t *h = malloc(n ? n * sizeof *h : 1);
    if (!h) return writer_fail(w, cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory"));
    if (dtype == CF_ST_BF16) cf_bf16_from_f32_n(h, data, n);
    else cf_f16_from_f32_n(h, data, n);
    for (size_t i = 0; i < n; i++)
        if (isfinite(data[i]) && (h[i] & 0x7FFF) == (dtype == CF_ST_BF16 ? 0x7F80 : 0x7C00)) {
            free(h);
            return writer_fail(
                w, cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                           "'%s': tensor '%s' element %zu is %g, beyond the range of %s (it "
                           "would become infinite): export as bf16 or fp32 instead",
                           w->path, name, i, (double)data[i], cf_st_dtype_name(dtype)));
        }
    clformer_status st = cf_st_write(w, name, h, n * sizeof *h);
    free(h);
    return st;
}

clformer_status cf_st_commit(cf_st_writer *w)
{
    CF_TRY(writer_check_state(w, W_WRITING, "cf_st_commit"));
    if (w->next != w->count)
        return writer_fail(w, cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                                      "'%s': only %zu of %zu declared tensors were written "
                                      "(next: '%s'); nothing was saved",
                                      w->path, w->next, w->count, w->tensors[w->next].name));
    if (w->checksums && w->count > 0) {
        char *text = malloc(9 * w->count + 1);
        if (!text) return writer_fail(w, cf_fail(CLFORMER_ERR_OUT_OF_MEMORY, "out of host memory"));
        for (size_t i = 0; i < w->count; i++)
            snprintf(text + 9 * i, 10, "%08x ", (unsigned)w->crcs[i]);
        clformer_status st = cf_atomic_patch(&w->file, w->crc_offset, text, 9 * w->count - 1);
        free(text);
        if (st != CLFORMER_OK) return writer_fail(w, st);
    }
    w->file_open = false; /* commit cleans up the temp file itself on failure */
    clformer_status st = cf_atomic_commit(&w->file);
    if (st != CLFORMER_OK) return writer_fail(w, st);
    w->state = W_COMMITTED;
    return CLFORMER_OK;
}

void cf_st_writer_free(cf_st_writer *w)
{
    if (!w) return;
    if (w->file_open) cf_atomic_abort(&w->file);
    for (size_t i = 0; i < w->count; i++) free(w->tensors[i].name);
    for (size_t i = 0; i < w->meta_count; i++) {
        free(w->meta[i].key);
        free(w->meta[i].value);
    }
    free(w->tensors);
    free(w->meta);
    free(w->crcs);
    free(w->path);
    free(w);
}
