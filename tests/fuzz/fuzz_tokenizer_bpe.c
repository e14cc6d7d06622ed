/* GPT-2's byte-level BPE files (cf_bpe_load: vocab.json + merges.txt, as a
 * checkpoint or a user's directory gives them). The input is
 * vocab.json NUL merges.txt NUL text: anything loaded must encode the text
 * into ids of its vocabulary that decode back to the text exactly. */
#include "fuzz_input.h"
#include "tokenizer_bpe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data, *end = s + size;
    const char *nul1 = memchr(s, '\0', size);
    if (!nul1) return 0;
    const char *nul2 = memchr(nul1 + 1, '\0', (size_t)(end - nul1 - 1));
    if (!nul2) return 0;
    cf_bpe *bpe = NULL;
    if (cf_bpe_load(s, (size_t)(nul1 - s), "fuzz vocab", nul1 + 1, (size_t)(nul2 - nul1 - 1),
                    "fuzz merges", &bpe) != CLFORMER_OK) {
        if (bpe) abort();
        return 0;
    }
    const char *text = nul2 + 1;
    size_t len = (size_t)(end - text), n = 0, back_len = 0;
    int32_t *ids = NULL;
    char *back = NULL;
    if (cf_bpe_encode(bpe, text, len, &ids, &n) != CLFORMER_OK) abort();
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= cf_bpe_vocab_size(bpe)) abort();
    if (cf_bpe_decode(bpe, ids, n, &back, &back_len) != CLFORMER_OK) abort();
    /* Encoding starts from the 256 byte tokens, and a merge's token is
     * spelled as its two halves together (checked on load): ids that encoding
     * gives always decode to the text. */
    if (back_len != len || memcmp(back, text, len) != 0) abort();
    free(back);
    free(ids);
    cf_bpe_free(bpe);
    return 0;
}
