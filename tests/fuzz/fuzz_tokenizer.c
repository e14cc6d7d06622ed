/* The SentencePiece models a checkpoint carries (clformer.src_spm and
 * clformer.tgt_spm, runtime/format/checkpoint.c) as loading runs them,
 * without a device: the metadata value decoded from base64, the model parsed
 * by libsentencepiece (cf_spm_load), its pieces compared with the
 * checkpoint's vocabulary (cf_spm_check_vocab), then used as translate uses
 * it: encoding, the pieces line, decoding. The first input byte picks what
 * the rest is: odd, the metadata value (base64 text); even, the model's
 * bytes, so mutations reach the protobuf directly. libsentencepiece itself
 * is not instrumented: a fault inside it shows as a crash, not as coverage. */
#include "base64.h"
#include "fuzz_input.h"
#include "tokenizer_spm.h"
#include "vocab.h"

static const char *const sentences[] = {
    "A man is riding a bike.", "Zwei Männer   stehen am Ufer!", "", " ",
    "\xe2\x96\x81 <unk> <s> \xe6\x97\xa5\xe6\x9c\xac", "\t\xef\xbb\xbfx\xcc\x81y\r",
};

static void use(const cf_spm *spm)
{
    const int32_t n = cf_spm_size(spm);
    if (n < 4) abort(); /* the four specials always exist */
    const char **vocab = malloc((size_t)n * sizeof *vocab);
    if (!vocab) abort();
    for (int32_t i = 0; i < n; i++)
        if (!(vocab[i] = cf_spm_piece(spm, i))) abort();
    if (cf_spm_piece(spm, n) || cf_spm_piece(spm, -1)) abort();
    /* its own pieces are its vocabulary; one token more is not */
    if (cf_spm_check_vocab(spm, vocab, n, "fuzz", "source") != CLFORMER_OK) abort();
    if (cf_spm_check_vocab(spm, vocab, n - 1, "fuzz", "source") == CLFORMER_OK) abort();
    free(vocab);
    for (size_t s = 0; s < sizeof sentences / sizeof *sentences; s++) {
        const char *text = sentences[s];
        int32_t ids[256];
        size_t count;
        if (cf_spm_encode(spm, text, strlen(text), true, ids, 256, &count, NULL) != CLFORMER_OK)
            continue;
        if (count < 2 || ids[0] != CF_SOS) abort(); /* wrapped in <sos> ... <eos> */
        for (size_t i = 0; i < count && i < 256; i++)
            if (ids[i] < 0 || ids[i] >= n) abort();
        char *back = NULL, *line = NULL;
        if (cf_spm_decode(spm, ids, count < 256 ? count : 256, &back) == CLFORMER_OK) free(back);
        if (cf_spm_pieces_line(spm, text, strlen(text), &line) == CLFORMER_OK) free(line);
    }
    /* every id decodes, specials and out-of-range ones checked */
    int32_t all[512];
    const size_t k = n < 512 ? (size_t)n : 512;
    for (size_t i = 0; i < k; i++) all[i] = (int32_t)(k - 1 - i);
    char *text = NULL;
    if (cf_spm_decode(spm, all, k, &text) == CLFORMER_OK) free(text);
    int32_t bad = n;
    if (cf_spm_decode(spm, &bad, 1, &text) == CLFORMER_OK) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    unsigned char *model = NULL;
    size_t model_size = size - 1;
    if (data[0] & 1) {
        char *b64 = fuzz_string(data + 1, size - 1);
        clformer_status st = cf_base64_decode(b64, "clformer.src_spm", &model, &model_size);
        free(b64);
        if (st != CLFORMER_OK) return 0;
    }
    cf_spm *spm;
    if (cf_spm_load(model ? model : data + 1, model_size, "fuzz", &spm) == CLFORMER_OK) {
        use(spm);
        cf_spm_free(spm);
    }
    free(model);
    return 0;
}
