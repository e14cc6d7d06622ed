/* The attention path setting (include/clformer.h, clformer_attention_path):
 * its words. Which path a batch takes is decided in runtime/model/acts.c. */
#include "context.h"

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
