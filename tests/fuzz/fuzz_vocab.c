/* Vocabulary metadata (cf_vocab_from_json: clformer.src_vocab/tgt_vocab and
 * vocabulary files): anything accepted must round-trip through
 * cf_vocab_to_json, and encode and decode a sentence of its own tokens. */
#include "fuzz_input.h"
#include "vocab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cf_vocab *v;
    if (cf_vocab_from_json((const char *)data, size, "fuzz", &v) != CLFORMER_OK) return 0;
    char *json = NULL;
    cf_vocab *back = NULL;
    if (cf_vocab_to_json(v, &json) != CLFORMER_OK ||
        cf_vocab_from_json(json, strlen(json), "round trip", &back) != CLFORMER_OK ||
        cf_vocab_size(back) != cf_vocab_size(v))
        abort();
    int32_t n = cf_vocab_size(v);
    const char *last = cf_vocab_token(v, n - 1);
    if (cf_vocab_find(v, last) != n - 1) abort();
    int32_t ids[64];
    size_t count = cf_vocab_encode(v, last, strlen(last), true, ids, 64, NULL);
    char *text = NULL;
    if (count <= 64 && cf_vocab_decode(v, ids, count, &text) == CLFORMER_OK) free(text);
    free(json);
    cf_vocab_free(back);
    cf_vocab_free(v);
    return 0;
}
