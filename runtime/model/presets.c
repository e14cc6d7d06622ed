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

/* The preset names of each task (clformer_task), every family's under its
 * task, in family order, NULL-terminated, and the family and index of each;
 * gathered once (the tables are constant). */
static const char *names[2][32];
static struct {
    const cf_family *family;
    int index;
} owner[2][32];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void gather_names(void)
{
    size_t n[2] = {0, 0};
    for (const cf_family *const *f = cf_families; *f; f++) {
        const clformer_task t = cf_family_task(*f);
        for (int k = 0; (*f)->presets[k] && n[t] + 1 < CF_COUNT(names[t]); k++) {
            owner[t][n[t]].family = *f, owner[t][n[t]].index = k;
            names[t][n[t]++] = (*f)->presets[k];
        }
    }
}

static const char *const *names_of(clformer_task task)
{
    pthread_once(&names_once, gather_names);
    return names[task];
}

/* A name of the task's presets (the error names them), set by its family. */
static clformer_status preset(clformer_task task, const char *name, clformer_config *c)
{
    static const char *const what[] = {[CLFORMER_TASK_TRANSLATION] = "model preset",
                                       [CLFORMER_TASK_LM] = "language-model preset"};
    int n = 0;
    for (const char *const *p = names_of(task); *p; p++) n++;
    int i;
    CF_TRY(cf_parse_word(what[task], names_of(task), n, name, &i));
    owner[task][i].family->preset(owner[task][i].index, c);
    return CLFORMER_OK;
}

const char *const *clformer_config_presets(void) { return names_of(CLFORMER_TASK_TRANSLATION); }

clformer_status clformer_config_preset(const char *name, clformer_config *c)
{
    return preset(CLFORMER_TASK_TRANSLATION, name, c);
}

const char *const *clformer_config_lm_presets(void) { return names_of(CLFORMER_TASK_LM); }

clformer_status clformer_config_lm_preset(const char *name, clformer_config *c)
{
    return preset(CLFORMER_TASK_LM, name, c);
}
