/* The clformer.train_state metadata value of training checkpoints, parsed as
 * loading parses it (step, seed, optimizer settings, the trainer's part). */
#include "checkpoint.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_string(data, size);
    cf_train_state_check(text);
    free(text);
    return 0;
}
