/* The safetensors reader (runtime/format/safetensors.c) on arbitrary bytes:
 * open, list, look up and read every tensor of whatever it accepts. */
#include "fuzz_input.h"
#include "safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cf_st_reader *r;
    if (cf_st_open(fuzz_file(0, data, size), &r) != CLFORMER_OK) return 0;
    for (size_t i = 0; i < cf_st_metadata_count(r); i++) {
        const char *key, *value;
        cf_st_metadata_at(r, i, &key, &value);
        if (!key || !value || cf_st_metadata(r, key) == NULL) abort();
    }
    for (size_t i = 0; i < cf_st_count(r); i++) {
        const cf_st_tensor *t = cf_st_tensor_at(r, i);
        if (cf_st_find(r, t->name) != t) abort();
        /* the reader promised the bytes are in the file: at most its size */
        if (t->nbytes > size) abort();
        void *buf = malloc(t->nbytes ? t->nbytes : 1);
        if (!buf) abort();
        cf_st_read(r, t, buf, t->nbytes);
        free(buf);
        int64_t shape[1] = {4};
        cf_st_expect(r, t->name, CF_ST_F32, 1, shape, NULL);
    }
    cf_st_close(r);
    return 0;
}
