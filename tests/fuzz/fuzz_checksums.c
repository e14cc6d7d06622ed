/* The per-tensor checksums (clformer.crc32c, runtime/format/safetensors.c):
 * parsed when a file is opened, verified when a tensor is read. Each input
 * is made into a safetensors file of up to 4 one-float tensors:
 *   byte 0      the number of tensors (low bits, 0..4) and, in bit 7,
 *               whether their data lies in reverse header order (checksums
 *               follow the header's order, reading goes in data order)
 *   4 per tensor its data
 *   the rest    the clformer.crc32c value
 * and checked against what the format says: the file opens exactly when the
 * value is one lowercase 8-hex-digit checksum per tensor, space-separated,
 * and then each tensor reads exactly when its checksum matches its bytes. */
#include "crc32c.h"
#include "fuzz_input.h"
#include "safetensors.h"

#include <jansson.h>
#include <stdbool.h>

#define MAX_TENSORS 4

/* The format's rule, written independently of the reader's parser. */
static bool well_formed(const char *text, size_t len, size_t n)
{
    if (len != (n ? 9 * n - 1 : 0)) return false;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
        if (i % 9 == 8 ? c != ' ' : !hex) return false;
    }
    return true;
}

/* Checksum number i of a well-formed value. */
static uint32_t stored(const char *text, size_t i)
{
    char hex[9];
    memcpy(hex, text + 9 * i, 8);
    hex[8] = '\0';
    return (uint32_t)strtoul(hex, NULL, 16);
}

/* The file: an 8-byte little-endian header length, the header, the data. */
static uint8_t *build_file(const uint8_t *tensors, size_t n, bool reversed, const char *text,
                           size_t len, size_t *size)
{
    json_t *root = json_object(), *meta = json_object();
    json_t *value = json_stringn(text, len);
    if (!root || !meta) abort();
    if (!value) { /* not UTF-8: no JSON string can hold it */
        json_decref(meta);
        json_decref(root);
        return NULL;
    }
    json_object_set_new(meta, CF_ST_CRC_KEY, value);
    json_object_set_new(root, "__metadata__", meta);
    for (size_t i = 0; i < n; i++) {
        size_t slot = reversed ? n - 1 - i : i;
        char name[8];
        snprintf(name, sizeof name, "t%zu", i);
        json_object_set_new(root, name,
                            json_pack("{s:s, s:[i], s:[I, I]}", "dtype", "F32", "shape", 1,
                                      "data_offsets", (json_int_t)(4 * slot),
                                      (json_int_t)(4 * slot + 4)));
    }
    char *header = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (!header) abort();
    size_t hlen = strlen(header);
    *size = 8 + hlen + 4 * n;
    uint8_t *file = malloc(*size);
    if (!file) abort();
    for (int b = 0; b < 8; b++) file[b] = (uint8_t)((uint64_t)hlen >> (8 * b));
    memcpy(file + 8, header, hlen);
    for (size_t i = 0; i < n; i++)
        memcpy(file + 8 + hlen + 4 * (reversed ? n - 1 - i : i), tensors + 4 * i, 4);
    free(header);
    return file;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const size_t n = (data[0] & 7) % (MAX_TENSORS + 1);
    const bool reversed = data[0] & 0x80;
    if (size < 1 + 4 * n) return 0;
    const uint8_t *tensors = data + 1;
    const char *text = (const char *)data + 1 + 4 * n;
    const size_t len = size - 1 - 4 * n;
    size_t file_size;
    uint8_t *file = build_file(tensors, n, reversed, text, len, &file_size);
    if (!file) return 0;
    cf_st_reader *r;
    bool opened = cf_st_open(fuzz_file(0, file, file_size), &r) == CLFORMER_OK;
    free(file);
    /* a NUL inside is not well formed either: JSON strings in the header may not hold one */
    if (opened != well_formed(text, len, n)) abort();
    if (!opened) return 0;
    if (cf_st_count(r) != n) abort();
    for (size_t i = 0; i < n; i++) {
        char name[8];
        snprintf(name, sizeof name, "t%zu", i);
        const cf_st_tensor *t = cf_st_find(r, name);
        if (!t || !t->has_crc32c || t->crc32c != stored(text, i)) abort();
        float value;
        bool read = cf_st_read(r, t, &value, sizeof value) == CLFORMER_OK;
        if (read != (cf_crc32c(0, tensors + 4 * i, 4) == stored(text, i))) abort();
        if (read && memcmp(&value, tensors + 4 * i, 4)) abort();
    }
    cf_st_close(r);
    return 0;
}
