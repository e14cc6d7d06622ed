/* The model config JSON (clformer_config_from_json): anything it accepts
 * must write back (clformer_config_to_json) and read back the same. */
#include "clformer.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_string(data, size);
    clformer_config c, back;
    if (clformer_config_from_json(text, &c) == CLFORMER_OK) {
        char *json = clformer_config_to_json(&c);
        if (!json || clformer_config_from_json(json, &back) != CLFORMER_OK) abort();
        char *again = clformer_config_to_json(&back);
        if (!again || strcmp(json, again) != 0) abort();
        free(json);
        free(again);
    }
    free(text);
    return 0;
}
