/*
 * Safetensors reader and writer (runtime/format/safetensors.h): round trips over
 * every dtype, scalars and empty tensors; the writer's promises (exact header
 * bytes, deterministic, atomic, exact sizes and order); files written by
 * Python's safetensors (tests/data/safetensors, made by
 * tools/reference/make_safetensors_golden.py); and a corpus of broken files built here,
 * one or more per rule the reader enforces, each refused with its own message.
 * tests/CMakeLists.txt also builds this file as test_safetensors_asan, under
 * AddressSanitizer and UBSan, so the parser is checked on hostile input.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "safetensors.h"

/* --- scratch files ---------------------------------------------------------------- */

static char tmpdir[64];

static int make_tmpdir(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/cf_safetensors_XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmpdir(void **state)
{
    (void)state;
    DIR *d = opendir(tmpdir);
    if (!d) return -1;
    struct dirent *e;
    char path[512];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(path, sizeof path, "%s/%s", tmpdir, e->d_name);
        if (remove(path) != 0) rmdir(path);
    }
    closedir(d);
    return rmdir(tmpdir);
}

/* tmpdir/name; a few results may be live at once */
static const char *tpath(const char *name)
{
    static char ring[4][512];
    static int next;
    char *p = ring[next++ % 4];
    snprintf(p, sizeof ring[0], "%s/%s", tmpdir, name);
    return p;
}

static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    if (n) assert_int_equal(fwrite(data, 1, n, fp), n);
    assert_int_equal(fclose(fp), 0);
}

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) fail_msg("cannot open '%s'", path);
    fseek(fp, 0, SEEK_END);
    long size = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)size + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)size, fp), (size_t)size);
    fclose(fp);
    *n = (size_t)size;
    return buf;
}

/* Fails if tmpdir holds `name` or anything starting with it (a temp file). */
static void assert_no_file_like(const char *name)
{
    DIR *d = opendir(tmpdir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, name, strlen(name)) == 0) {
            closedir(d);
            fail_msg("'%s' was left behind in %s", e->d_name, tmpdir);
        }
    closedir(d);
}

static void assert_ok_st(clformer_status st, const char *what)
{
    if (st != CLFORMER_OK)
        fail_msg("%s: %s: %s", what, clformer_status_name(st), clformer_last_error());
}

/* The call failed with `want`, and its message holds `needle`. */
static void assert_fails(clformer_status st, clformer_status want, const char *needle)
{
    if (st != want || !strstr(clformer_last_error(), needle))
        fail_msg("expected %s with \"%s\", got %s: %s", clformer_status_name(want), needle,
                 clformer_status_name(st), clformer_last_error());
}

/* --- round trip ----------------------------------------------------------------------- */

static const float a_f32[6] = {0.0f, -1.5f, 3.25f, 1e-30f, -0.0f, 65504.0f};
static const double b_f64[3] = {1.0 / 3.0, -2.0, 1e300};
static const int32_t c_i32[4] = {0, -1, INT32_MAX, INT32_MIN};
static const int64_t d_i64[1] = {INT64_MIN};
static const uint8_t e_u8[5] = {0, 1, 127, 128, 255}; /* odd size: later offsets unaligned */
static const uint16_t f_f16[3] = {0x3c00, 0xc000, 0x7bff};
static const uint16_t g_bf16[2] = {0x3f80, 0xff80};
static const float scalar = 2.5f;

typedef struct {
    const char *name;
    cf_st_dtype dtype;
    int ndim;
    int64_t shape[3];
    const void *data;
    size_t nbytes;
} spec;

static const spec specs[] = {
    {"a.f32", CF_ST_F32, 2, {2, 3}, a_f32, sizeof a_f32},
    {"b.f64", CF_ST_F64, 1, {3}, b_f64, sizeof b_f64},
    {"c.i32", CF_ST_I32, 2, {2, 2}, c_i32, sizeof c_i32},
    {"d.i64", CF_ST_I64, 1, {1}, d_i64, sizeof d_i64},
    {"e.u8", CF_ST_U8, 1, {5}, e_u8, sizeof e_u8},
    {"f.f16", CF_ST_F16, 1, {3}, f_f16, sizeof f_f16},
    {"g.bf16", CF_ST_BF16, 1, {2}, g_bf16, sizeof g_bf16},
    {"scalar", CF_ST_F32, 0, {0}, &scalar, sizeof scalar},
    {"empty", CF_ST_F32, 3, {2, 0, 4}, NULL, 0},
    {"\xc3\xa9t\xc3\xa9 \"x\"", CF_ST_U8, 1, {1}, e_u8, 1}, /* "été \"x\"": a UTF-8 name */
};
#define N_SPECS (sizeof specs / sizeof specs[0])

static const char *const meta_keys[] = {"clformer.format", "unicode", "quotes", "json", ""};
static const char *const meta_values[] = {
    "1",
    "h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93 \xf0\x9d\x84\x9e", /* héllo wörld ✓ 𝄞 */
    "say \"hi\" \\ back/slash\nnew line\ttab",
    "{\"a\":[1,2],\"b\":null}",
    "empty key",
};
#define N_META (sizeof meta_keys / sizeof meta_keys[0])

/* Writes specs[] and meta (in the order `meta_order` gives) to `path`. */
static void write_specs(const char *path, const size_t *meta_order)
{
    cf_st_writer *w;
    unlink(path); /* a write without a door makes new files only */
    assert_ok_st(cf_st_writer_new(path, &w), "writer_new");
    for (size_t i = 0; i < N_META; i++) {
        size_t k = meta_order ? meta_order[i] : i;
        assert_ok_st(cf_st_set_metadata(w, meta_keys[k], meta_values[k]), "set_metadata");
    }
    for (size_t i = 0; i < N_SPECS; i++)
        assert_ok_st(cf_st_declare(w, specs[i].name, specs[i].dtype, specs[i].ndim,
                                   specs[i].shape),
                     specs[i].name);
    assert_ok_st(cf_st_begin(w), "begin");
    for (size_t i = 0; i < N_SPECS; i++)
        assert_ok_st(cf_st_write(w, specs[i].name, specs[i].data, specs[i].nbytes), "write");
    assert_ok_st(cf_st_commit(w), "commit");
    cf_st_writer_free(w);
}

static void round_trip_every_dtype(void **state)
{
    (void)state;
    const char *path = tpath("round.safetensors");
    write_specs(path, NULL);

    cf_st_reader *r;
    assert_ok_st(cf_st_open(path, &r), "open");
    assert_string_equal(cf_st_path(r), path);
    assert_int_equal(cf_st_count(r), N_SPECS);
    size_t total = 0;
    for (size_t i = 0; i < N_SPECS; i++) {
        const cf_st_tensor *t = cf_st_tensor_at(r, i); /* data order = declared order */
        assert_string_equal(t->name, specs[i].name);
        assert_ptr_equal(cf_st_find(r, specs[i].name), t);
        assert_int_equal(t->dtype, specs[i].dtype);
        assert_int_equal(t->ndim, specs[i].ndim);
        for (int k = 0; k < t->ndim; k++) assert_int_equal(t->shape[k], specs[i].shape[k]);
        assert_int_equal(t->nbytes, specs[i].nbytes);
        assert_int_equal(t->numel * cf_st_dtype_size(t->dtype), t->nbytes);
        assert_ok_st(cf_st_expect(r, specs[i].name, specs[i].dtype, specs[i].ndim,
                                  specs[i].shape, NULL),
                     "expect");
        unsigned char buf[64];
        assert_ok_st(cf_st_read(r, t, buf, (size_t)t->nbytes), "read");
        if (t->nbytes) assert_memory_equal(buf, specs[i].data, t->nbytes);
        total += specs[i].nbytes;
    }
    assert_int_equal(cf_st_tensor_at(r, 0)->file_offset % 8, 0); /* data area aligned */
    assert_null(cf_st_tensor_at(r, N_SPECS));
    assert_null(cf_st_find(r, "missing"));

    assert_int_equal(cf_st_metadata_count(r), N_META);
    for (size_t i = 0; i < N_META; i++) {
        const char *v = cf_st_metadata(r, meta_keys[i]);
        assert_non_null(v);
        assert_string_equal(v, meta_values[i]);
    }
    assert_null(cf_st_metadata(r, "absent"));
    const char *k0, *v0;
    cf_st_metadata_at(r, 0, &k0, &v0); /* sorted by key: "" comes first */
    assert_string_equal(k0, "");
    assert_string_equal(v0, "empty key");
    cf_st_close(r);

    /* 8 + padded header + exactly the data */
    size_t n;
    unsigned char *bytes = slurp(path, &n);
    uint64_t header = 0;
    for (int i = 7; i >= 0; i--) header = (header << 8) | bytes[i];
    assert_int_equal(header % 8, 0);
    assert_int_equal(n, 8 + header + total);
    free(bytes);
}

/* The documented header layout, byte for byte. */
static void header_bytes_are_exact(void **state)
{
    (void)state;
    const char *path = tpath("exact.safetensors");
    cf_st_writer *w;
    assert_ok_st(cf_st_writer_new(path, &w), "new");
    assert_ok_st(cf_st_set_metadata(w, "b", "2 \"q\""), "meta");
    assert_ok_st(cf_st_set_metadata(w, "a", "\xc3\xa9"), "meta");
    const int64_t two[1] = {2};
    assert_ok_st(cf_st_declare(w, "x", CF_ST_F32, 1, two), "declare");
    assert_ok_st(cf_st_declare(w, "s", CF_ST_I64, 0, NULL), "declare");
    assert_ok_st(cf_st_begin(w), "begin");
    const float x[2] = {1.0f, 2.0f};
    const int64_t s = 7;
    assert_ok_st(cf_st_write(w, "x", x, sizeof x), "write");
    assert_ok_st(cf_st_write(w, "s", &s, sizeof s), "write");
    assert_ok_st(cf_st_commit(w), "commit");
    cf_st_writer_free(w);

    const char *json = "{\"__metadata__\":{\"a\":\"\xc3\xa9\",\"b\":\"2 \\\"q\\\"\"},"
                       "\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                       "\"s\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[8,16]}}";
    size_t len = strlen(json), padded = (len + 7) / 8 * 8;
    size_t n;
    unsigned char *bytes = slurp(path, &n);
    assert_int_equal(n, 8 + padded + 16);
    for (int i = 0; i < 8; i++) assert_int_equal(bytes[i], (padded >> (8 * i)) & 0xff);
    assert_memory_equal(bytes + 8, json, len);
    for (size_t i = len; i < padded; i++) assert_int_equal(bytes[8 + i], ' ');
    assert_memory_equal(bytes + 8 + padded, x, sizeof x);
    assert_memory_equal(bytes + 8 + padded + 8, &s, sizeof s);
    free(bytes);
}

/* Metadata set in any order gives the same bytes. */
static void header_is_deterministic(void **state)
{
    (void)state;
    const size_t reversed[N_META] = {4, 3, 2, 1, 0};
    write_specs(tpath("det1.safetensors"), NULL);
    write_specs(tpath("det2.safetensors"), reversed);
    size_t n1, n2;
    unsigned char *b1 = slurp(tpath("det1.safetensors"), &n1);
    unsigned char *b2 = slurp(tpath("det2.safetensors"), &n2);
    assert_int_equal(n1, n2);
    assert_memory_equal(b1, b2, n1);
    free(b1);
    free(b2);
}

static void empty_file_round_trips(void **state)
{
    (void)state;
    const char *path = tpath("none.safetensors");
    cf_st_writer *w;
    assert_ok_st(cf_st_writer_new(path, &w), "new");
    assert_ok_st(cf_st_begin(w), "begin");
    assert_ok_st(cf_st_commit(w), "commit");
    cf_st_writer_free(w);
    size_t n;
    unsigned char *bytes = slurp(path, &n);
    assert_int_equal(n, 16); /* "{}" padded to 8 */
    assert_memory_equal(bytes + 8, "{}      ", 8);
    free(bytes);
    cf_st_reader *r;
    assert_ok_st(cf_st_open(path, &r), "open");
    assert_int_equal(cf_st_count(r), 0);
    assert_int_equal(cf_st_metadata_count(r), 0);
    cf_st_close(r);
}

static void expect_and_read_check_the_caller(void **state)
{
    (void)state;
    const char *path = tpath("round.safetensors");
    write_specs(path, NULL);
    cf_st_reader *r;
    assert_ok_st(cf_st_open(path, &r), "open");
    const int64_t shape23[2] = {2, 3}, shape32[2] = {3, 2};
    const cf_st_tensor *t;
    assert_fails(cf_st_expect(r, "a.f32", CF_ST_F64, 2, shape23, &t), CLFORMER_ERR_FORMAT,
                 "tensor 'a.f32' is F32 [2, 3]; expected F64 [2, 3]");
    assert_null(t);
    assert_fails(cf_st_expect(r, "a.f32", CF_ST_F32, 2, shape32, &t), CLFORMER_ERR_FORMAT,
                 "is F32 [2, 3]; expected F32 [3, 2]");
    assert_fails(cf_st_expect(r, "a.f32", CF_ST_F32, 1, shape23, &t), CLFORMER_ERR_FORMAT,
                 "expected F32 [2]");
    assert_fails(cf_st_expect(r, "nope", CF_ST_F32, 2, shape23, &t), CLFORMER_ERR_FORMAT,
                 "has no tensor 'nope'");
    assert_ok_st(cf_st_expect(r, "a.f32", CF_ST_F32, 2, shape23, &t), "expect");
    assert_non_null(t);
    float buf[7];
    assert_fails(cf_st_read(r, t, buf, sizeof buf), CLFORMER_ERR_INVALID_ARGUMENT,
                 "it is 24 bytes, the destination 28");
    assert_fails(cf_st_read(r, t, buf, 20), CLFORMER_ERR_INVALID_ARGUMENT, "destination 20");
    cf_st_close(r);
    cf_st_close(NULL);
}

/* 16-bit float tensors: written from fp32 (rounded), read back as fp32
 * (exact), with checksums; the errors name the tensor and the fix. */
static void half_tensors_round_trip(void **state)
{
    (void)state;
    const char *path = tpath("half.safetensors");
    const int64_t six[1] = {6}, three[1] = {3};
    const float big[3] = {1.0f, 70000.0f, 2.0f};
    const int32_t ints[3] = {1, 2, 3};
    cf_st_writer *w;
    assert_ok_st(cf_st_writer_new(path, &w), "new");
    assert_ok_st(cf_st_checksums(w), "checksums");
    assert_ok_st(cf_st_declare(w, "b", cf_st_dtype_of(CLFORMER_BF16), 1, six), "declare");
    assert_ok_st(cf_st_declare(w, "h", cf_st_dtype_of(CLFORMER_FP16), 1, six), "declare");
    assert_ok_st(cf_st_declare(w, "f", cf_st_dtype_of(CLFORMER_FP32), 1, six), "declare");
    assert_ok_st(cf_st_declare(w, "i", CF_ST_I32, 1, three), "declare");
    assert_ok_st(cf_st_begin(w), "begin");
    assert_ok_st(cf_st_write_f32(w, "b", a_f32, 6), "bf16");
    assert_ok_st(cf_st_write_f32(w, "h", a_f32, 6), "fp16");
    assert_ok_st(cf_st_write_f32(w, "f", a_f32, 6), "fp32");
    assert_ok_st(cf_st_write(w, "i", ints, sizeof ints), "i32");
    assert_ok_st(cf_st_commit(w), "commit");
    cf_st_writer_free(w);
    cf_st_reader *r;
    assert_ok_st(cf_st_open(path, &r), "open");
    const cf_st_tensor *t;
    float back[6];
    /* bf16 rounds 1e-30 to 0x0DA2 and 65504 up to 65536; fp16 1e-30 to 0 */
    const float want_b[6] = {0.0f, -1.5f, 3.25f, 0x1.44p-100f, -0.0f, 65536.0f}; /* PyTorch's too */
    const float want_h[6] = {0.0f, -1.5f, 3.25f, 0.0f, -0.0f, 65504.0f};
    assert_ok_st(cf_st_expect_float(r, "b", 1, six, &t), "expect b");
    assert_int_equal(t->dtype, CF_ST_BF16);
    assert_ok_st(cf_st_read_f32(r, t, back, 6), "read b");
    assert_memory_equal(back, want_b, sizeof back);
    assert_ok_st(cf_st_expect_float(r, "h", 1, six, &t), "expect h");
    assert_ok_st(cf_st_read_f32(r, t, back, 6), "read h");
    assert_memory_equal(back, want_h, sizeof back);
    assert_ok_st(cf_st_expect_float(r, "f", 1, six, &t), "expect f");
    assert_ok_st(cf_st_read_f32(r, t, back, 6), "read f");
    assert_memory_equal(back, a_f32, sizeof back);
    assert_fails(cf_st_expect_float(r, "i", 1, three, &t), CLFORMER_ERR_FORMAT,
                 "tensor 'i' is I32; clformer reads weights stored as F32, BF16 or F16");
    assert_null(t);
    assert_fails(cf_st_read_f32(r, cf_st_find(r, "i"), back, 3), CLFORMER_ERR_FORMAT, "is I32");
    assert_fails(cf_st_read_f32(r, cf_st_find(r, "b"), back, 5), CLFORMER_ERR_INVALID_ARGUMENT,
                 "it has 6 elements, the destination 5");
    assert_fails(cf_st_expect_float(r, "b", 1, three, &t), CLFORMER_ERR_FORMAT,
                 "is BF16 [6]; expected BF16 [3]");
    cf_st_close(r);

    /* a value fp16 cannot hold: the writer fails and leaves no file */
    assert_ok_st(cf_st_writer_new(tpath("big.safetensors"), &w), "new");
    assert_ok_st(cf_st_declare(w, "h", CF_ST_F16, 1, three), "declare");
    assert_ok_st(cf_st_begin(w), "begin");
    assert_fails(cf_st_write_f32(w, "h", big, 3), CLFORMER_ERR_INVALID_ARGUMENT,
                 "tensor 'h' element 1 is 70000, beyond the range of F16");
    cf_st_writer_free(w);
    assert_no_file_like("big.safetensors");
}

/* --- writer guarantees --------------------------------------------------------------------- */

static cf_st_writer *writer_xy(const char *name)
{
    cf_st_writer *w;
    const int64_t four[1] = {4};
    assert_ok_st(cf_st_writer_new(tpath(name), &w), "new");
    assert_ok_st(cf_st_set_metadata(w, "k", "v"), "meta");
    assert_ok_st(cf_st_declare(w, "x", CF_ST_F32, 1, four), "declare");
    assert_ok_st(cf_st_declare(w, "y", CF_ST_I32, 1, four), "declare");
    assert_ok_st(cf_st_begin(w), "begin");
    return w;
}

static const float x4[5] = {1, 2, 3, 4, 5};
static const int32_t y4[4] = {1, 2, 3, 4};

static void writer_refuses_short_tensor(void **state)
{
    (void)state;
    cf_st_writer *w = writer_xy("short.safetensors");
    assert_fails(cf_st_write(w, "x", x4, 12), CLFORMER_ERR_INVALID_ARGUMENT,
                 "tensor 'x' is F32 [4], 16 bytes, but 12 were written");
    assert_no_file_like("short.safetensors"); /* the temp file is gone at once */
    assert_fails(cf_st_write(w, "x", x4, 16), CLFORMER_ERR_INVALID_ARGUMENT, "already failed");
    assert_fails(cf_st_commit(w), CLFORMER_ERR_INVALID_ARGUMENT, "already failed");
    cf_st_writer_free(w);
    assert_no_file_like("short.safetensors");
}

static void writer_refuses_long_tensor(void **state)
{
    (void)state;
    cf_st_writer *w = writer_xy("long.safetensors");
    assert_fails(cf_st_write(w, "x", x4, 20), CLFORMER_ERR_INVALID_ARGUMENT,
                 "16 bytes, but 20 were written");
    assert_fails(cf_st_commit(w), CLFORMER_ERR_INVALID_ARGUMENT, "already failed");
    cf_st_writer_free(w);
    assert_no_file_like("long.safetensors");
}

static void writer_refuses_missing_tensor(void **state)
{
    (void)state;
    cf_st_writer *w = writer_xy("missing.safetensors");
    assert_ok_st(cf_st_write(w, "x", x4, 16), "write");
    assert_fails(cf_st_commit(w), CLFORMER_ERR_INVALID_ARGUMENT,
                 "only 1 of 2 declared tensors were written (next: 'y')");
    cf_st_writer_free(w);
    assert_no_file_like("missing.safetensors");
}

static void writer_refuses_extra_tensor(void **state)
{
    (void)state;
    cf_st_writer *w = writer_xy("extra.safetensors");
    assert_ok_st(cf_st_write(w, "x", x4, 16), "write");
    assert_ok_st(cf_st_write(w, "y", y4, 16), "write");
    assert_fails(cf_st_write(w, "z", y4, 4), CLFORMER_ERR_INVALID_ARGUMENT,
                 "tensor 'z' written after all 2 declared tensors");
    cf_st_writer_free(w);
    assert_no_file_like("extra.safetensors");
}

static void writer_refuses_wrong_order(void **state)
{
    (void)state;
    cf_st_writer *w = writer_xy("order.safetensors");
    assert_fails(cf_st_write(w, "y", y4, 16), CLFORMER_ERR_INVALID_ARGUMENT,
                 "tensor 'y' written where 'x' comes next");
    cf_st_writer_free(w);
    assert_no_file_like("order.safetensors");
}

static void writer_abandoned_leaves_nothing(void **state)
{
    (void)state;
    cf_st_writer *w = writer_xy("abandoned.safetensors");
    assert_ok_st(cf_st_write(w, "x", x4, 16), "write");
    assert_ok_st(cf_st_write(w, "y", y4, 16), "write");
    cf_st_writer_free(w); /* no commit */
    assert_no_file_like("abandoned.safetensors");
    cf_st_writer_free(NULL);
}

/* A failed save keeps the previous checkpoint; a good one replaces it. */
static void writer_is_atomic(void **state)
{
    (void)state;
    const char *path = tpath("atomic.safetensors");
    write_bytes(path, "old", 3);
    clformer_door *door; /* replacing a file is asked for */
    assert_ok_st(clformer_door_create(&door), "door");
    assert_ok_st(clformer_door_write(door, "the output", path, CLFORMER_WRITE_REPLACE), "door");
    assert_ok_st(clformer_door_open(door), "door");
    cf_st_writer *w = writer_xy("atomic.safetensors");
    assert_ok_st(cf_st_write(w, "x", x4, 16), "write");
    assert_fails(cf_st_commit(w), CLFORMER_ERR_INVALID_ARGUMENT, "only 1 of 2");
    cf_st_writer_free(w);
    size_t n;
    unsigned char *bytes = slurp(path, &n);
    assert_int_equal(n, 3);
    assert_memory_equal(bytes, "old", 3);
    free(bytes);

    w = writer_xy("atomic.safetensors");
    assert_ok_st(cf_st_write(w, "x", x4, 16), "write");
    assert_ok_st(cf_st_write(w, "y", y4, 16), "write");
    assert_ok_st(cf_st_commit(w), "commit");
    assert_fails(cf_st_write(w, "x", x4, 16), CLFORMER_ERR_INVALID_ARGUMENT,
                 "is only allowed between cf_st_begin and commit");
    cf_st_writer_free(w);
    cf_st_reader *r;
    assert_ok_st(cf_st_open(path, &r), "open");
    assert_int_equal(cf_st_count(r), 2);
    assert_string_equal(cf_st_metadata(r, "k"), "v");
    cf_st_close(r);
    clformer_door_free(door);
}

static void writer_refuses_bad_declarations(void **state)
{
    (void)state;
    const int64_t ok[1] = {2}, neg[2] = {2, -1}, nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    const int64_t huge[2] = {INT64_MAX / 2, 4}, huger[2] = {INT64_MAX, 4};
    struct {
        const char *name;
        int dtype, ndim;
        const int64_t *shape;
        const char *needle;
    } bad[] = {
        {"x", CF_ST_F32, 1, ok, "tensor 'x' is declared twice"},
        {"__metadata__", CF_ST_F32, 1, ok, "\"__metadata__\" is not a valid tensor name"},
        {"", CF_ST_F32, 1, ok, "\"\" is not a valid tensor name"},
        {"bad\xff", CF_ST_F32, 1, ok, "is not a valid tensor name"},
        {"n", CF_ST_F32, 2, neg, "tensor 'n': dimension 1 is negative (-1)"},
        {"n", CF_ST_F32, 9, nine, "tensor 'n': 9 dimensions (0 to 8 allowed)"},
        {"n", CF_ST_F32, -1, ok, "tensor 'n': -1 dimensions"},
        {"n", CF_ST_F32, 1, NULL, "tensor 'n': shape is NULL"},
        {"n", 99, 1, ok, "tensor 'n': invalid dtype 99"},
        {"n", CF_ST_F32, 2, huge, "tensor 'n': byte size overflows"},
        {"n", CF_ST_F32, 2, huger, "tensor 'n': element count overflows"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cf_st_writer *w;
        assert_ok_st(cf_st_writer_new(tpath("decl.safetensors"), &w), "new");
        assert_ok_st(cf_st_declare(w, "x", CF_ST_F32, 1, ok), "declare");
        assert_fails(cf_st_declare(w, bad[i].name, (cf_st_dtype)bad[i].dtype, bad[i].ndim,
                                   bad[i].shape),
                     CLFORMER_ERR_INVALID_ARGUMENT, bad[i].needle);
        assert_fails(cf_st_begin(w), CLFORMER_ERR_INVALID_ARGUMENT, "already failed");
        cf_st_writer_free(w);
    }

    cf_st_writer *w;
    assert_ok_st(cf_st_writer_new(tpath("decl.safetensors"), &w), "new");
    assert_ok_st(cf_st_set_metadata(w, "k", "v"), "meta");
    assert_fails(cf_st_set_metadata(w, "k", "w"), CLFORMER_ERR_INVALID_ARGUMENT,
                 "metadata key \"k\" is set twice");
    cf_st_writer_free(w);
    assert_ok_st(cf_st_writer_new(tpath("decl.safetensors"), &w), "new");
    assert_fails(cf_st_set_metadata(w, "k", "\xc0\xaf"), CLFORMER_ERR_INVALID_ARGUMENT,
                 "is not valid UTF-8");
    cf_st_writer_free(w);

    /* declarations close at cf_st_begin */
    assert_ok_st(cf_st_writer_new(tpath("decl.safetensors"), &w), "new");
    assert_ok_st(cf_st_begin(w), "begin");
    assert_fails(cf_st_declare(w, "late", CF_ST_F32, 1, ok), CLFORMER_ERR_INVALID_ARGUMENT,
                 "cf_st_declare on the safetensors writer for");
    cf_st_writer_free(w);
    assert_no_file_like("decl.safetensors");

    /* writing before begin, and into a directory that does not exist */
    assert_ok_st(cf_st_writer_new(tpath("decl.safetensors"), &w), "new");
    assert_fails(cf_st_write(w, "x", x4, 4), CLFORMER_ERR_INVALID_ARGUMENT,
                 "is only allowed between cf_st_begin and commit");
    cf_st_writer_free(w);
    assert_ok_st(cf_st_writer_new(tpath("no/such/dir.safetensors"), &w), "new");
    assert_fails(cf_st_begin(w), CLFORMER_ERR_IO, "no/such/dir.safetensors");
    cf_st_writer_free(w);
}

/* --- files from Python's safetensors ------------------------------------------------------- */

static cf_st_reader *open_golden(const char *name)
{
    const char *dir = getenv("CLFORMER_TEST_DATA");
    if (!dir) fail_msg("CLFORMER_TEST_DATA is not set (run through ctest)");
    char path[1024];
    snprintf(path, sizeof path, "%s/safetensors/%s", dir, name);
    cf_st_reader *r;
    assert_ok_st(cf_st_open(path, &r), path);
    return r;
}

static const cf_st_tensor *expect(cf_st_reader *r, const char *name, cf_st_dtype dtype,
                                  int ndim, int64_t d0, int64_t d1)
{
    const int64_t shape[2] = {d0, d1};
    const cf_st_tensor *t;
    assert_ok_st(cf_st_expect(r, name, dtype, ndim, shape, &t), name);
    return t;
}

static void python_mixed_file(void **state)
{
    (void)state;
    cf_st_reader *r = open_golden("python_mixed.safetensors");
    assert_int_equal(cf_st_count(r), 8);
    assert_string_equal(cf_st_metadata(r, "format"), "np");
    assert_string_equal(cf_st_metadata(r, "note"), "h\xc3\xa9llo \"quoted\" \xe2\x9c\x93");

    float f[6];
    assert_ok_st(cf_st_read(r, expect(r, "layer.weight", CF_ST_F32, 2, 2, 3), f, sizeof f), "rd");
    for (int i = 0; i < 6; i++) assert_true(f[i] == 0.5f * (float)i);
    double d[3];
    assert_ok_st(cf_st_read(r, expect(r, "layer.bias", CF_ST_F64, 1, 3, 0), d, sizeof d), "rd");
    for (int i = 0; i < 3; i++) assert_true(d[i] == (double)i - 1.0);
    int32_t ids[4];
    assert_ok_st(cf_st_read(r, expect(r, "ids", CF_ST_I32, 1, 4, 0), ids, sizeof ids), "rd");
    for (int i = 0; i < 4; i++) assert_int_equal(ids[i], i - 2);
    int64_t steps[4];
    assert_ok_st(cf_st_read(r, expect(r, "steps", CF_ST_I64, 2, 2, 2), steps, sizeof steps), "rd");
    for (int i = 0; i < 4; i++) assert_true(steps[i] == (int64_t)i * 1000000000000);
    uint8_t u[5];
    assert_ok_st(cf_st_read(r, expect(r, "bytes", CF_ST_U8, 1, 5, 0), u, sizeof u), "rd");
    for (int i = 0; i < 5; i++) assert_int_equal(u[i], 250 + i);
    uint16_t h[3];
    const uint16_t half_bits[3] = {0x3800, 0x3e00, 0x4100}; /* 0.5, 1.5, 2.5 */
    assert_ok_st(cf_st_read(r, expect(r, "half", CF_ST_F16, 1, 3, 0), h, sizeof h), "rd");
    assert_memory_equal(h, half_bits, sizeof h);
    float s;
    assert_ok_st(cf_st_read(r, expect(r, "scalar", CF_ST_F32, 0, 0, 0), &s, sizeof s), "rd");
    assert_true(s == 2.25f);
    const cf_st_tensor *e = expect(r, "empty", CF_ST_F32, 2, 0, 3);
    assert_int_equal(e->nbytes, 0);
    assert_ok_st(cf_st_read(r, e, NULL, 0), "rd");
    cf_st_close(r);
}

static void python_plain_file(void **state)
{
    (void)state;
    cf_st_reader *r = open_golden("python_plain.safetensors");
    assert_int_equal(cf_st_count(r), 1);
    assert_int_equal(cf_st_metadata_count(r), 0);
    float w[8];
    assert_ok_st(cf_st_read(r, expect(r, "w", CF_ST_F32, 1, 8, 0), w, sizeof w), "rd");
    for (int i = 0; i < 8; i++) assert_true(w[i] == (float)i);
    cf_st_close(r);
}

/* --- broken files ----------------------------------------------------------------------------- */

/* Writes 8-byte length `n` (the header's length when `n_auto`), the header,
 * then `data` zero bytes. */
static void make_file(const char *path, bool n_auto, uint64_t n, const char *header,
                      size_t data)
{
    size_t hlen = strlen(header);
    if (n_auto) n = hlen;
    size_t total = 8 + hlen + data;
    unsigned char *buf = calloc(1, total);
    assert_non_null(buf);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)(n >> (8 * i));
    memcpy(buf + 8, header, hlen);
    write_bytes(path, buf, total);
    free(buf);
}

#define W8 "{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}"
#define T(fields) "{\"w\":{" fields "}}"
#define AUTO true, 0
#define LEN(n) false, (n)

typedef struct {
    const char *rule;   /* cases with the same rule share a message */
    const char *needle; /* what the message must say */
    bool n_auto;
    uint64_t n;
    const char *header;
    size_t data;
} broken;

static const broken corpus[] = {
    {"length 0", "header length is 0", LEN(0), "{}      ", 0},
    {"length limit", "header length 100000001 is over the 100000000-byte limit",
     LEN(100000001), "{}", 0},
    {"length limit", "header length 18446744073709551615 is over the", LEN(UINT64_MAX), "{}", 0},
    {"length past end", "header length 64 runs past the end of the file (18 bytes",
     LEN(64), "{}", 8},
    {"utf8", "header is not valid UTF-8 (byte 3 of", AUTO, "{\"w\xff\":" W8 "}", 8},
    {"utf8", "header is not valid UTF-8", AUTO, "{\"\xc0\xaf\":" W8 "}", 8}, /* overlong */
    {"utf8", "header is not valid UTF-8", AUTO, "{\"\xed\xa0\x80\":" W8 "}", 8}, /* surrogate */
    {"utf8", "header is not valid UTF-8", AUTO, "{\"\xe2\x82\":" W8 "}", 8}, /* truncated */
    {"not object", "header is not a JSON object", AUTO, "[1, 2]", 0},
    {"not object", "header is not a JSON object", AUTO, " {}", 0},
    {"json", "header is not valid JSON", AUTO, "{\"w\":", 0},
    {"json", "header is not valid JSON", AUTO, "{} x", 0},
    {"json", "header is not valid JSON", AUTO, "{\"w\\u0000\":" W8 "}", 8}, /* NUL in a name */
    {"json", "header is not valid JSON", AUTO, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],"
     "\"data_offsets\":[0,99999999999999999999]}}", 8},
    {"duplicate", "header has a duplicate key", AUTO, "{\"w\":" W8 ",\"w\":" W8 "}", 8},
    {"duplicate", "header has a duplicate key", AUTO,
     "{\"w\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8},
    {"entry", "tensor 'w': entry is not a JSON object", AUTO, "{\"w\":[0,8]}", 8},
    {"entry", "tensor 'w': entry is not a JSON object", AUTO, "{\"w\":null}", 0},
    {"no dtype", "tensor 'w': missing \"dtype\"", AUTO,
     T("\"shape\":[2],\"data_offsets\":[0,8]"), 8},
    {"dtype type", "tensor 'w': \"dtype\" is not a string", AUTO,
     T("\"dtype\":32,\"shape\":[2],\"data_offsets\":[0,8]"), 8},
    {"dtype name", "tensor 'w': unknown dtype \"F33\"", AUTO,
     T("\"dtype\":\"F33\",\"shape\":[2],\"data_offsets\":[0,8]"), 8},
    {"dtype name", "tensor 'w': unknown dtype \"f32\"", AUTO,
     T("\"dtype\":\"f32\",\"shape\":[2],\"data_offsets\":[0,8]"), 8},
    {"field", "tensor 'w': unknown field \"offsets\"", AUTO,
     T("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"offsets\":[0,8]"), 8},
    {"no shape", "tensor 'w': missing \"shape\"", AUTO, T("\"dtype\":\"F32\",\"data_offsets\":[0,8]"),
     8},
    {"shape type", "tensor 'w': \"shape\" is not an array", AUTO,
     T("\"dtype\":\"F32\",\"shape\":2,\"data_offsets\":[0,8]"), 8},
    {"shape negative", "tensor 'w': \"shape\" dimension 1 is negative (-2)", AUTO,
     T("\"dtype\":\"F32\",\"shape\":[1,-2],\"data_offsets\":[0,8]"), 8},
    {"shape integer", "tensor 'w': \"shape\" dimension 0 is not an integer", AUTO,
     T("\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]"), 8},
    {"shape integer", "tensor 'w': \"shape\" dimension 0 is not an integer", AUTO,
     T("\"dtype\":\"F32\",\"shape\":[\"2\"],\"data_offsets\":[0,8]"), 8},
    {"shape rank", "tensor 'w': \"shape\" has 9 dimensions; at most 8", AUTO,
     T("\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,2],\"data_offsets\":[0,8]"), 8},
    {"numel overflow", "tensor 'w': \"shape\" element count overflows", AUTO,
     T("\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]"), 8},
    {"bytes overflow", "tensor 'w': byte size overflows", AUTO,
     T("\"dtype\":\"F32\",\"shape\":[4611686018427387904],\"data_offsets\":[0,8]"), 8},
    {"no offsets", "tensor 'w': missing \"data_offsets\"", AUTO,
     T("\"dtype\":\"F32\",\"shape\":[2]"), 8},
    {"offsets type", "tensor 'w': \"data_offsets\" is not an array of 2 integers", AUTO,
     T("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8]"), 8},
    {"offsets type", "tensor 'w': \"data_offsets\" is not an array of 2 integers", AUTO,
     T("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":{\"begin\":0}"), 8},
    {"offsets value", "tensor 'w': \"data_offsets\" are not non-negative integers", AUTO,
     T("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[-8,0]"), 8},
    {"offsets value", "tensor 'w': \"data_offsets\" are not non-negative integers", AUTO,
     T("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8.0]"), 8},
    {"end before begin", "tensor 'w': data_offsets [8, 4] end before they begin", AUTO,
     T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]"), 8},
    {"size", "tensor 'w': data_offsets [0, 4] hold 4 bytes but F32 [2] needs 8", AUTO,
     T("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]"), 4},
    {"size", "tensor 'w': data_offsets [0, 4] hold 4 bytes but I64 [] needs 8", AUTO,
     T("\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[0,4]"), 4},
    {"outside", "tensor 'w': data_offsets [8, 16] run past the end of the data area (8 bytes",
     AUTO, T("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]"), 8},
    {"overlap", "tensors 'a' and 'b' overlap", AUTO,
     "{\"a\":" W8 ",\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12},
    {"overlap", "tensors 'a' and 'z' overlap", AUTO, /* an empty tensor inside another */
     "{\"a\":" W8 ",\"z\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]}}", 8},
    {"gap", "gap of 4 unused bytes before tensor 'b'", AUTO,
     "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
     "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", 12},
    {"gap", "gap of 4 unused bytes before tensor 'w'", AUTO,
     T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]"), 8},
    {"trailing", "4 trailing bytes after the last tensor's data", AUTO, "{\"w\":" W8 "}", 12},
    {"trailing", "3 trailing bytes after the last tensor's data", AUTO, "{}", 3},
    {"metadata object", "\"__metadata__\" is not a JSON object", AUTO,
     "{\"__metadata__\":\"x\"}", 0},
    {"metadata string", "\"__metadata__\" value of \"k\" is not a string", AUTO,
     "{\"__metadata__\":{\"k\":1}}", 0},
    {"metadata string", "\"__metadata__\" value of \"k\" is not a string", AUTO,
     "{\"__metadata__\":{\"j\":\"ok\",\"k\":{\"a\":\"b\"}}}", 0},
};
#define N_CORPUS (sizeof corpus / sizeof corpus[0])

static void broken_files_are_refused_with_their_own_message(void **state)
{
    (void)state;
    static char messages[N_CORPUS][1024];
    size_t refused = 0;
    for (size_t i = 0; i < N_CORPUS; i++) {
        const broken *c = &corpus[i];
        char name[64];
        snprintf(name, sizeof name, "broken%02zu.safetensors", i);
        const char *path = tpath(name);
        make_file(path, c->n_auto, c->n, c->header, c->data);
        cf_st_reader *r = (cf_st_reader *)&r; /* must come back NULL */
        clformer_status st = cf_st_open(path, &r);
        snprintf(messages[i], sizeof messages[i], "%s", clformer_last_error());
        if (st != CLFORMER_ERR_FORMAT || !strstr(messages[i], c->needle) ||
            !strstr(messages[i], path))
            fail_msg("case %zu (%s): expected CLFORMER_ERR_FORMAT naming '%s' with \"%s\"; "
                     "got %s: %s",
                     i, c->rule, path, c->needle, clformer_status_name(st), messages[i]);
        assert_null(r);
        refused++;
    }
    /* each rule's message is its own: no needle matches another rule's message */
    for (size_t i = 0; i < N_CORPUS; i++)
        for (size_t j = 0; j < N_CORPUS; j++)
            if (strcmp(corpus[i].rule, corpus[j].rule) != 0 && messages[j][0] &&
                strstr(messages[j], corpus[i].needle))
                fail_msg("rule '%s' message \"%s\" also matches rule '%s'", corpus[j].rule,
                         messages[j], corpus[i].rule);
    assert_int_equal(refused, N_CORPUS);
}

static void too_short_and_unreadable_files(void **state)
{
    (void)state;
    cf_st_reader *r;
    const char *path = tpath("short0.safetensors");
    write_bytes(path, "", 0);
    assert_fails(cf_st_open(path, &r), CLFORMER_ERR_FORMAT,
                 "short0.safetensors' is not a safetensors file: 0 bytes, shorter than the "
                 "8-byte header length");
    path = tpath("short7.safetensors");
    write_bytes(path, "\x02\0\0\0\0\0\0", 7);
    assert_fails(cf_st_open(path, &r), CLFORMER_ERR_FORMAT, "7 bytes, shorter than the 8-byte");
    assert_null(r);
    assert_fails(cf_st_open(tpath("absent.safetensors"), &r), CLFORMER_ERR_IO,
                 "cannot open '");
    assert_true(strstr(clformer_last_error(), "absent.safetensors': No such file"));
    assert_fails(cf_st_open(tmpdir, &r), CLFORMER_ERR_IO, "is not a regular file");
    assert_true(strstr(clformer_last_error(), tmpdir));
}

/* Valid edge cases other writers produce. */
static void unusual_but_valid_files(void **state)
{
    (void)state;
    cf_st_reader *r;
    const char *path = tpath("valid.safetensors");
    /* JSON order differs from data order; whitespace padding; an empty tensor
     * between two others and one at the very end */
    make_file(path, AUTO,
              "{\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[8,10]},\n"
              " \"z\":{\"dtype\":\"F64\",\"shape\":[0,5],\"data_offsets\":[8,8]},"
              "\"e\":{\"dtype\":\"BOOL\",\"shape\":[3,0],\"data_offsets\":[10,10]},"
              "\"__metadata__\":{},"
              "\"a\":" W8 "}        ",
              10);
    assert_ok_st(cf_st_open(path, &r), "open");
    assert_int_equal(cf_st_count(r), 4);
    const char *order[4] = {"a", "z", "b", "e"};
    for (int i = 0; i < 4; i++) assert_string_equal(cf_st_tensor_at(r, i)->name, order[i]);
    assert_int_equal(cf_st_metadata_count(r), 0);
    assert_int_equal(cf_st_find(r, "b")->file_offset, cf_st_find(r, "a")->file_offset + 8);
    cf_st_close(r);

    /* a scalar, and a header padded with JSON whitespace other than spaces */
    make_file(path, AUTO, "{\"s\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[0,8]}}\n\t\r ", 8);
    assert_ok_st(cf_st_open(path, &r), "open");
    assert_int_equal(cf_st_tensor_at(r, 0)->numel, 1);
    assert_int_equal(cf_st_tensor_at(r, 0)->ndim, 0);
    cf_st_close(r);
}


/* --- checksums and bounded parsing (issue 11, items 9 and 7) ------------------------ */

/* Two same-shape tensors written with checksums; returns the file's bytes. */
static unsigned char *write_checksummed(const char *path, size_t *n)
{
    static const float x[4] = {1, 2, 3, 4}, y[4] = {5, 6, 7, 8};
    const int64_t shape[1] = {4};
    cf_st_writer *w;
    assert_ok_st(cf_st_writer_new(path, &w), "writer_new");
    assert_ok_st(cf_st_checksums(w), "checksums");
    assert_ok_st(cf_st_set_metadata(w, "zz", "after the checksums"), "set_metadata");
    assert_ok_st(cf_st_declare(w, "x", CF_ST_F32, 1, shape), "declare x");
    assert_ok_st(cf_st_declare(w, "y", CF_ST_F32, 1, shape), "declare y");
    assert_ok_st(cf_st_begin(w), "begin");
    assert_ok_st(cf_st_write(w, "x", x, sizeof x), "write x");
    assert_ok_st(cf_st_write(w, "y", y, sizeof y), "write y");
    assert_ok_st(cf_st_commit(w), "commit");
    cf_st_writer_free(w);
    return slurp(path, n);
}

static void checksums_are_written_and_verified(void **state)
{
    (void)state;
    const char *path = tpath("crc.safetensors");
    size_t n;
    unsigned char *bytes = write_checksummed(path, &n);
    cf_st_reader *r;
    assert_ok_st(cf_st_open(path, &r), "open");
    assert_non_null(cf_st_metadata(r, CF_ST_CRC_KEY));
    assert_string_equal(cf_st_metadata(r, "zz"), "after the checksums");
    float got[4];
    for (size_t i = 0; i < 2; i++) {
        const cf_st_tensor *t = cf_st_tensor_at(r, i);
        assert_true(t->has_crc32c);
        assert_ok_st(cf_st_read(r, t, got, sizeof got), "read");
    }
    cf_st_close(r);

    /* the two tensors' bytes swapped: same shapes, same offsets, wrong data */
    unsigned char *swapped = malloc(n);
    assert_non_null(swapped);
    memcpy(swapped, bytes, n);
    memcpy(swapped + n - 32, bytes + n - 16, 16);
    memcpy(swapped + n - 16, bytes + n - 32, 16);
    write_bytes(path, swapped, n);
    assert_ok_st(cf_st_open(path, &r), "open swapped");
    assert_fails(cf_st_read(r, cf_st_find(r, "x"), got, sizeof got), CLFORMER_ERR_FORMAT,
                 "tensor 'x' does not match its stored checksum");
    cf_st_close(r);

    /* one flipped bit */
    memcpy(swapped, bytes, n);
    swapped[n - 1] ^= 0x10;
    write_bytes(path, swapped, n);
    assert_ok_st(cf_st_open(path, &r), "open flipped");
    assert_ok_st(cf_st_read(r, cf_st_find(r, "x"), got, sizeof got), "read x");
    assert_fails(cf_st_read(r, cf_st_find(r, "y"), got, sizeof got), CLFORMER_ERR_FORMAT,
                 "stored checksum");
    cf_st_close(r);

    /* a checksum list that is not one 8-digit word per tensor */
    memcpy(swapped, bytes, n);
    char *word = strstr((char *)swapped + 8, "\"" CF_ST_CRC_KEY "\":\"") +
                 strlen("\"" CF_ST_CRC_KEY "\":\"");
    word[3] = 'G';
    write_bytes(path, swapped, n);
    assert_fails(cf_st_open(path, &r), CLFORMER_ERR_FORMAT, "8-digit lowercase hex");
    assert_null(r);
    free(swapped);
    free(bytes);
}

/* The metadata's own checksum (issue 21, item 5): every "clformer.*" entry
 * is covered, whatever is edited in it (two vocabulary words swapped, a
 * digit of the train state changed, a bit of an embedded model flipped); a
 * file whose checksum entry was removed loads unchecked; keys of other tools
 * are not covered. */
static void metadata_checksum_covers_every_clformer_entry(void **state)
{
    (void)state;
    const char *path = tpath("meta.safetensors");
    static const float x[2] = {1, 2};
    const int64_t shape[1] = {2};
    cf_st_writer *w;
    assert_ok_st(cf_st_writer_new(path, &w), "writer_new");
    assert_ok_st(cf_st_checksums(w), "checksums");
    assert_ok_st(cf_st_set_metadata(w, "clformer.src_vocab", "[\"<pad>\",\"dog\",\"cat\"]"), "vocab");
    assert_ok_st(cf_st_set_metadata(w, "clformer.train_state", "{\"step\":20}"), "train_state");
    assert_ok_st(cf_st_set_metadata(w, "clformer.src_spm", "QUJDRA=="), "spm");
    assert_ok_st(cf_st_set_metadata(w, "other.tool", "free text"), "other");
    assert_ok_st(cf_st_declare(w, "x", CF_ST_F32, 1, shape), "declare");
    assert_ok_st(cf_st_begin(w), "begin");
    assert_ok_st(cf_st_write(w, "x", x, sizeof x), "write");
    assert_ok_st(cf_st_commit(w), "commit");
    cf_st_writer_free(w);
    size_t n;
    unsigned char *bytes = slurp(path, &n);
    cf_st_reader *r;
    assert_ok_st(cf_st_open(path, &r), "open");
    assert_non_null(cf_st_metadata(r, CF_ST_HEADER_CRC_KEY));
    assert_null(cf_st_metadata(r, CF_ST_META_CRC_KEY)); /* the older, narrower sum */
    cf_st_close(r);

    /* same-length edits, so the header stays valid safetensors */
    static const struct {
        const char *from, *to;
    } edits[] = {
        /* (in the header JSON the values' quotes are escaped) */
        {"dog\\\",\\\"cat", "cat\\\",\\\"dog"}, /* two vocabulary words swapped */
        {"step\\\":20", "step\\\":28"},         /* the train state */
        {"QUJDRA==", "QUJDRQ=="},                      /* a bit of the tokenizer model */
        {"\"clformer.src_vocab\"", "\"clformer.src_vocaB\""}, /* a key */
        {"\"F32\"", "\"I32\""},             /* a dtype: the same bytes read otherwise */
    };
    unsigned char *edited = malloc(n);
    assert_non_null(edited);
    for (size_t i = 0; i < sizeof edits / sizeof *edits; i++) {
        memcpy(edited, bytes, n);
        char *at = strstr((char *)edited + 8, edits[i].from);
        assert_non_null(at);
        memcpy(at, edits[i].to, strlen(edits[i].to));
        write_bytes(path, edited, n);
        r = NULL;
        assert_fails(cf_st_open(path, &r), CLFORMER_ERR_FORMAT,
                     "does not match its checksum (CRC-32C");
        assert_null(r);
    }
    /* another tool's key: not clformer's to check */
    memcpy(edited, bytes, n);
    memcpy(strstr((char *)edited + 8, "free text"), "FREE TEXT", 9);
    write_bytes(path, edited, n);
    assert_ok_st(cf_st_open(path, &r), "open with another tool's key edited");
    cf_st_close(r);
    /* an edit with the checksum entry's name changed (removed, for the rule):
     * the file loads unchecked, as files written before the checksum did */
    memcpy(edited, bytes, n);
    memcpy(strstr((char *)edited + 8, "step\\\":20"), "step\\\":28", 9);
    memcpy(strstr((char *)edited + 8, CF_ST_HEADER_CRC_KEY), "clformer.xxxxxx_crc32c", 22);
    write_bytes(path, edited, n);
    assert_ok_st(cf_st_open(path, &r), "open without the metadata checksum");
    assert_string_equal(cf_st_metadata(r, "clformer.train_state"), "{\"step\":28}");
    cf_st_close(r);
    /* a malformed checksum */
    memcpy(edited, bytes, n);
    char *value = strstr((char *)edited + 8, "\"" CF_ST_HEADER_CRC_KEY "\":\"") +
                  strlen("\"" CF_ST_HEADER_CRC_KEY "\":\"");
    value[2] = 'x';
    write_bytes(path, edited, n);
    assert_fails(cf_st_open(path, &r), CLFORMER_ERR_FORMAT, "is not an 8-digit lowercase hex checksum");
    free(edited);
    free(bytes);
}

/* A file written before the header checksum (clformer.meta_crc32c, as
 * today's main wrote until this change) still loads, and its metadata is
 * still checked; its dtypes and shapes are not (the older sum never covered
 * them: export such a file again for the full sum). */
static void older_metadata_checksum_is_still_checked(void **state)
{
    (void)state;
    const char *path = tpath("older.safetensors");
    const char *keys[1] = {"clformer.x"}, *values[1] = {"1"};
    char header[256];
    int n = snprintf(header, sizeof header,
                     "{\"__metadata__\":{\"clformer.meta_crc32c\":\"%08x\",\"clformer.x\":\"1\"},"
                     "\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
                     (unsigned)cf_st_metadata_crc(keys, values, 1));
    while (n % 8) header[n++] = ' ';
    unsigned char file[8 + 256 + 8] = {0};
    for (int k = 0; k < 8; k++) file[k] = (unsigned char)((uint64_t)n >> (8 * k));
    memcpy(file + 8, header, (size_t)n);
    const size_t size = 8 + (size_t)n + 8;
    write_bytes(path, file, size);
    cf_st_reader *r;
    assert_ok_st(cf_st_open(path, &r), "open an older file");
    cf_st_close(r);
    char *value = strstr((char *)file + 8, "\"clformer.x\":\"1\"") + 14;
    *value = '2';
    write_bytes(path, file, size);
    assert_fails(cf_st_open(path, &r), CLFORMER_ERR_FORMAT,
                 "the metadata (config, vocabularies, train state or tokenizer) does not match");
    *value = '1';
    memcpy(strstr((char *)file + 8, "\"F32\""), "\"I32\"", 5);
    write_bytes(path, file, size);
    assert_ok_st(cf_st_open(path, &r), "the older sum does not cover dtypes");
    cf_st_close(r);
}

/* A small header of very many JSON values is refused before it is parsed (a
 * 72 MB header of 24 million empty objects once took 5.6 GB and 44 s). */
static void header_of_many_values_is_refused_before_parsing(void **state)
{
    (void)state;
    const size_t count = CF_ST_MAX_JSON_TOKENS + 10;
    size_t len = 6 + 3 * count + 2;
    char *header = malloc(len + 1);
    assert_non_null(header);
    char *p = header;
    p += sprintf(p, "{\"a\":[");
    for (size_t i = 0; i < count; i++) p += sprintf(p, "{}%s", i + 1 < count ? "," : "");
    p += sprintf(p, "]}");
    const char *path = tpath("many.safetensors");
    make_file(path, true, 0, header, 0);
    free(header);
    cf_st_reader *r;
    assert_fails(cf_st_open(path, &r), CLFORMER_ERR_FORMAT, "JSON values, more than a file");
    assert_null(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip_every_dtype),
        cmocka_unit_test(header_bytes_are_exact),
        cmocka_unit_test(header_is_deterministic),
        cmocka_unit_test(empty_file_round_trips),
        cmocka_unit_test(expect_and_read_check_the_caller),
        cmocka_unit_test(writer_refuses_short_tensor),
        cmocka_unit_test(writer_refuses_long_tensor),
        cmocka_unit_test(writer_refuses_missing_tensor),
        cmocka_unit_test(writer_refuses_extra_tensor),
        cmocka_unit_test(writer_refuses_wrong_order),
        cmocka_unit_test(writer_abandoned_leaves_nothing),
        cmocka_unit_test(writer_is_atomic),
        cmocka_unit_test(writer_refuses_bad_declarations),
        cmocka_unit_test(python_mixed_file),
        cmocka_unit_test(python_plain_file),
        cmocka_unit_test(broken_files_are_refused_with_their_own_message),
        cmocka_unit_test(too_short_and_unreadable_files),
        cmocka_unit_test(unusual_but_valid_files),
        cmocka_unit_test(checksums_are_written_and_verified),
        cmocka_unit_test(metadata_checksum_covers_every_clformer_entry),
        cmocka_unit_test(older_metadata_checksum_is_still_checked),
        cmocka_unit_test(header_of_many_values_is_refused_before_parsing),
        cmocka_unit_test(half_tensors_round_trip),
    };
    return cmocka_run_group_tests_name("safetensors", tests, make_tmpdir, remove_tmpdir);
}
