/*
 * Damaging a checkpoint on purpose (test_model's refused-checkpoint cases,
 * test_share_all_grad's differing shared copies). Header-only: one function.
 */
#ifndef CLFORMER_TEST_CHECKPOINT_POKE_H
#define CLFORMER_TEST_CHECKPOINT_POKE_H

#include "harness.h"
#include "safetensors.h"

#include <stdio.h>
#include <string.h>

/* Replaces the 4 bytes of tensor `name`'s element 0 in the checkpoint at
 * `path` with `value`; with `drop_crc`, also renames the checksum keys so the
 * file reads as one written without checksums. */
static void poke_tensor(const char *path, const char *name, float value, bool drop_crc)
{
    cf_st_reader *r;
    assert_ok(cf_st_open(path, &r));
    uint64_t at = cf_st_find(r, name)->file_offset;
    cf_st_close(r);
    FILE *fp = fopen(path, "r+b");
    assert_non_null(fp);
    assert_int_equal(fseek(fp, (long)at, SEEK_SET), 0);
    assert_int_equal(fwrite(&value, 4, 1, fp), 1);
    if (drop_crc) {
        char head[8192];
        assert_int_equal(fseek(fp, 0, SEEK_SET), 0);
        size_t got = fread(head, 1, sizeof head - 1, fp);
        head[got] = '\0';
        char *key = strstr(head + 8, "\"clformer.crc32c\"");
        assert_non_null(key);
        assert_int_equal(fseek(fp, (long)(key - head) + 1, SEEK_SET), 0);
        assert_int_equal(fwrite("clformer.crc32x", 15, 1, fp), 1);
        /* and the metadata's checksum, which covers that rename: a file of
         * before the checksums */
        key = strstr(head + 8, "\"clformer.header_crc32c\"");
        assert_non_null(key);
        assert_int_equal(fseek(fp, (long)(key - head) + 1, SEEK_SET), 0);
        assert_int_equal(fwrite("clformer.header_crc32x", 22, 1, fp), 1);
    }
    assert_int_equal(fclose(fp), 0);
}

#endif
