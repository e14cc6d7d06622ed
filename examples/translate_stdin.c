/*
 * Translates standard input, one sentence per line, with a trained model:
 *
 *     translate_stdin MODEL.safetensors < sentences.txt > translations.txt
 *
 * Line i of the output answers line i of the input (an empty line stays
 * empty). The device is the one the clformer command would choose: the
 * CLFORMER_DEVICE variable, else the best GPU, else a CPU.
 */
#define _POSIX_C_SOURCE 200809L /* getline */
#include <clformer.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads stdin into *lines (without their '\n'); false when out of memory
 * or on a read error. */
static bool read_lines(char ***lines, size_t *n)
{
    char *line = NULL;
    size_t cap = 0, have = 0;
    ssize_t len;
    *lines = NULL;
    *n = 0;
    while ((len = getline(&line, &cap, stdin)) >= 0) {
        if (len > 0 && line[len - 1] == '\n') line[len - 1] = '\0';
        if (*n == have) {
            have = have ? 2 * have : 64;
            char **grown = realloc(*lines, have * sizeof *grown);
            if (!grown) break;
            *lines = grown;
        }
        if (!((*lines)[*n] = strdup(line))) break;
        ++*n;
    }
    const bool ok = feof(stdin) && !ferror(stdin);
    free(line);
    return ok;
}

static void free_lines(char **lines, size_t n)
{
    for (size_t i = 0; i < n; i++) free(lines[i]);
    free(lines);
}

static int fail(const char *doing)
{
    fprintf(stderr, "translate_stdin: %s: %s\n", doing, clformer_last_error());
    return 1;
}

static int translate(clformer_context *ctx, const char *model_path)
{
    clformer_model *model = NULL;
    if (clformer_model_load(ctx, model_path, &model) != CLFORMER_OK)
        return fail("loading the model");
    /* the weights are the model's; what translating needs is the session's */
    clformer_session *session = NULL;
    if (clformer_session_create(model, &session) != CLFORMER_OK) {
        clformer_model_free(model);
        return fail("making a session");
    }

    char **lines = NULL;
    size_t n = 0;
    if (!read_lines(&lines, &n)) {
        free_lines(lines, n);
        clformer_session_free(session);
        clformer_model_free(model);
        fprintf(stderr, "translate_stdin: cannot read stdin\n");
        return 1;
    }

    /* Beam search over 4 hypotheses, 32 sentences decoded together. */
    clformer_decode_options options;
    clformer_decode_options_default(&options);
    options.beam = 4;
    char **outputs = calloc(n ? n : 1, sizeof *outputs);
    int rc = 0;
    if (!outputs) {
        fprintf(stderr, "translate_stdin: out of memory\n");
        rc = 1;
    } else if (clformer_translate_sentences(session, (const char *const *)lines, n, &options,
                                            32, outputs, NULL, NULL, NULL) != CLFORMER_OK) {
        rc = fail("translating");
    } else {
        for (size_t i = 0; i < n; i++) printf("%s\n", outputs[i]);
        if (fflush(stdout) != 0) {
            fprintf(stderr, "translate_stdin: cannot write stdout\n");
            rc = 1;
        }
    }

    for (size_t i = 0; outputs && i < n; i++) clformer_free(outputs[i]);
    free(outputs);
    free_lines(lines, n);
    clformer_session_free(session);
    clformer_model_free(model);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s MODEL.safetensors < sentences.txt\n", argv[0]);
        return 2;
    }
    /* The environment's settings (CLFORMER_DEVICE, CLFORMER_CACHE_DIR, ...);
     * clformer_context_params_default() would ignore the environment. */
    clformer_context_params params;
    if (clformer_context_params_from_env(&params) != CLFORMER_OK)
        return fail("reading the environment");
    clformer_context *ctx = NULL;
    if (clformer_context_create_with_params(&params, &ctx) != CLFORMER_OK)
        return fail("opening the device");
    int rc = translate(ctx, argv[1]);
    clformer_context_free(ctx);
    return rc;
}
