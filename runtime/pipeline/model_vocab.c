/* A copy of a model's vocabulary (clformer_vocab_from_model), for callers
 * that encode and decode text themselves: the model holds it as a data-layer
 * cf_vocab, and the copy is theirs to free. */
#include "status.h"
#include "vocab.h"

clformer_status clformer_vocab_from_model(const clformer_model *model, clformer_side side,
                                          clformer_vocab **vocab)
{
    const clformer_config *c = clformer_model_config(model);
    const bool target = side == CLFORMER_SIDE_TARGET;
    const char *const *tokens = target ? clformer_model_tgt_vocab(model)
                                       : clformer_model_src_vocab(model);
    if (!tokens)
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT, "the model has no vocabularies");
    return cf_vocab_from_tokens(tokens, (size_t)(target ? c->tgt_vocab : c->src_vocab),
                                target ? "target vocabulary" : "source vocabulary", vocab);
}
