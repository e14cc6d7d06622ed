/* Checkpoint validation (runtime/format/checkpoint.c) as loading runs it,
 * without a device: metadata, config, vocabularies, train_state, every
 * tensor's shape, checksum and finiteness. */
#include "checkpoint.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cf_st_reader *r;
    if (cf_st_open(fuzz_file(0, data, size), &r) != CLFORMER_OK) return 0;
    cf_checkpoint_check(r);
    cf_st_close(r);
    return 0;
}
