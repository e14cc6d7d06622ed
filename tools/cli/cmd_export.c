/* `clformer export`: a checkpoint without its training state, for PyTorch's
 * strict load_state_dict and for shipping a model. */
#include "cli.h"
#include "clformer.h"
#include "commands.h"
#include "lines.h"

#include <stdlib.h>

int cmd_export(int argc, char **argv)
{
    const char *model = NULL, *out = NULL;
    const cli_option options[] = {
        {"--model", CLI_STRING, &model, "FILE", "the checkpoint, training or plain (required)"},
        {"--out", CLI_STRING, &out, "FILE", "write the weights and model metadata here (required)"},
    };
    const cli_spec spec = {
        "export",
        "Write a checkpoint's weights, config and vocabularies without its training state\n"
        "(no optim.* tensors, no train_state): the file loads with PyTorch's strict\n"
        "load_state_dict, and in clformer as a plain model. No device is used.",
        "clformer export --model FILE --out FILE",
        "The output is written atomically; README.md shows the Python that loads it.",
        options, sizeof options / sizeof options[0], NULL, 0, NULL};
    cli_result r = cli_parse(&spec, argc, argv);
    if (r != CLI_OK) return r == CLI_HELP ? 0 : EXIT_USAGE;
    if (!model || !out) {
        cli_error("export", "--model and --out are required");
        return EXIT_USAGE;
    }
    const cli_file inputs[] = {{"--model", model}};
    if (check_not_input(out, inputs, 1) != CLFORMER_OK) {
        cli_runtime_error("export", "--out");
        return EXIT_USAGE;
    }
    if (check_writable(out) != CLFORMER_OK) {
        cli_runtime_error("export", "--out");
        return EXIT_USAGE;
    }
    if (clformer_checkpoint_export(model, out) != CLFORMER_OK) {
        cli_runtime_error("export", NULL);
        return 1;
    }
    return 0;
}
