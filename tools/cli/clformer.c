/* `clformer`: the command-line tool. Dispatches to tools/cmd_*.c. */
#include "cli.h"
#include "clformer.h"
#include "commands.h"
#include "exit_guard.h"
#include "pocl_devices.h"
#include "ranks.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <string.h>

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"devices", cmd_devices, "list OpenCL devices and the one CLFORMER_DEVICE selects"},
    {"demo", cmd_demo, "train on a built-in toy language pair and translate (no files needed)"},
    {"train", cmd_train, "train a translation model, or (--task lm) a language model"},
    {"translate", cmd_translate, "translate sentences with a trained model"},
    {"generate", cmd_generate, "continue a prompt with a language model (train --task lm)"},
    {"eval", cmd_eval, "score translations with BLEU, or a language model on a text (--text)"},
    {"bench", cmd_bench, "measure training and translation speed of a preset model"},
    {"presets", cmd_presets, "list the model-size presets (tiny ... base, gpt-mini ... gpt2)"},
    {"check", cmd_check, "check every op on a device against the double-precision reference"},
    {"plot", cmd_plot, "draw a training log's loss curves as a PNG"},
    {"logits", cmd_logits, "write a model's logits for given ids (for checks against PyTorch)"},
    {"export", cmd_export, "a checkpoint without training state, or a Hugging Face GPT-2 directory"},
    {"average", cmd_average, "average the weights of checkpoints of one model"},
};
static const size_t n_commands = sizeof commands / sizeof commands[0];

static void usage(FILE *out)
{
    fprintf(out, "usage: clformer COMMAND [options]\n"
                 "       clformer --version\n\n"
                 "Train and run Transformers (encoder-decoder translation, decoder-only language\n"
                 "models) on any OpenCL device.\n\n"
                 "commands:\n");
    for (size_t i = 0; i < n_commands; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n'clformer COMMAND --help' describes a command. The device is chosen by\n"
                 "CLFORMER_DEVICE (e.g. gpu, pocl:pthread, 0:1); see 'clformer devices'.\n");
}

/* True when `word` is `name` with one letter changed, added or dropped, or
 * two neighbours swapped. */
static bool typo_of(const char *word, const char *name)
{
    const size_t a = strlen(word), b = strlen(name);
    if (a > b + 1 || b > a + 1 || !strcmp(word, name)) return false;
    size_t i = 0;
    while (i < a && i < b && word[i] == name[i]) i++;
    if (a == b)
        return !strcmp(word + i + 1, name + i + 1) ||
               (i + 1 < a && word[i] == name[i + 1] && word[i + 1] == name[i] &&
                !strcmp(word + i + 2, name + i + 2));
    return a > b ? !strcmp(word + i + 1, name + i) : !strcmp(word + i, name + i + 1);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("clformer %s\n", clformer_version());
        return 0;
    }
    for (size_t i = 0; i < n_commands; i++)
        if (!strcmp(argv[1], commands[i].name)) {
            /* a signal while MPI starts still ends with 130 and one line */
            exit_guard_install(commands[i].name, false);
            pocl_devices_for_selector();
            ranks_init(&argc, &argv);
            exit_guard_install(commands[i].name, ranks_get()->rank != 0);
            int rc = exit_guard_finish(commands[i].name, commands[i].run(argc - 1, argv + 1));
            /* a failure on one rank of several ends them all, never a hang; a
             * Ctrl-C (130) is agreed by all ranks and ends normally */
            if (rc != 0 && rc != EXIT_INTERRUPTED && ranks_get()->size > 1) ranks_abort(rc);
            ranks_finalize();
            return rc;
        }
    /* a short hint, not the whole usage: the nearest command when one is a
     * typo away (a letter off, or two swapped) */
    const command *near = NULL;
    for (size_t i = 0; i < n_commands && !near; i++)
        if (typo_of(argv[1], commands[i].name)) near = &commands[i];
    char said[64];
    snprintf(said, sizeof said, "%s", argv[1]);
    for (char *p = said; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
    if (near)
        fprintf(stderr, "clformer: error: unknown command '%s'; did you mean '%s'? (clformer "
                "--help lists the commands)\n", said, near->name);
    else
        fprintf(stderr, "clformer: error: unknown command '%s' (clformer --help lists the "
                "commands)\n", said);
    return 2;
}
