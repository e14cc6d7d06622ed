/* A Hugging Face Llama directory's config.json (runtime/format/hf_llama_config.c)
 * as `generate`, `eval` and `train --init` read it: whatever parses holds
 * together (the shapes the model needs, ids within the vocabulary) and
 * becomes a clformer config that validates, or is refused with a message;
 * never a crash or undefined behaviour on the way (ASan, UBSan). */
#include "fuzz_input.h"
#include "hf_llama_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cf_hf_llama_config h;
    if (cf_hf_llama_config_parse((const char *)data, size, "config.json", &h) != CLFORMER_OK) {
        if (!clformer_last_error()[0]) abort(); /* refused without a message */
        return 0;
    }
    if (h.vocab_size < 1 || h.hidden_size < 1 || h.num_attention_heads < 1 ||
        h.num_key_value_heads < 1 || h.head_dim * h.num_attention_heads != h.hidden_size ||
        h.num_attention_heads % h.num_key_value_heads || !(h.rms_norm_eps > 0) ||
        h.n_eos > CF_HF_LLAMA_MAX_EOS || h.bos_token_id >= h.vocab_size ||
        h.pad_token_id >= h.vocab_size)
        abort();
    for (size_t i = 0; i < h.n_eos; i++)
        if (h.eos_token_id[i] < 0 || h.eos_token_id[i] >= h.vocab_size) abort();
    clformer_config c;
    if (cf_hf_llama_clformer_config(&h, "config.json", &c) != CLFORMER_OK) {
        if (!clformer_last_error()[0]) abort();
        return 0;
    }
    if (clformer_config_validate(&c) != CLFORMER_OK || c.d_model != h.hidden_size ||
        c.n_heads != h.num_attention_heads || c.tgt_vocab != h.vocab_size ||
        c.family != CLFORMER_FAMILY_LLAMA)
        abort();
    return 0;
}
