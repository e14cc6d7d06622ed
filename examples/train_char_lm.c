/*
 * Trains a small character-level language model (decoder-only, GPT-style)
 * on a text made here, then samples from it through the library API:
 *
 *     train_char_lm [TEXT.txt]      (default: a counting rhyme written to /tmp)
 *
 * Exits non-zero when training does not lower the loss or a seed does not
 * give the same text twice.
 */
#include <clformer.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const numbers[] = {"one", "two", "three", "four", "five",
                                      "six", "seven", "eight", "nine", "ten"};

/* A text that a small model learns in a few hundred steps. */
static int write_rhyme(const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    for (int round = 0; round < 40; round++)
        for (int i = 0; i < 10; i++)
            fprintf(f, "%s little bird%s, sitting on a wall.\n", numbers[i], i ? "s" : "");
    return fclose(f);
}

static bool on_progress(const clformer_train_progress *p, void *user)
{
    double *first_last = user;
    if (p->event == CLFORMER_TRAIN_VALIDATION) {
        printf("step %4llu  validation loss %.3f\n", (unsigned long long)p->step, p->val_loss);
        return true;
    }
    if (p->step == 1) first_last[0] = p->loss;
    first_last[1] = p->loss;
    if (p->step % 50 == 0) printf("step %4llu  loss %.3f\n", (unsigned long long)p->step, p->loss);
    return true;
}

/* Prints each token as generate chooses it. */
static bool print_token(void *user, int32_t token)
{
    char *text = NULL;
    if (clformer_lm_decode(user, &token, 1, &text) != CLFORMER_OK) return false;
    fputs(text, stdout);
    fflush(stdout);
    clformer_free(text);
    return true;
}

static int fail(const char *doing)
{
    fprintf(stderr, "train_char_lm: %s: %s\n", doing, clformer_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "/tmp/clformer_rhyme.txt";
    if (argc <= 1 && write_rhyme(path) != 0) return fprintf(stderr, "cannot write %s\n", path), 1;

    clformer_context_params params; /* CLFORMER_DEVICE etc., as the clformer command */
    clformer_context *ctx = NULL;
    if (clformer_context_params_from_env(&params) != CLFORMER_OK ||
        clformer_context_create_with_params(&params, &ctx) != CLFORMER_OK)
        return fail("opening the device");

    clformer_train_options o;
    clformer_train_options_default(&o);
    o.text_path = path;                  /* characters; the last 10% validate */
    o.val_fraction = 0.1f;
    o.lm_tokenizer = CLFORMER_LM_CHAR;
    clformer_config_lm_preset("gpt-mini", &o.config);
    o.config.d_model = 64, o.config.n_heads = 4, o.config.d_ff = 256, o.config.n_dec_layers = 2;
    o.config.max_len = 32;               /* the context */
    o.batching.batch_size = 16;          /* windows per step */
    o.steps = 300;
    o.optim.optimizer = CLFORMER_ADAMW;
    o.optim.weight_decay = 0.1f;
    o.lr = 3e-3f;
    o.schedule = CLFORMER_LR_COSINE;     /* warm-up, then down to lr / 10 at the last step */
    o.warmup = 20;
    o.eval_every = 100;
    o.eval_batches = 4;
    double first_last[2] = {0, 0};
    o.callback = on_progress;
    o.user = first_last;

    clformer_trainer *trainer = NULL;
    clformer_train_result result;
    int rc = 0;
    if (clformer_trainer_create(ctx, &o, &trainer) != CLFORMER_OK) rc = fail("preparing");
    else if (clformer_trainer_run(trainer, &result) != CLFORMER_OK) rc = fail("training");
    clformer_model *model = rc ? NULL : clformer_trainer_release_model(trainer);
    clformer_trainer_free(trainer);
    if (!rc && !(first_last[1] < 0.5 * first_last[0])) {
        fprintf(stderr, "train_char_lm: the loss did not fall (%.3f -> %.3f)\n", first_last[0],
                first_last[1]);
        rc = 1;
    }

    /* sampling: the prompt's ids, then tokens streamed as they come, twice */
    clformer_session *session = NULL;
    int32_t *prompt = NULL, first[60], second[60];
    size_t n = 0, made = 0;
    clformer_sample_options s;
    clformer_sample_options_default(&s);
    s.max_tokens = 60, s.temperature = 0.8f, s.top_k = 10, s.seed = 7;
    if (!rc && (clformer_session_create(model, &session) != CLFORMER_OK ||
                clformer_lm_encode(model, "three", 5, &prompt, &n) != CLFORMER_OK))
        rc = fail("preparing to sample");
    if (!rc) {
        fputs("three", stdout);
        if (clformer_session_generate(session, prompt, n, &s, print_token, model, first, &made) !=
                CLFORMER_OK ||
            clformer_session_generate(session, prompt, n, &s, NULL, NULL, second, &made) !=
                CLFORMER_OK)
            rc = fail("sampling");
        putchar('\n');
    }
    if (!rc && memcmp(first, second, sizeof first) != 0) {
        fprintf(stderr, "train_char_lm: the same seed gave two texts\n");
        rc = 1;
    }
    clformer_free(prompt);
    clformer_session_free(session);
    clformer_model_free(model);
    clformer_context_free(ctx);
    return rc;
}
