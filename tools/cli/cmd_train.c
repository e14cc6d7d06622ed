/* `clformer train`: train a translation model on parallel text. */
#include "cli.h"
#include "spm_setup.h"
#include "clformer.h"
#include "commands.h"
#include "ranks.h"
#include "lines.h"
#include "resume_check.h"
#include "train_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Named model sizes (issue #5): tiny, small and the paper's base. */
static bool preset(const char *name, clformer_config *c)
{
    clformer_config_default(c);
    if (!strcmp(name, "tiny")) {
        c->d_model = 64, c->n_heads = 4, c->d_ff = 256, c->n_enc_layers = c->n_dec_layers = 2;
    } else if (!strcmp(name, "small")) {
        c->d_model = 256, c->n_heads = 4, c->d_ff = 1024, c->n_enc_layers = c->n_dec_layers = 3;
    } else if (!strcmp(name, "base")) {
        c->d_model = 512, c->n_heads = 8, c->d_ff = 2048, c->n_enc_layers = c->n_dec_layers = 6;
    } else {
        return false;
    }
    return true;
}

typedef struct {
    const clformer_train_options *want;
    const train_given *given;
} resume_args;

static int check_resume(clformer_trainer *t, void *user)
{
    const resume_args *a = user;
    clformer_train_options have;
    clformer_trainer_settings(t, &have);
    return resume_check("train", a->want, a->given, &have);
}

int cmd_train(int argc, char **argv)
{
    const char *src = NULL, *tgt = NULL, *val_src = NULL, *val_tgt = NULL, *init = NULL,
               *resume = NULL, *save = NULL, *log = NULL, *plot = NULL, *config_name = "small",
               *activation = NULL, *positional = NULL, *schedule = "constant",
               *optimizer = "adam";
    long min_freq = 1, max_vocab = 0, batch_size = 0, batch_tokens = 0, steps = 0, epochs = 0,
         warmup = 4000, eval_every = 0, save_every = 0, bleu_sentences = 200, seed = 1,
         check_sync = 0,
         d_model = 0, heads = 0, d_ff = 0, enc_layers = 0, dec_layers = 0, max_len = 0;
    double lr = 5e-4, clip = 1.0, weight_decay = 0.0, dropout = 0.1, label_smoothing = 0.0;
    bool no_shuffle = false, post_norm = false, tie = false;
    train_given g = {0};
    spm_flags spm = {0};
    const cli_option options[] = {
        {"--src", CLI_STRING, &src, "FILE", "training source sentences, one per line (required)"},
        {"--tgt", CLI_STRING, &tgt, "FILE", "training target sentences, line-aligned (required)"},
        {"--val-src", CLI_STRING, &val_src, "FILE", "validation source sentences"},
        {"--val-tgt", CLI_STRING, &val_tgt, "FILE", "validation target sentences"},
        {"--config", CLI_CHOICE, &config_name, NULL, "model size preset (default small)", 0, 0, "tiny|small|base", &g.config},
        {"--d-model", CLI_INT, &d_model, "N", "width of token vectors", 1, 65536, NULL, &g.d_model},
        {"--heads", CLI_INT, &heads, "N", "attention heads (must divide --d-model)", 1, 4096, NULL, &g.heads},
        {"--d-ff", CLI_INT, &d_ff, "N", "feed-forward hidden width", 1, 1 << 20, NULL, &g.d_ff},
        {"--enc-layers", CLI_INT, &enc_layers, "N", "encoder blocks", 1, 1024, NULL, &g.enc_layers},
        {"--dec-layers", CLI_INT, &dec_layers, "N", "decoder blocks", 1, 1024, NULL, &g.dec_layers},
        {"--max-len", CLI_INT, &max_len, "N", "longest sequence with <sos>/<eos> (default 256); longer pairs are skipped", 3, 65536, NULL, &g.max_len},
        {"--post-norm", CLI_FLAG, &post_norm, NULL, "post-norm blocks (the paper's) instead of pre-norm", 0, 0, NULL, &g.post_norm},
        {"--activation", CLI_CHOICE, &activation, NULL, "feed-forward activation (default relu)", 0, 0, "relu|gelu", &g.activation},
        {"--positional", CLI_CHOICE, &positional, NULL, "positional encoding (default sinusoidal)", 0, 0, "sinusoidal|learned", &g.positional},
        {"--tie-embeddings", CLI_FLAG, &tie, NULL, "tie the generator to the target embedding", 0, 0, NULL, &g.tie},
        {"--dropout", CLI_DOUBLE, &dropout, "P", "dropout probability (default 0.1)", 0, 0.99, NULL, &g.dropout},
        {"--label-smoothing", CLI_DOUBLE, &label_smoothing, "E", "label smoothing (default 0)", 0, 0.99, NULL, &g.label_smoothing},
        {"--min-freq", CLI_INT, &min_freq, "N", "vocabulary: keep tokens seen at least N times (default 1)", 1, 1000000},
        {"--max-vocab", CLI_INT, &max_vocab, "N", "vocabulary: at most N tokens with the 4 specials (0: all)", 0, 1 << 24},
        {"--tokenizer", CLI_CHOICE, &spm.tokenizer, NULL, "word: whitespace tokens (default); spm: raw text, SentencePiece subwords", 0, 0, "word|spm"},
        {"--vocab-size", CLI_INT, &spm.vocab_size, "N", "spm: learn a joint vocabulary of N pieces from the training text", 8, 1 << 20},
        {"--tokenizer-type", CLI_CHOICE, &spm.type, NULL, "spm: the kind learned (default unigram)", 0, 0, "unigram|bpe"},
        {"--tokenizer-model", CLI_STRING, &spm.model, "FILE.model", "spm: use this SentencePiece model for both sides"},
        {"--src-tokenizer-model", CLI_STRING, &spm.src_model, "FILE.model", "spm: the source side's model"},
        {"--tgt-tokenizer-model", CLI_STRING, &spm.tgt_model, "FILE.model", "spm: the target side's model"},
        {"--init", CLI_STRING, &init, "MODEL", "start from these weights (config and vocabularies from the file)"},
        {"--resume", CLI_STRING, &resume, "CKPT", "continue a training checkpoint exactly (step, optimizer, data position); options given with it must equal the checkpoint's"},
        {"--steps", CLI_INT, &steps, "N", "train until the model has taken N steps in total", 1, 1L << 40},
        {"--epochs", CLI_INT, &epochs, "N", "train for N passes over the data (instead of --steps)", 1, 1000000},
        {"--batch-size", CLI_INT, &batch_size, "B", "sentence pairs per step", 1, 1 << 20, NULL, &g.batch_size},
        {"--batch-tokens", CLI_INT, &batch_tokens, "N", "padded tokens per step, length-bucketed (default 4096)", 1, 1 << 30, NULL, &g.batch_tokens},
        {"--no-shuffle", CLI_FLAG, &no_shuffle, NULL, "batches of consecutive pairs in file order", 0, 0, NULL, &g.no_shuffle},
        {"--seed", CLI_INT, &seed, "N", "seed of initialisation, dropout and shuffling (default 1)", 0, 0, NULL, &g.seed},
        {"--lr", CLI_DOUBLE, &lr, "LR", "learning rate, or the noam factor (default 5e-4)", 0, 1000, NULL, &g.lr},
        {"--lr-schedule", CLI_CHOICE, &schedule, NULL, "learning-rate schedule (default constant)", 0, 0, "constant|noam", &g.schedule},
        {"--warmup", CLI_INT, &warmup, "N", "noam warm-up steps (default 4000)", 1, 1L << 30, NULL, &g.warmup},
        {"--optimizer", CLI_CHOICE, &optimizer, NULL, "Adam (L2 decay) or AdamW (decoupled) (default adam)", 0, 0, "adam|adamw", &g.optimizer},
        {"--weight-decay", CLI_DOUBLE, &weight_decay, "W", "weight decay of matrices and embeddings (default 0)", 0, 10, NULL, &g.weight_decay},
        {"--clip", CLI_DOUBLE, &clip, "NORM", "global gradient-norm clip, 0 = off (default 1)", 0, 1e6, NULL, &g.clip},
        {"--eval-every", CLI_INT, &eval_every, "N", "validate every N steps (and at the end)", 1, 1L << 40},
        {"--bleu-sentences", CLI_INT, &bleu_sentences, "N", "validation sentences translated for BLEU (default 200, 0: none)", 0, 1 << 30},
        {"--save", CLI_STRING, &save, "FILE", "write a training checkpoint here at the end (and on Ctrl-C)"},
        {"--save-every", CLI_INT, &save_every, "N", "also save every N steps", 1, 1L << 40},
        {"--log", CLI_STRING, &log, "FILE", "metrics as JSON lines: step, loss, tokens, lr, ..."},
        {"--plot", CLI_STRING, &plot, "FILE.png", "draw the loss curves at the end"},
        {"--check-sync", CLI_INT, &check_sync, "N", "under mpirun: every N steps check that all ranks hold the same parameters; stop on a difference", 1, 1L << 40},
    };
    const cli_spec spec = {
        "train",
        "Train an encoder-decoder Transformer on parallel text (one sentence per line,\n"
        "whitespace tokens). Vocabularies come from the training data (or --init/--resume).\n"
        "With --tokenizer spm the text is raw and the vocabulary SentencePiece subwords, learned\n"
        "(--vocab-size) or given (--tokenizer-model); the checkpoint carries the tokenizer, so\n"
        "translate and eval take and give raw text.",
        "clformer train --src FILE --tgt FILE (--steps N | --epochs N) [options]",
        "examples:\n"
        "  clformer train --src train.en --tgt train.de --val-src val.en --val-tgt val.de \\\n"
        "      --config small --epochs 10 --save model.safetensors --log train.jsonl\n"
        "  clformer train --src train.en --tgt train.de --resume model.safetensors --steps 20000\n"
        "  clformer train --src raw/train.en --tgt raw/train.de --tokenizer spm --vocab-size 8000 \\\n"
        "      --steps 2000 --save spm.safetensors\n"
        "Ctrl-C (or SIGTERM) saves a training checkpoint (--save, else\n"
        "clformer-interrupted.safetensors). Under mpirun see docs/DISTRIBUTED.md.\n"
        "The device is CLFORMER_DEVICE's choice (see clformer devices).",
        options, sizeof options / sizeof options[0], NULL, 0, NULL};
    cli_result r = cli_parse(&spec, argc, argv);
    if (r != CLI_OK) return r == CLI_HELP ? 0 : EXIT_USAGE;

    /* option consistency, each a one-line error */
    if (!src || !tgt) return cli_error("train", "--src and --tgt are required"), EXIT_USAGE;
    if (!val_src != !val_tgt) return cli_error("train", "--val-src and --val-tgt go together"), EXIT_USAGE;
    if (!steps == !epochs) return cli_error("train", "give exactly one of --steps and --epochs"), EXIT_USAGE;
    if (batch_size && batch_tokens) return cli_error("train", "give --batch-size or --batch-tokens, not both"), EXIT_USAGE;
    if (init && resume) return cli_error("train", "--init and --resume exclude each other"), EXIT_USAGE;
    const bool model_flag = g.config || g.d_model || g.heads || g.d_ff || g.enc_layers ||
                            g.dec_layers || g.max_len || g.post_norm || g.activation ||
                            g.positional || g.tie;
    if (init && model_flag)
        return cli_error("train", "the model's shape comes from --init: remove the model options (--config, --d-model, ...)"), EXIT_USAGE;
    if (save_every && !save) return cli_error("train", "--save-every needs --save"), EXIT_USAGE;
    /* options that would silently do nothing */
    if (eval_every && !val_src)
        return cli_error("train", "--eval-every needs validation data (--val-src and --val-tgt)"), EXIT_USAGE;
    if (g.warmup && strcmp(schedule, "noam") != 0)
        return cli_error("train", "--warmup applies to --lr-schedule noam only (the constant schedule has no warm-up)"),
               EXIT_USAGE;
    const char *spm_problem = spm_flags_problem(&spm, !init && !resume);
    if (spm_problem) return cli_error("train", "%s", spm_problem), EXIT_USAGE;

    clformer_train_options o;
    clformer_train_options_default(&o);
    o.src_path = src, o.tgt_path = tgt, o.val_src_path = val_src, o.val_tgt_path = val_tgt;
    o.min_freq = (int)min_freq, o.max_vocab = (int)max_vocab;
    o.batching.batch_size = (int)batch_size;
    o.batching.batch_tokens = batch_size ? 0 : (int)(batch_tokens ? batch_tokens : 4096);
    o.batching.shuffle = !no_shuffle;
    o.batching.seed = (uint64_t)seed;
    preset(config_name, &o.config);
    clformer_config *c = &o.config;
    if (d_model) c->d_model = (int)d_model;
    if (heads) c->n_heads = (int)heads;
    if (d_ff) c->d_ff = (int)d_ff;
    if (enc_layers) c->n_enc_layers = (int)enc_layers;
    if (dec_layers) c->n_dec_layers = (int)dec_layers;
    if (max_len) c->max_len = (int)max_len;
    c->norm_first = !post_norm;
    if (activation) c->activation = !strcmp(activation, "gelu") ? CLFORMER_ACT_GELU : CLFORMER_ACT_RELU;
    if (positional) c->positional = !strcmp(positional, "learned") ? CLFORMER_POS_LEARNED : CLFORMER_POS_SINUSOIDAL;
    c->share_tgt_embed = tie;
    c->dropout = (float)dropout;
    c->label_smoothing = (float)label_smoothing;
    if (!init && !resume) {
        /* check the shape now (vocabulary sizes are filled in from the data) */
        clformer_config probe = *c;
        probe.src_vocab = probe.tgt_vocab = 5;
        if (clformer_config_validate(&probe) != CLFORMER_OK) {
            cli_runtime_error("train", "model options");
            return EXIT_USAGE;
        }
    }
    o.init_path = init, o.resume_path = resume;
    o.override_dropout = g.dropout, o.override_label_smoothing = g.label_smoothing;
    o.seed = (uint64_t)seed;
    o.optim.optimizer = !strcmp(optimizer, "adamw") ? CLFORMER_ADAMW : CLFORMER_ADAM;
    o.optim.weight_decay = (float)weight_decay;
    o.optim.clip = (float)clip;
    o.lr = (float)lr;
    o.schedule = !strcmp(schedule, "noam") ? CLFORMER_LR_NOAM : CLFORMER_LR_CONSTANT;
    o.warmup = (uint64_t)warmup;
    o.steps = (uint64_t)steps, o.epochs = (uint64_t)epochs;
    o.eval_every = (uint64_t)eval_every, o.bleu_sentences = (size_t)bleu_sentences;
    o.save_path = save, o.save_every = (uint64_t)save_every;
    o.stop_save_path = save ? save : "clformer-interrupted.safetensors";
    o.log_path = log;
    o.check_sync_every = (uint64_t)check_sync;
    char plot_log[4096];
    if (plot && !log) { /* the figure is drawn from the log: keep one beside it */
        snprintf(plot_log, sizeof plot_log, "%s.jsonl", plot);
        o.log_path = plot_log;
    }

    /* a run's results must not be lost at the end to a mistyped path, nor
     * its inputs to an output named like one (--save may replace --resume's
     * checkpoint: it is read whole first, and replaced atomically) */
    const cli_file outputs[] = {{"--save", save}, {"--plot", plot}, {"--log", o.log_path}};
    const cli_file inputs[] = {{"--src", src},         {"--tgt", tgt},   {"--val-src", val_src},
                               {"--val-tgt", val_tgt}, {"--log", o.log_path}, {"--plot", plot},
                               {"--save", save},       {"--init", init}, {"--resume", resume}};
    for (size_t i = 0; i < sizeof outputs / sizeof *outputs; i++) {
        if (!outputs[i].path) continue;
        /* every input but the output itself, and for --save the checkpoints */
        cli_file others[sizeof inputs / sizeof *inputs];
        size_t n = 0;
        for (size_t k = 0; k < sizeof inputs / sizeof *inputs; k++)
            if (strcmp(inputs[k].option, outputs[i].option) != 0 &&
                !(i == 0 && (!strcmp(inputs[k].option, "--init") ||
                             !strcmp(inputs[k].option, "--resume"))))
                others[n++] = inputs[k];
        if (check_not_input(outputs[i].path, others, n) != CLFORMER_OK) {
            cli_runtime_error("train", outputs[i].option);
            return EXIT_USAGE;
        }
        if (check_writable(outputs[i].path) != CLFORMER_OK) {
            cli_runtime_error("train", outputs[i].option);
            return 1;
        }
    }

    if (ranks_require("train")) return 1;
    void *spm_bytes[2];
    if (spm_setup(&spm, &o, spm_bytes)) return 1;
    clformer_context *ctx;
    if (ranks_context_create(&ctx) != CLFORMER_OK) {
        cli_runtime_error("train", "opening the device");
        free(spm_bytes[0]);
        free(spm_bytes[1]);
        return 1;
    }
    clformer_train_result res;
    /* --resume: the options given must be the checkpoint's */
    const resume_args check = {&o, &g};
    int rc = train_run("train", ctx, o, plot, resume ? check_resume : NULL, (void *)&check, NULL,
                       &res);
    free(spm_bytes[0]);
    free(spm_bytes[1]);
    if (rc == 0 && ranks_get()->rank == 0)
        printf("trained to step %llu in %.1fs (%.0f target tokens/s); last loss %.4f\n",
               (unsigned long long)res.steps, res.seconds, res.tokens_per_s, res.loss);
    clformer_context_free(ctx);
    return rc;
}
