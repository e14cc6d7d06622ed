/* A Hugging Face directory's tokenizer (tokenizer_hf.c), as a user's
 * directory or a checkpoint that carries its files gives it. The input is
 * one byte choosing the file (even: tokenizer.json, odd: tokenizer.model),
 * the file's length (4 bytes, little-endian: a tokenizer.model holds NUL
 * bytes), the file's bytes and a text: anything loaded must encode the text,
 * with and without its special tokens, into ids below its size that decode,
 * with and without them, and must refuse an id past its size. */
#include "fuzz_input.h"
#include "tokenizer_hf.h"

static void check_round(const cf_hf_tokenizer *t, const char *text, size_t len, bool special)
{
    int32_t *ids = NULL;
    size_t n = 0, back_len = 0;
    char *back = NULL;
    if (cf_hf_tokenizer_encode(t, text, len, special, &ids, &n) != CLFORMER_OK) abort();
    const int32_t size = cf_hf_tokenizer_size(t);
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= size) abort();
    if (cf_hf_tokenizer_decode(t, ids, n, special, &back, &back_len) != CLFORMER_OK) abort();
    if (strlen(back) > back_len) abort(); /* NUL-terminated at *len at the latest */
    free(back);
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 5) return 0;
    const bool spm = data[0] & 1;
    const size_t file_len = (size_t)data[1] | (size_t)data[2] << 8 | (size_t)data[3] << 16 |
                            (size_t)data[4] << 24;
    if (file_len > size - 5) return 0;
    const char *file = (const char *)data + 5;
    cf_hf_tokenizer *t = NULL;
    const clformer_status st =
        spm ? cf_hf_tokenizer_from_spm(file, file_len, "fuzz tokenizer.model", &t)
            : cf_hf_tokenizer_from_json(file, file_len, "fuzz tokenizer.json", &t);
    if (st != CLFORMER_OK) {
        if (t) abort();
        return 0;
    }
    const char *text = file + file_len;
    const size_t len = size - 5 - file_len;
    check_round(t, text, len, true);
    check_round(t, text, len, false);
    const int32_t past = cf_hf_tokenizer_size(t);
    char *back = NULL;
    size_t back_len = 0;
    if (cf_hf_tokenizer_decode(t, &past, 1, false, &back, &back_len) == CLFORMER_OK) abort();
    free(back);
    cf_hf_tokenizer_free(t);
    return 0;
}
