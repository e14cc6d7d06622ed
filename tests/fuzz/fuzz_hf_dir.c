/* A Hugging Face GPT-2 directory's small files (cf_hf_files_parse,
 * runtime/format/hf_gpt2_files.c) as hostile bytes: byte 0 says which files
 * are there (bit 0 vocab.json, 1 merges.txt, 2 clformer_vocab.json, 3
 * clformer_spm.model), the rest is config.json, then each file present in
 * that order, separated by the byte 0x1E. Whatever is accepted must hold
 * together: a valid config, a BPE no larger than the vocabulary, exactly
 * vocab_size tokens. */
#include "fuzz_input.h"
#include "hf_gpt2_files.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const unsigned present = data[0];
    cf_hf_files f;
    memset(&f, 0, sizeof f);
    const uint8_t *p = data + 1, *end = data + size;
    for (int i = 0; i < CF_HF_FILES; i++) {
        if (i > 0 && !(present & (1u << (i - 1)))) continue;
        const uint8_t *sep = memchr(p, 0x1E, (size_t)(end - p));
        const size_t n = (size_t)((sep ? sep : end) - p);
        f.text[i] = fuzz_string(p, n);
        f.size[i] = n;
        p = sep ? sep + 1 : end;
    }
    cf_hf_parsed parsed;
    if (cf_hf_files_parse("fuzz", &f, &parsed) == CLFORMER_OK) {
        const clformer_config *c = &parsed.config;
        if (clformer_config_validate(c) != CLFORMER_OK) abort();
        if (parsed.bpe && cf_bpe_vocab_size(parsed.bpe) > c->tgt_vocab) abort();
        if (parsed.vocab && cf_vocab_size(parsed.vocab) != c->tgt_vocab) abort();
        if (parsed.ids_only == (parsed.bpe || parsed.vocab)) abort();
        if (parsed.spm && !parsed.vocab) abort();
        cf_hf_parsed_free(&parsed);
    }
    cf_hf_files_free(&f);
    return 0;
}
