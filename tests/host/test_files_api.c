/* The public file helpers of clformer.h: clformer_set_error, atomic files,
 * line files and tensor files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "clformer.h"
#include "clformer_util.h"

static char dir[] = "/tmp/clformer-files-api-XXXXXX";

static const char *path_in_dir(const char *name)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

static void write_raw(const char *path, const char *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

static void set_error_records_the_message(void **state)
{
    (void)state;
    assert_int_equal(clformer_set_error(CLFORMER_ERR_IO, "file %s: %d", "x", 7), CLFORMER_ERR_IO);
    assert_string_equal(clformer_last_error(), "file x: 7");
}

static void atomic_file_appears_only_on_commit(void **state)
{
    (void)state;
    const char *path = path_in_dir("atomic.txt");
    clformer_atomic_file *f;
    assert_int_equal(clformer_atomic_file_open(path, &f), CLFORMER_OK);
    assert_int_equal(clformer_atomic_file_write(f, "abc", 3), CLFORMER_OK);
    assert_int_not_equal(access(path, F_OK), 0);
    clformer_atomic_file_abort(f);
    assert_int_not_equal(access(path, F_OK), 0);

    assert_int_equal(clformer_atomic_file_open(path, &f), CLFORMER_OK);
    assert_int_equal(clformer_atomic_file_write(f, "abc", 3), CLFORMER_OK);
    assert_int_equal(clformer_atomic_file_commit(f), CLFORMER_OK);
    char *data;
    size_t size;
    assert_int_equal(clformer_read_file(path, &data, &size), CLFORMER_OK);
    assert_int_equal(size, 3);
    assert_string_equal(data, "abc");
    free(data);
    unlink(path);

    assert_int_equal(clformer_atomic_file_open("/nonexistent-dir/x", &f), CLFORMER_ERR_IO);
    assert_non_null(strstr(clformer_last_error(), "/nonexistent-dir/x"));
}

static void lines_round_trip_keeping_empty_lines(void **state)
{
    (void)state;
    const char *path = path_in_dir("lines.txt");
    const char *const lines[] = {"ein Hund", "", "zwei Katzen ."};
    assert_int_equal(clformer_lines_write(path, lines, 3), CLFORMER_OK);
    char **back;
    size_t n;
    assert_int_equal(clformer_lines_read(path, &back, &n), CLFORMER_OK);
    assert_int_equal(n, 3);
    for (size_t i = 0; i < 3; i++) assert_string_equal(back[i], lines[i]);
    clformer_lines_free(back);

    /* a byte order mark is dropped, an unterminated last line counts */
    write_raw(path, "\xEF\xBB\xBF" "a\nb", 6);
    assert_int_equal(clformer_lines_read(path, &back, &n), CLFORMER_OK);
    assert_int_equal(n, 2);
    assert_string_equal(back[0], "a");
    assert_string_equal(back[1], "b");
    clformer_lines_free(back);

    write_raw(path, "", 0);
    assert_int_equal(clformer_lines_read(path, &back, &n), CLFORMER_OK);
    assert_int_equal(n, 0);
    clformer_lines_free(back);

    write_raw(path, "ok\nbad \xC3\n", 8);
    assert_int_equal(clformer_lines_read(path, &back, &n), CLFORMER_ERR_FORMAT);
    assert_null(back);
    assert_non_null(strstr(clformer_last_error(), "lines.txt:2"));
    assert_non_null(strstr(clformer_last_error(), "UTF-8"));
    unlink(path);
    assert_int_equal(clformer_lines_read(path, &back, &n), CLFORMER_ERR_IO);
}

static void tensors_round_trip(void **state)
{
    (void)state;
    const char *path = path_in_dir("tensors.safetensors");
    const int32_t ids[6] = {1, 5, 6, 2, 0, 0};
    const float x[3] = {0.5f, -2.0f, 1e-3f};
    const clformer_tensor t[2] = {{"ids", CLFORMER_DTYPE_I32, 2, {2, 3}, ids},
                                  {"x", CLFORMER_DTYPE_F32, 1, {3}, x}};
    assert_int_equal(clformer_tensors_save(path, t, 2), CLFORMER_OK);
    clformer_tensor *back;
    size_t n;
    assert_int_equal(clformer_tensors_load(path, &back, &n), CLFORMER_OK);
    assert_int_equal(n, 2);
    const clformer_tensor *b = clformer_tensors_find(back, n, "ids");
    assert_non_null(b);
    assert_int_equal(b->dtype, CLFORMER_DTYPE_I32);
    assert_int_equal(b->ndim, 2);
    assert_int_equal(b->shape[0], 2);
    assert_int_equal(b->shape[1], 3);
    assert_memory_equal(b->data, ids, sizeof ids);
    b = clformer_tensors_find(back, n, "x");
    assert_non_null(b);
    assert_memory_equal(b->data, x, sizeof x);
    assert_null(clformer_tensors_find(back, n, "y"));
    clformer_tensors_free(back, n);

    const clformer_tensor bad = {"z", (clformer_dtype)9, 1, {3}, x};
    assert_int_equal(clformer_tensors_save(path, &bad, 1), CLFORMER_ERR_INVALID_ARGUMENT);
    write_raw(path, "not a safetensors file", 22);
    assert_int_equal(clformer_tensors_load(path, &back, &n), CLFORMER_ERR_FORMAT);
    assert_null(back);
    unlink(path);
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(set_error_records_the_message),
        cmocka_unit_test(atomic_file_appears_only_on_commit),
        cmocka_unit_test(lines_round_trip_keeping_empty_lines),
        cmocka_unit_test(tensors_round_trip),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
