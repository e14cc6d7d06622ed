/* The attention settings' words: the path (include/clformer.h,
 * clformer_attention_path; which path a batch takes is decided in
 * runtime/model/acts.c) and the tile search (attention_tuning). */
#include "context.h"

#include <string.h>
#include <strings.h>

static const char *const names[] = {"auto", "fused", "unfused", "gemm-backward"};
enum { PATHS = sizeof names / sizeof *names };

const char *clformer_attention_path_name(clformer_attention_path path)
{
    return (unsigned)path < PATHS ? names[path] : "?";
}

clformer_status clformer_attention_path_parse(const char *choice, clformer_attention_path *path)
{
    if (!choice || !*choice) {
        *path = CLFORMER_ATTENTION_AUTO;
        return CLFORMER_OK;
    }
    for (int i = 0; i < PATHS; i++)
        if (strcasecmp(choice, names[i]) == 0) {
            *path = (clformer_attention_path)i;
            return CLFORMER_OK;
        }
    return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                   "unknown attention path '%s' (CLFORMER_ATTENTION): use fused, unfused, "
                   "gemm-backward or auto",
                   choice);
}

clformer_attention_path clformer_context_attention_path(const clformer_context *ctx)
{
    return ctx->attention_path;
}

clformer_status cf_attention_tuning_parse(const char *setting, const clformer_device_profile *p,
                                          bool *on)
{
    if (!setting || !*setting || !strcasecmp(setting, "auto")) {
        *on = p->attention_search;
    } else if (!strcasecmp(setting, "search")) {
        *on = true;
    } else if (!strcasecmp(setting, "off") || !strcmp(setting, "0")) {
        *on = false;
    } else {
        return cf_fail(CLFORMER_ERR_INVALID_ARGUMENT,
                       "unknown attention tuning '%s' (CLFORMER_ATTENTION_TUNING): use auto "
                       "(the tile search on GPUs), search (on any device with tiled "
                       "attention) or off",
                       setting);
    }
    return CLFORMER_OK;
}
