/* The corpus reader (cf_parallel_text_load, then a vocabulary and
 * cf_corpus_encode as training does). The first byte picks where the input
 * splits into the source and target files. */
#include "corpus.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    size_t split = (size - 1) * data[0] / 255;
    const char *src = fuzz_file(0, data + 1, split);
    const char *tgt = fuzz_file(1, data + 1 + split, size - 1 - split);
    cf_parallel_text *text;
    if (cf_parallel_text_load(src, tgt, &text) != CLFORMER_OK) return 0;
    cf_vocab *sv = NULL, *tv = NULL;
    cf_corpus *c = NULL;
    if (cf_vocab_build(text->src, text->n, 1, 0, &sv) == CLFORMER_OK &&
        cf_vocab_build(text->tgt, text->n, 2, 8, &tv) == CLFORMER_OK &&
        cf_corpus_encode(text, sv, tv, 6, &c) == CLFORMER_OK) {
        for (size_t i = 0; i < c->n; i++) {
            int len;
            const int32_t *ids = cf_corpus_src(c, i, &len);
            if (len < 2 || len > 6 || ids[0] < 0 || ids[0] >= cf_vocab_size(sv)) abort();
        }
    }
    cf_corpus_free(c);
    cf_vocab_free(sv);
    cf_vocab_free(tv);
    cf_parallel_text_free(text);
    return 0;
}
