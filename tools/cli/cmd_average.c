/* `clformer average`: the mean of several checkpoints' weights (the last
 * checkpoints of one run, as `train --keep-last N` keeps them), a plain
 * model that translates and evaluates like any other. */
#include "cli.h"
#include "clformer.h"
#include "commands.h"
#include "cli_files.h"

#include <stdio.h>
#include <stdlib.h>

enum { MAX_CHECKPOINTS = 1000 };

int cmd_average(int argc, char **argv)
{
    const char *out = NULL;
    bool overwrite = false;
    const char **paths = calloc(MAX_CHECKPOINTS, sizeof *paths);
    size_t n = 0;
    if (!paths) {
        cli_error("average", "out of host memory");
        return 1;
    }
    const cli_option options[] = {
        {"--out", CLI_STRING, &out, "FILE", "write the averaged model here (required)"},
        OVERWRITE_CLI_OPTION(overwrite),
    };
    const cli_spec spec = {
        "average",
        "Average the weights of checkpoints of one model (element-wise mean), e.g. the\n"
        "last N of a run (train --keep-last N). They must share config, vocabularies and\n"
        "tokenizers. The output is a plain model (no optimizer state) written atomically.\n"
        "No device is used.",
        "clformer average --out AVG.safetensors CKPT CKPT...",
        "example:\n"
        "  clformer average --out avg.safetensors run/model.step*.safetensors\n"
        "  clformer eval --model avg.safetensors --src test.en --ref test.de --beam 5",
        options, sizeof options / sizeof options[0], paths, MAX_CHECKPOINTS, &n};
    cli_result r = cli_parse(&spec, argc, argv);
    int rc = r == CLI_OK ? -1 : r == CLI_HELP ? 0 : EXIT_USAGE;
    if (rc < 0 && !out) {
        cli_error("average", "--out is required (see clformer average --help)");
        rc = EXIT_USAGE;
    }
    if (rc < 0 && n == 0) {
        cli_error("average", "give the checkpoints to average after the options");
        rc = EXIT_USAGE;
    }
    cli_files files = {"average", NULL, false};
    if (rc < 0 && !cli_files_begin(&files, "average", overwrite)) rc = 1;
    for (size_t i = 0; rc < 0 && i < n; i++)
        if (!cli_files_read(&files, "CKPT", paths[i])) rc = 1;
    if (rc < 0) rc = cli_files_write(&files, "--out", out, 0) ? cli_files_open(&files) : 1;
    if (rc < 0 && clformer_checkpoint_average(paths, n, out) != CLFORMER_OK) {
        cli_runtime_error("average", NULL);
        rc = 1;
    }
    if (rc < 0) {
        printf("averaged %zu checkpoint%s into %s\n", n, n == 1 ? "" : "s", out);
        rc = 0;
    }
    cli_files_end(&files);
    free(paths);
    return rc;
}
