/*
 * What libsentencepiece trusts in a model without checking: the normalizer's
 * precompiled character map (a double-array trie of replacement rules plus
 * the NUL-separated replacement strings). Its loader only checks the map's
 * length field; encoding then follows the trie's offsets and the strings'
 * positions unchecked, so a damaged or hostile map reads memory outside the
 * model (found by tests/fuzz/fuzz_tokenizer). clformer checks every map a
 * model holds before handing the model to the library.
 */
#ifndef CF_SPM_CHARSMAP_H
#define CF_SPM_CHARSMAP_H

#include "clformer.h"

#include <stddef.h>

/*
 * Checks each precompiled character map (NormalizerSpec field 2, in the
 * ModelProto's normalizer and denormalizer specs) of the serialized model
 * model[0..size): every trie position that encoding can reach lies inside
 * the trie, the trie has no cycle, no input matches more than 32 rules at
 * once (the library keeps 32 matches in a fixed array), and every rule's
 * replacement is a NUL-terminated string inside the map. Anything else,
 * including a model whose protobuf framing cannot be followed, is
 * CLFORMER_ERR_FORMAT naming `origin`.
 */
clformer_status cf_spm_check_charsmaps(const void *model, size_t size, const char *origin);

#endif
