/*
 * The model presets (clformer_config_preset, clformer_config_lm_preset):
 * each family's table (family.h), looked up by name. Translation's presets
 * are the encoder-decoder family's and set the shape alone; a language
 * model's are the decoder-only families' and set every field but the
 * vocabulary sizes, ln_eps and label smoothing. train --config and bench
 * --config take them, and `clformer presets --json` prints them into
 * tools/reference/presets.json for the PyTorch baseline.
 */
#include "family.h"
#include "names.h"
#include "status.h"

#include <pthread.h>
#include <string.h>

/* The preset names of translation's families [1] and of language models'
 * [0], in family order, NULL-terminated; gathered once (the tables are
 * constant). */
static const char *names[2][32];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void gather_names(void)
{
    for (int translation = 0; translation < 2; translation++) {
        size_t n = 0;
        for (const cf_family *const *f = cf_families; *f; f++)
            for (const char *const *p = (*f)->presets; (*f)->source == translation && *p; p++)
                if (n + 1 < CF_COUNT(names[0])) names[translation][n++] = *p;
        names[translation][n] = NULL;
    }
}

static const char *const *names_of(bool translation)
{
    pthread_once(&names_once, gather_names);
    return names[translation];
}

static clformer_status preset(bool translation, const char *name, clformer_config *c)
{
    int n = 0;
    for (const char *const *p = names_of(translation); *p; p++) n++;
    int i;
    CF_TRY(cf_parse_word(translation ? "model preset" : "language-model preset",
                         names_of(translation), n, name, &i));
    for (const cf_family *const *f = cf_families; *f; f++)
        for (int k = 0; (*f)->source == translation && (*f)->presets[k]; k++)
            if (!strcmp((*f)->presets[k], name)) {
                (*f)->preset(k, c);
                return CLFORMER_OK;
            }
    return CLFORMER_OK; /* not reached: the name parsed */
}

const char *const *clformer_config_presets(void) { return names_of(true); }

clformer_status clformer_config_preset(const char *name, clformer_config *c)
{
    return preset(true, name, c);
}

const char *const *clformer_config_lm_presets(void) { return names_of(false); }

clformer_status clformer_config_lm_preset(const char *name, clformer_config *c)
{
    return preset(false, name, c);
}
