/* The attention tile search's file (runtime/ops/attention_search.c), the
 * lines after its header, read against an NVIDIA GPU's profile tiles: a
 * line it accepts is that head size's, names those tiles, and chooses tiles
 * that sum as they do (the same head size, splits and streamed tiles) and
 * fit the device; and any tiles text that parses is written back and
 * parses again to the same tiles. The first byte chooses the head size. */
#include "fuzz_input.h"
#include "attention_search.h"
#include "profile.h"

static clformer_device_profile nvidia(void)
{
    clformer_device_info d;
    memset(&d, 0, sizeof d);
    snprintf(d.vendor, sizeof d.vendor, "%s", "NVIDIA Corporation");
    d.type = CLFORMER_DEVICE_GPU;
    d.max_work_group_size = 1024;
    d.local_mem_bytes = 48 << 10;
    d.vector_width_float = 1;
    clformer_device_profile p;
    if (clformer_device_profile_for(&d, NULL, &p) != CLFORMER_OK) abort();
    return p;
}

/* Text that parses as tiles is written back, and that parses to the same. */
static void round_trip(const char *text, unsigned dh)
{
    cf_attention_tiles t, back;
    if (!cf_attention_tiles_parse(text, dh, &t)) return;
    char spec[256];
    cf_attention_tiles_spec(&t, spec, sizeof spec);
    if (!cf_attention_tiles_parse(spec, dh, &back) || memcmp(&t, &back, sizeof t)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static clformer_device_profile p;
    static bool made;
    if (!made) p = nvidia(), made = true;
    if (size < 1) return 0;
    const unsigned dh = 1 + data[0] % 256;
    cf_attention_tiles t;
    const char *why;
    if (!cf_attention_tiles_for(&p, dh, &t, &why)) abort(); /* every head size to 256 has tiles */
    char *body = fuzz_string(data + 1, size - 1);
    for (char *save = NULL, *line = strtok_r(body, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        round_trip(line, dh);
        cf_attention_tiles c;
        if (!cf_attention_search_line(&p, line, &t, &c)) continue;
        if (c.head_dim != dh || c.fwd_split != t.fwd_split || c.fwd_keys != t.fwd_keys ||
            c.dq_split != t.dq_split || c.dq_keys != t.dq_keys || c.dkv_split != t.dkv_split ||
            c.dkv_rows != t.dkv_rows || !cf_attention_tiles_fit(&p, &c, &why))
            abort();
        char spec[256];
        cf_attention_tiles_spec(&c, spec, sizeof spec);
        round_trip(spec, dh);
    }
    free(body);
    return 0;
}
