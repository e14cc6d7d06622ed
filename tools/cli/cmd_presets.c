/* `clformer presets`: the library's model-size presets (clformer_config_preset),
 * as text or JSON. tools/reference/presets.json is the JSON form, which the
 * PyTorch baseline (tools/reference/bench_torch.py) reads; test_presets_json
 * fails when that file and this output differ. */
#include "cli.h"
#include "clformer.h"
#include "commands.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

static json_t *preset_json(const clformer_config *c)
{
    return json_pack("{s:i, s:i, s:i, s:i, s:i}", "d_model", c->d_model, "n_heads", c->n_heads,
                     "d_ff", c->d_ff, "n_enc_layers", c->n_enc_layers, "n_dec_layers",
                     c->n_dec_layers);
}

int cmd_presets(int argc, char **argv)
{
    bool json = false;
    const cli_option options[] = {
        {"--json", CLI_FLAG, &json, NULL,
         "print JSON: {\"tiny\": {\"d_model\", \"n_heads\", \"d_ff\", \"n_enc_layers\", "
         "\"n_dec_layers\"}, ...}"},
    };
    const cli_spec spec = {
        "presets",
        "List the model-size presets that train --config and bench --config take; the\n"
        "other model options keep their defaults (docs/MODEL.md).",
        "clformer presets [--json]",
        "tools/reference/presets.json holds the --json output for the PyTorch baseline.",
        options, sizeof options / sizeof options[0], NULL, 0, NULL};
    cli_result r = cli_parse(&spec, argc, argv);
    if (r != CLI_OK) return r == CLI_HELP ? 0 : EXIT_USAGE;

    json_t *all = json ? json_object() : NULL;
    for (const char *const *name = clformer_config_presets(); *name; name++) {
        clformer_config c;
        clformer_config_default(&c);
        if (clformer_config_preset(*name, &c) != CLFORMER_OK) {
            cli_runtime_error("presets", *name);
            json_decref(all);
            return 1;
        }
        if (all)
            json_object_set_new(all, *name, preset_json(&c));
        else
            printf("%-6s d_model %d, %d heads, d_ff %d, %d+%d layers\n", *name, c.d_model,
                   c.n_heads, c.d_ff, c.n_enc_layers, c.n_dec_layers);
    }
    if (all) {
        char *text = json_dumps(all, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
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
