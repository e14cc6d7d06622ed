/* The kernel cache file (runtime/device/program_cache.c) as read back before
 * any device sees it: magic, key, length, binary, checksum. */
#include "fuzz_input.h"
#include "program.h"

/* The key the seed files were made for (tests/fuzz/make_seeds.py). */
static const char KEY[] = "platform=fuzz\nsource=kernel void k() {}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const unsigned char *binary;
    size_t len;
    if (cf_cache_parse((const char *)data, size, KEY, &binary, &len)) {
        const unsigned char *end = data + size;
        if (len == 0 || binary < data || binary + len > end) abort();
    }
    return 0;
}
