/* `clformer presets`: the library's model-size presets, translation's
 * (clformer_config_preset) and language models' (clformer_config_lm_preset),
 * as text or JSON. tools/reference/presets.json is the JSON form, which the
 * PyTorch baseline (tools/reference/bench_torch.py) reads; test_presets_json
 * fails when that file and this output differ. */
#include "cli.h"
#include "clformer.h"
#include "commands.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* A task's presets: the library's names and configs, and how one is shown. */
typedef struct {
    const char *name;    /* the JSON's "task" */
    const char *heading; /* the text listing's */
    const char *const *(*names)(void);
    clformer_status (*config)(const char *name, clformer_config *c);
    /* the JSON fields a preset sets beyond the shape (false: out of memory) */
    bool (*json_more)(json_t *o, const clformer_config *c);
    void (*print)(const char *name, const clformer_config *c);
} preset_task;

/* The fields a preset sets (NULL: out of memory). */
static json_t *preset_json(const preset_task *task, const clformer_config *c)
{
    json_t *o = json_pack("{s:s, s:i, s:i, s:i, s:i, s:i}", "task", task->name, "d_model",
                          c->d_model, "n_heads", c->n_heads, "d_ff", c->d_ff, "n_enc_layers",
                          c->n_enc_layers, "n_dec_layers", c->n_dec_layers);
    if (o && !task->json_more(o, c)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static bool shape_only(json_t *o, const clformer_config *c)
{
    (void)o, (void)c;
    return true;
}

/* a language model's context, dropout, family and key/value heads.
 * Fixed-precision dropout: 0.2, not 0.200000003. */
static bool lm_json_more(json_t *o, const clformer_config *c)
{
    return !json_object_set_new(o, "context", json_integer(c->max_len)) &&
           !json_object_set_new(o, "dropout", json_real(round(c->dropout * 1000) / 1000)) &&
           !json_object_set_new(o, "family",
                                json_string(clformer_family_name(clformer_config_family(c)))) &&
           !json_object_set_new(o, "n_kv_heads",
                                json_integer(c->n_kv_heads > 0 ? c->n_kv_heads : c->n_heads));
}

static void print_translation(const char *name, const clformer_config *c)
{
    printf("  %-9s d_model %d, %d heads, d_ff %d, %d+%d layers\n", name, c->d_model, c->n_heads,
           c->d_ff, c->n_enc_layers, c->n_dec_layers);
}

static void print_lm(const char *name, const clformer_config *c)
{
    /* grouped-query attention: its key/value heads after the heads */
    char kv[32] = "";
    if (c->n_kv_heads > 0 && c->n_kv_heads != c->n_heads)
        snprintf(kv, sizeof kv, " (%d key/value)", c->n_kv_heads);
    printf("  %-14s %-5s d_model %d, %d heads%s, d_ff %d, %d layers, context %d, dropout %g\n",
           name, clformer_family_name(clformer_config_family(c)), c->d_model, c->n_heads, kv,
           c->d_ff, c->n_dec_layers, c->max_len, round(c->dropout * 1000) / 1000);
}

static const preset_task translation = {
    "translation", "translation (encoder-decoder): train --config NAME, bench --config NAME\n",
    clformer_config_presets, clformer_config_preset, shape_only, print_translation,
};

static const preset_task language_models = {
    "lm", "language models (decoder-only, the gpt or llama family): train --task lm --config NAME\n",
    clformer_config_lm_presets, clformer_config_lm_preset, lm_json_more, print_lm,
};

/* One task's presets, printed or added to `all`; false on an error (said). */
static bool list_task(const preset_task *task, json_t *all)
{
    if (!all) printf("%s", task->heading);
    for (const char *const *name = task->names(); *name; name++) {
        clformer_config c;
        clformer_config_default(&c);
        if (task->config(*name, &c) != CLFORMER_OK) {
            cli_runtime_error("presets", *name);
            return false;
        }
        json_t *o = all ? preset_json(task, &c) : NULL;
        if (all && (!o || json_object_set_new(all, *name, o))) {
            cli_error("presets", "out of host memory");
            return false;
        }
        if (!all) task->print(*name, &c);
    }
    return true;
}

int cmd_presets(int argc, char **argv)
{
    bool json = false;
    const cli_option options[] = {
        {"--json", CLI_FLAG, &json, NULL,
         "print JSON: {\"tiny\": {\"task\": \"translation\", \"d_model\", \"n_heads\",\n"
         "\"d_ff\", \"n_enc_layers\", \"n_dec_layers\"}, ..., \"gpt-mini\":\n"
         "{\"task\": \"lm\", ..., \"context\", \"dropout\"}, ...}"},
    };
    const cli_spec spec = {
        "presets",
        "List the model-size presets --config takes: translation models' (train, bench)\n"
        "and language models' (train --task lm); the other model options keep their\n"
        "defaults (docs/MODEL.md).",
        "clformer presets [--json]",
        "tools/reference/presets.json holds the --json output for the PyTorch baseline.",
        options, sizeof options / sizeof options[0], NULL, 0, NULL};
    cli_result r = cli_parse(&spec, argc, argv);
    if (r != CLI_OK) return r == CLI_HELP ? 0 : EXIT_USAGE;

    json_t *all = json ? json_object() : NULL;
    if (json && !all) {
        cli_error("presets", "out of host memory");
        return 1;
    }
    if (!list_task(&translation, all) || (!json && putchar('\n') == EOF) ||
        !list_task(&language_models, all)) {
        json_decref(all);
        return 1;
    }
    if (all) {
        char *text = json_dumps(all, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
        json_decref(all);
        if (!text) {
            cli_error("presets", "out of host memory");
            return 1;
        }
        printf("%s\n", text);
        free(text);
    }
    return 0;
}
