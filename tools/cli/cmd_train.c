/* `clformer train`: train a translation model on parallel text, or (--task
 * lm) a decoder-only language model on plain text. */
#include "cli.h"
#include "spm_setup.h"
#include "lm_tokenizer_setup.h"
#include "clformer.h"
#include "commands.h"
#include "ranks.h"
#include "lines.h"
#include "cli_files.h"
#include "resume_check.h"
#include "train_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct train_task train_task;

typedef struct {
    const train_task *task;
    const clformer_train_options *want;
    const train_given *given;
    const spm_flags *spm;
    lm_tokenizer_flags *lmtok; /* --task lm */
} resume_args;

/* Where a run without --save keeps its model: never nowhere (issue 21). */
#define DEFAULT_SAVE "clformer-model.safetensors"
#define INTERRUPTED_SAVE "clformer-interrupted.safetensors"

/* Everything `clformer train` parses, as the options table writes it. */
typedef struct {
    const char *src, *tgt, *val_src, *val_tgt, *init, *resume, *save, *log, *plot, *config_name,
        *activation, *positional, *schedule, *optimizer, *best_metric, *task, *text, *val_text,
        *precision, *max_time;
    long min_freq, max_vocab, batch_size, batch_tokens, steps, epochs, warmup, eval_every,
        save_every, bleu_sentences, seed, check_sync, d_model, heads, d_ff, enc_layers, dec_layers,
        max_len, keep_last, patience, context, eval_batches, decay_steps;
    double lr, clip, weight_decay, dropout, label_smoothing, warmup_init_lr, attention_dropout,
        activation_dropout, val_fraction, min_lr, loss_scale;
    bool no_shuffle, post_norm, tie, share_all, no_save, save_best, best_metric_given, given_val_fraction,
        given_min_lr, recompute, overwrite;
    const char *save_default; /* why --save was filled in (NULL: given) */
    char default_save[4096], interrupted_save[4096]; /* default names no earlier file has */
    train_given g;
    spm_flags spm;
    lm_tokenizer_flags lmtok;
    char plot_log[4096]; /* --plot without --log: the log kept beside the figure */
} train_args;

/* Parses the command line into `a` (defaults first); returns -1 to go on,
 * else the exit code (0 after --help). */
static int parse_args(int argc, char **argv, train_args *a)
{
    clformer_train_options d; /* the library's defaults, not copies of them */
    clformer_train_options_default(&d);
    *a = (train_args){.config_name = "small", .precision = "fp32",
                      .schedule = d.schedule == CLFORMER_LR_NOAM ? "noam" : "constant",
                      .optimizer = d.optim.optimizer == CLFORMER_ADAMW ? "adamw" : "adam",
                      .min_freq = d.min_freq, .warmup = (long)d.warmup,
                      .bleu_sentences = (long)d.bleu_sentences, .seed = (long)d.seed,
                      .lr = d.lr, .clip = d.optim.clip, .dropout = d.config.dropout,
                      .label_smoothing = d.config.label_smoothing, .task = "translate",
                      .val_fraction = 0.1, .eval_batches = (long)d.eval_batches};
    /* the choices the library names (its enums and presets) */
    const char *acts[8] = {0}, *positions[8] = {0}, *presets[16] = {0};
    for (int i = 0; i < 7 && clformer_activation_name((clformer_activation)i); i++)
        acts[i] = clformer_activation_name((clformer_activation)i);
    for (int i = 0; i < 7 && clformer_positional_name((clformer_positional)i); i++)
        positions[i] = clformer_positional_name((clformer_positional)i);
    int np = 0;
    for (const char *const *p = clformer_config_presets(); *p && np < 7; p++) presets[np++] = *p;
    for (const char *const *p = clformer_config_lm_presets(); *p && np < 15; p++) presets[np++] = *p;
    char preset_choices[160], act_choices[128], pos_choices[128];
    cli_choices(preset_choices, sizeof preset_choices, presets);
    cli_choices(act_choices, sizeof act_choices, acts);
    cli_choices(pos_choices, sizeof pos_choices, positions);
    const cli_option options[] = {
        {"--task", CLI_CHOICE, &a->task, NULL, "translate: sentence pairs (default); lm: a decoder-only language model on plain text", 0, 0, "translate|lm"},
        {"--text", CLI_STRING, &a->text, "FILE", "lm: the training text (required with --task lm)"},
        {"--val-text", CLI_STRING, &a->val_text, "FILE", "lm: validation text (default: the last --val-fraction of --text)"},
        {"--val-fraction", CLI_DOUBLE, &a->val_fraction, "F", "lm: without --val-text, validate on the text's last fraction (default 0.1; 0: none)", 0, 0.9, NULL, &a->given_val_fraction},
        {"--context", CLI_INT, &a->context, "N", "lm: tokens the model sees (default: the preset's)", 2, 65536, NULL, &a->g.max_len},
        {"--eval-batches", CLI_INT, &a->eval_batches, "N", "lm: validation batches of random windows (default 20)", 1, 1 << 20},
        {"--lr-decay-steps", CLI_INT, &a->decay_steps, "N", "cosine: the step the decay ends (default --steps)", 1, 1L << 40},
        {"--min-lr", CLI_DOUBLE, &a->min_lr, "LR", "cosine: the rate after the decay (default --lr / 10)", 0, 1000, NULL, &a->given_min_lr},
        {"--src", CLI_STRING, &a->src, "FILE", "training source sentences, one per line (required)"},
        {"--tgt", CLI_STRING, &a->tgt, "FILE", "training target sentences, line-aligned (required)"},
        {"--val-src", CLI_STRING, &a->val_src, "FILE", "validation source sentences"},
        {"--val-tgt", CLI_STRING, &a->val_tgt, "FILE", "validation target sentences"},
        {"--config", CLI_CHOICE, &a->config_name, NULL, "model preset (default small; lm: gpt-mini; clformer presets lists the translation ones)", 0, 0, preset_choices, &a->g.config},
        {"--d-model", CLI_INT, &a->d_model, "N", "width of token vectors", 1, 65536, NULL, &a->g.d_model},
        {"--heads", CLI_INT, &a->heads, "N", "attention heads (must divide --d-model)", 1, 4096, NULL, &a->g.heads},
        {"--d-ff", CLI_INT, &a->d_ff, "N", "feed-forward hidden width", 1, 1 << 20, NULL, &a->g.d_ff},
        {"--enc-layers", CLI_INT, &a->enc_layers, "N", "encoder blocks", 1, 1024, NULL, &a->g.enc_layers},
        {"--dec-layers", CLI_INT, &a->dec_layers, "N", "decoder blocks", 1, 1024, NULL, &a->g.dec_layers},
        {"--max-len", CLI_INT, &a->max_len, "N", "longest sequence with <sos>/<eos> (default 256); longer pairs are skipped", 3, 65536, NULL, &a->g.max_len},
        {"--post-norm", CLI_FLAG, &a->post_norm, NULL, "post-norm blocks (the paper's) instead of pre-norm", 0, 0, NULL, &a->g.post_norm},
        {"--activation", CLI_CHOICE, &a->activation, NULL, "feed-forward activation (default relu)", 0, 0, act_choices, &a->g.activation},
        {"--positional", CLI_CHOICE, &a->positional, NULL, "positional encoding (default sinusoidal)", 0, 0, pos_choices, &a->g.positional},
        {"--tie-embeddings", CLI_FLAG, &a->tie, NULL, "tie the generator to the target embedding", 0, 0, NULL, &a->g.tie},
        {"--share-all-embeddings", CLI_FLAG, &a->share_all, NULL, "one joint vocabulary of both sides (word: their union; spm: one model of both sides' text); the source embedding, target embedding and generator are one matrix", 0, 0, NULL, &a->g.share_all},
        {"--dropout", CLI_DOUBLE, &a->dropout, "P", "dropout probability (default 0.1)", 0, 0.99, NULL, &a->g.dropout},
        {"--attention-dropout", CLI_DOUBLE, &a->attention_dropout, "P", "dropout of the attention probabilities (default: --dropout's)", 0, 0.99, NULL, &a->g.attention_dropout},
        {"--activation-dropout", CLI_DOUBLE, &a->activation_dropout, "P", "dropout after the feed-forward activation (default: --dropout's)", 0, 0.99, NULL, &a->g.activation_dropout},
        {"--label-smoothing", CLI_DOUBLE, &a->label_smoothing, "E", "label smoothing (default 0)", 0, 0.99, NULL, &a->g.label_smoothing},
        {"--min-freq", CLI_INT, &a->min_freq, "N", "vocabulary: keep tokens seen at least N times (default 1)", 1, 1000000, NULL, &a->g.min_freq},
        {"--max-vocab", CLI_INT, &a->max_vocab, "N", "vocabulary: at most N tokens with the 4 specials (0: all)", 0, 1 << 24, NULL, &a->g.max_vocab},
        {"--tokenizer", CLI_CHOICE, &a->spm.tokenizer, NULL, "word: whitespace tokens (default); spm: raw text, SentencePiece subwords; lm: char (default), byte, spm or gpt2-bpe (GPT-2's byte-level BPE from vocab.json + merges.txt)", 0, 0, "word|spm|char|byte|gpt2-bpe"},
        {"--bpe-vocab", CLI_STRING, &a->lmtok.bpe_vocab, "FILE", "gpt2-bpe: GPT-2's vocab.json (token -> id; the model's vocabulary, ids as they are)"},
        {"--bpe-merges", CLI_STRING, &a->lmtok.bpe_merges, "FILE", "gpt2-bpe: GPT-2's merges.txt"},
        {"--tokenizer-dir", CLI_STRING, &a->lmtok.dir, "DIR", "gpt2-bpe: a directory holding vocab.json and merges.txt (a Hugging Face GPT-2 directory)"},
        {"--vocab-size", CLI_INT, &a->spm.vocab_size, "N", "spm: learn a joint vocabulary of N pieces from the training text (lm: from --text)", 8, 1 << 20},
        {"--tokenizer-type", CLI_CHOICE, &a->spm.type, NULL, "spm: the kind learned (default unigram)", 0, 0, "unigram|bpe"},
        {"--tokenizer-model", CLI_STRING, &a->spm.model, "FILE.model", "spm: use this SentencePiece model for both sides"},
        {"--src-tokenizer-model", CLI_STRING, &a->spm.src_model, "FILE.model", "spm: the source side's model"},
        {"--tgt-tokenizer-model", CLI_STRING, &a->spm.tgt_model, "FILE.model", "spm: the target side's model"},
        {"--init", CLI_STRING, &a->init, "MODEL", "start from these weights (config and vocabularies from the file)"},
        {"--resume", CLI_STRING, &a->resume, "CKPT", "continue a training checkpoint exactly (step, optimizer, data position); options given with it must equal the checkpoint's"},
        {"--steps", CLI_INT, &a->steps, "N", "train until the model has taken N steps in total", 1, 1L << 40},
        {"--max-time", CLI_STRING, &a->max_time, "DURATION", "also stop after the first step that ends DURATION after training began (seconds, or 90m, 2h): a normal end, validated and saved; on a resume it counts from the resume"},
        {"--epochs", CLI_INT, &a->epochs, "N", "train for N passes over the data (instead of --steps); lm: over consecutive windows", 1, 1000000},
        {"--batch-size", CLI_INT, &a->batch_size, "B", "sentence pairs per step", 1, 1 << 20, NULL, &a->g.batch_size},
        {"--batch-tokens", CLI_INT, &a->batch_tokens, "N", "padded tokens per step, length-bucketed (default 4096)", 1, 1 << 30, NULL, &a->g.batch_tokens},
        {"--no-shuffle", CLI_FLAG, &a->no_shuffle, NULL, "batches of consecutive pairs (lm --epochs: windows) in file order", 0, 0, NULL, &a->g.no_shuffle},
        {"--seed", CLI_INT, &a->seed, "N", "seed of initialisation, dropout and shuffling (default 1)", 0, 0, NULL, &a->g.seed},
        {"--lr", CLI_DOUBLE, &a->lr, "LR", "learning rate, or the noam factor (default 5e-4)", 0, 1000, NULL, &a->g.lr},
        {"--lr-schedule", CLI_CHOICE, &a->schedule, NULL, "learning-rate schedule (default constant; lm: cosine); inverse-sqrt is fairseq's: linear warm-up from --warmup-init-lr to --lr, then --lr * sqrt(warmup/step); cosine: warm-up, then down to --min-lr at --lr-decay-steps", 0, 0, "constant|noam|inverse-sqrt|cosine", &a->g.schedule},
        {"--warmup", CLI_INT, &a->warmup, "N", "noam, inverse-sqrt or cosine warm-up steps (default 4000; lm: 100)", 0, 1L << 30, NULL, &a->g.warmup},
        {"--warmup-init-lr", CLI_DOUBLE, &a->warmup_init_lr, "LR", "inverse-sqrt: the warm-up's first learning rate (default 0)", 0, 1000, NULL, &a->g.warmup_init_lr},
        {"--optimizer", CLI_CHOICE, &a->optimizer, NULL, "Adam (L2 decay) or AdamW (decoupled) (default adam)", 0, 0, "adam|adamw", &a->g.optimizer},
        {"--weight-decay", CLI_DOUBLE, &a->weight_decay, "W", "weight decay of matrices and embeddings (default 0)", 0, 10, NULL, &a->g.weight_decay},
        {"--clip", CLI_DOUBLE, &a->clip, "NORM", "global gradient-norm clip, 0 = off (default 1)", 0, 1e6, NULL, &a->g.clip},
        {"--eval-every", CLI_INT, &a->eval_every, "N", "validate every N steps (and at the end)", 1, 1L << 40},
        {"--bleu-sentences", CLI_INT, &a->bleu_sentences, "N", "validation sentences translated for BLEU (default 200, 0: none)", 0, 1 << 30},
        {"--save", CLI_STRING, &a->save, "FILE", "write a training checkpoint here at the end (and on Ctrl-C); default: --resume's file, else " DEFAULT_SAVE},
        {"--no-save", CLI_FLAG, &a->no_save, NULL, "keep nothing at the end of the run (Ctrl-C still saves " INTERRUPTED_SAVE ")"},
        {"--save-every", CLI_INT, &a->save_every, "N", "also save every N steps", 1, 1L << 40},
        {"--keep-last", CLI_INT, &a->keep_last, "N", "with --save P.safetensors and --save-every: also write the weights to P.step<S>.safetensors at each save, keeping the newest N (for clformer average)", 1, 1L << 30},
        {"--save-best", CLI_FLAG, &a->save_best, NULL, "write P.best.safetensors whenever validation improves (--best-metric)"},
        {"--best-metric", CLI_CHOICE, &a->best_metric, NULL, "what --save-best and --patience watch (default loss)", 0, 0, "loss|bleu", &a->best_metric_given},
        {"--patience", CLI_INT, &a->patience, "N", "stop after N validations in a row without improving --best-metric", 1, 1L << 30},
        {"--log", CLI_STRING, &a->log, "FILE", "metrics as JSON lines: step, loss, tokens, lr, ... (--resume: appended to)"},
        {"--plot", CLI_STRING, &a->plot, "FILE.png", "draw the loss curves at the end"},
        OVERWRITE_CLI_OPTION(a->overwrite),
        {"--recompute", CLI_FLAG, &a->recompute, NULL, "keep only each layer's output and recompute the rest in backward: about one layer's activations instead of all layers', for one more forward pass per step (same results)"},
        {"--precision", CLI_CHOICE, &a->precision, NULL, "storage precision of activations, their gradients and the weights a step reads: values rounded to bf16 or fp16, and what backward reads kept in 16 bits (fp32 master weights, Adam state, statistics and arithmetic; fp16 scales the loss dynamically; checkpoints stay fp32) (default fp32)", 0, 0, "fp32|bf16|fp16"},
        {"--loss-scale", CLI_DOUBLE, &a->loss_scale, "S", "fp16: the loss scale to start from, a power of two (default 65536, or a resumed run's; mainly for tests)", 1, 0x1p120},
        {"--check-sync", CLI_INT, &a->check_sync, "N", "under mpirun: every N steps check that all ranks hold the same parameters; stop on a difference", 1, 1L << 40},
    };
    const cli_spec spec = {
        "train",
        "Train an encoder-decoder Transformer on parallel text (one sentence per line,\n"
        "whitespace tokens), or with --task lm a decoder-only (GPT) language model on plain\n"
        "text: the text is encoded once (characters, bytes, SentencePiece pieces or GPT-2's\n"
        "byte-level BPE, in chunks), each step takes --batch-size random windows of\n"
        "--context tokens drawn from (seed, step), so --resume is exact; with --epochs N the\n"
        "text is cut into consecutive windows, each epoch in an order drawn from (seed,\n"
        "epoch) (text order with --no-shuffle).\n"
        "lm defaults follow nanoGPT: AdamW (0.9, 0.99), lr 1e-3, weight decay 0.1, cosine\n"
        "schedule with 100 warm-up steps down to lr/10, batch 12, clip 1.\n"
        "Vocabularies come from the training data (or --init/--resume; --init also takes a\n"
        "Hugging Face GPT-2 or Llama directory, whose tokenizer.json or tokenizer.model then\n"
        "encodes the text and goes into the checkpoint).\n"
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
        "  clformer train --task lm --text input.txt --config gpt-mini --steps 2000 \\\n"
        "      --eval-every 250 --save lm.safetensors\n"
        "  clformer train --task lm --text corpus.txt --tokenizer gpt2-bpe --bpe-vocab vocab.json \\\n"
        "      --bpe-merges merges.txt --steps 2000 --save bpe-lm.safetensors\n"
        "  clformer train --task lm --text corpus.txt --tokenizer spm --vocab-size 8000 \\\n"
        "      --steps 2000 --save spm-lm.safetensors\n"
        "With --task lm, --tokenizer gpt2-bpe uses GPT-2's ids as they are (vocab.json's: the\n"
        "model's vocabulary size is the BPE's); spm turns each line into pieces and each\n"
        "newline into <eos>. The checkpoint carries the tokenizer: generate and eval need\n"
        "nothing else.\n"
        "The model is saved at the end to --save, else back to --resume's file, else to\n"
        DEFAULT_SAVE " (--no-save: nothing). Ctrl-C (or SIGTERM) saves there too\n"
        "(with --no-save to " INTERRUPTED_SAVE "); a default name never replaces an\n"
        "earlier file (-2, -3 ... are added), and --save never replaces a file this run did\n"
        "not make unless --resume names it or --overwrite is given. One run at a time per\n"
        "--save file.\n"
        "Under mpirun see docs/DISTRIBUTED.md.\n"
        "The device is CLFORMER_DEVICE's choice (see clformer devices).",
        options, sizeof options / sizeof options[0], NULL, 0, NULL};
    cli_result r = cli_parse(&spec, argc, argv);
    return r == CLI_OK ? -1 : r == CLI_HELP ? 0 : EXIT_USAGE;
}

/* --config, when given, names one of the task's presets (the library's
 * list of them). */
static bool preset_fits(const train_task *task, const train_args *a);

/* Options that contradict each other or would silently do nothing: a
 * one-line error each and EXIT_USAGE; -1 when there is none. */
static int check_lm_consistency(const train_task *task, const train_args *a)
{
    if (!a->text) return cli_error("train", "--task lm needs --text FILE (the training text)"), EXIT_USAGE;
    if (a->src || a->tgt || a->val_src || a->val_tgt)
        return cli_error("train", "--task lm reads --text (and --val-text), not --src/--tgt"), EXIT_USAGE;
    if (!a->steps == !a->epochs)
        return cli_error("train", "--task lm trains for --steps N (random windows) or --epochs N (consecutive windows; give one)"), EXIT_USAGE;
    if (a->batch_tokens) return cli_error("train", "--task lm batches --batch-size windows, not --batch-tokens"), EXIT_USAGE;
    if (a->spm.tokenizer && !strcmp(a->spm.tokenizer, "word"))
        return cli_error("train", "--task lm tokenizes with --tokenizer char, byte, spm or gpt2-bpe (word is for translation)"), EXIT_USAGE;
    const char *tok_problem = lm_tokenizer_problem(&a->spm, &a->lmtok, a->init != NULL);
    if (tok_problem) return cli_error("train", "%s", tok_problem), EXIT_USAGE;
    if (a->val_text && a->given_val_fraction)
        return cli_error("train", "give --val-text or --val-fraction, not both"), EXIT_USAGE;
    if (a->share_all)
        return cli_error("train", "--share-all-embeddings is for translation (a language model has one embedding, already tied to its output)"), EXIT_USAGE;
    if (!preset_fits(task, a))
        return cli_error("train", "--task lm takes a language-model preset (--config gpt-mini, llama-small, ...: clformer presets lists them)"), EXIT_USAGE;
    if (a->g.enc_layers) return cli_error("train", "a language model has no encoder: remove --enc-layers"), EXIT_USAGE;
    if (a->init && (a->g.config || a->g.d_model || a->g.heads || a->g.d_ff || a->g.dec_layers || a->g.max_len))
        return cli_error("train", "the model's shape comes from --init: remove the model options (--config, --context, ...)"), EXIT_USAGE;
    if (a->init && a->resume) return cli_error("train", "--init and --resume exclude each other"), EXIT_USAGE;
    if (a->save_every && !a->save) return cli_error("train", "--save-every needs --save"), EXIT_USAGE;
    if (a->save && a->no_save) return cli_error("train", "--save and --no-save exclude each other"), EXIT_USAGE;
    if (a->eval_every && !a->val_text && a->val_fraction <= 0)
        return cli_error("train", "--eval-every needs validation text (--val-text or --val-fraction above 0)"), EXIT_USAGE;
    return -1;
}

static int check_translation_consistency(const train_task *task, const train_args *a)
{
    if (a->text || a->val_text)
        return cli_error("train", "--text is for --task lm; translation reads --src and --tgt"), EXIT_USAGE;
    if (a->spm.tokenizer && (!strcmp(a->spm.tokenizer, "char") || !strcmp(a->spm.tokenizer, "byte") ||
                             !strcmp(a->spm.tokenizer, "gpt2-bpe")))
        return cli_error("train", "--tokenizer %s is for --task lm", a->spm.tokenizer), EXIT_USAGE;
    if (a->lmtok.bpe_vocab || a->lmtok.bpe_merges || a->lmtok.dir)
        return cli_error("train", "--bpe-vocab, --bpe-merges and --tokenizer-dir are for --task lm --tokenizer gpt2-bpe"), EXIT_USAGE;
    if (!preset_fits(task, a))
        return cli_error("train", "--config %s is a decoder-only language model: add --task lm", a->config_name), EXIT_USAGE;
    if (!a->src || !a->tgt) return cli_error("train", "--src and --tgt are required"), EXIT_USAGE;
    if (!a->val_src != !a->val_tgt) return cli_error("train", "--val-src and --val-tgt go together"), EXIT_USAGE;
    if (!a->steps == !a->epochs) return cli_error("train", "give exactly one of --steps and --epochs"), EXIT_USAGE;
    if (a->batch_size && a->batch_tokens) return cli_error("train", "give --batch-size or --batch-tokens, not both"), EXIT_USAGE;
    if (a->init && a->resume) return cli_error("train", "--init and --resume exclude each other"), EXIT_USAGE;
    const train_given *g = &a->g;
    const bool model_flag = g->config || g->d_model || g->heads || g->d_ff || g->enc_layers ||
                            g->dec_layers || g->max_len || g->post_norm || g->activation ||
                            g->positional || g->tie || g->share_all;
    if (a->init && model_flag)
        return cli_error("train", "the model's shape comes from --init: remove the model options (--config, --d-model, ...)"), EXIT_USAGE;
    if (a->save_every && !a->save) return cli_error("train", "--save-every needs --save"), EXIT_USAGE;
    if (a->save && a->no_save) return cli_error("train", "--save and --no-save exclude each other"), EXIT_USAGE;
    /* options that would silently do nothing */
    if (a->eval_every && !a->val_src)
        return cli_error("train", "--eval-every needs validation data (--val-src and --val-tgt)"), EXIT_USAGE;
    /* with --resume and no --lr-schedule the checkpoint's schedule decides
     * (resume_check) */
    if (a->g.warmup && !strcmp(a->schedule, "constant") && (!a->resume || a->g.schedule))
        return cli_error("train", "--warmup applies to --lr-schedule noam, inverse-sqrt or cosine (the constant schedule has no warm-up)"),
               EXIT_USAGE;
    if (a->g.warmup_init_lr && strcmp(a->schedule, "inverse-sqrt") != 0 && (!a->resume || a->g.schedule))
        return cli_error("train", "--warmup-init-lr applies to --lr-schedule inverse-sqrt only"), EXIT_USAGE;
    if (a->keep_last && !a->save_every)
        return cli_error("train", "--keep-last needs --save-every N (the numbered checkpoints are written at those saves)"), EXIT_USAGE;
    if ((a->keep_last || a->save_best) && a->no_save)
        return cli_error("train", "%s and --no-save exclude each other (its files are named after --save)", a->keep_last ? "--keep-last" : "--save-best"), EXIT_USAGE;
    if ((a->save_best || a->patience) && !a->val_src)
        return cli_error("train", "%s needs validation data (--val-src and --val-tgt)", a->save_best ? "--save-best" : "--patience"), EXIT_USAGE;
    double seconds;
    if (a->max_time && !cli_duration_seconds(a->max_time, &seconds))
        return cli_error("train", "--max-time %s is not a duration: give seconds (7200) or a number with s, m or h (90m, 2h)", a->max_time), EXIT_USAGE;
    if (a->patience && !a->eval_every)
        return cli_error("train", "--patience needs --eval-every N (it counts validations)"), EXIT_USAGE;
    if (a->best_metric_given && !a->save_best && !a->patience)
        return cli_error("train", "--best-metric applies to --save-best and --patience only"), EXIT_USAGE;
    if (a->best_metric && !strcmp(a->best_metric, "bleu") && a->bleu_sentences == 0)
        return cli_error("train", "--best-metric bleu needs --bleu-sentences > 0"), EXIT_USAGE;
    const char *spm_problem = spm_flags_problem(&a->spm, !a->init && !a->resume, a->resume);
    if (spm_problem) return cli_error("train", "%s", spm_problem), EXIT_USAGE;

    return -1;
}

static clformer_optimizer optimizer_of(const char *name)
{
    return !strcmp(name, "adamw") ? CLFORMER_ADAMW : CLFORMER_ADAM;
}

static clformer_lr_schedule schedule_of(const char *name)
{
    return !strcmp(name, "noam")           ? CLFORMER_LR_NOAM
           : !strcmp(name, "inverse-sqrt") ? CLFORMER_LR_INVERSE_SQRT
           : !strcmp(name, "cosine")       ? CLFORMER_LR_COSINE
                                           : CLFORMER_LR_CONSTANT;
}

/* What `clformer train` does for a task (--task): its checks of the command
 * line, its part of the library's options, its tokenizers and what a resumed
 * checkpoint must agree with. */
struct train_task {
    bool lm; /* clformer_train_options_for_task's */
    const char *const *(*presets)(void); /* the library's presets of the task */
    /* -1, else the exit code (said) */
    int (*check)(const train_task *task, const train_args *a);
    /* the data, and the task's defaults (o's now) where the command line is silent */
    void (*data)(train_args *a, clformer_train_options *o);
    /* the model options that are the task's */
    void (*shape)(const train_args *a, clformer_config *c);
    int probe_src_vocab; /* the source vocabulary a shape is checked with */
    /* the optimizer and schedule */
    void (*training)(const train_args *a, clformer_train_options *o);
    /* tokenizers read or learned before the run (0, else the exit code) */
    int (*tokenizers)(train_args *a, clformer_train_options *o, void *bytes[2]);
    int (*resume_check)(clformer_model *m, const resume_args *a);
    const char *tokens; /* the tokens its tokens/s counts */
};

static void translation_data(train_args *a, clformer_train_options *o)
{
    (void)a, (void)o; /* --src, --tgt and the rest are every task's fields */
}

/* the library's defaults (nanoGPT's) where the command line is silent */
static void lm_data(train_args *a, clformer_train_options *o)
{
    if (!a->g.batch_size) a->batch_size = o->batching.batch_size;
    if (!a->g.lr) a->lr = o->lr;
    if (!a->g.warmup) a->warmup = (long)o->warmup;
    if (!a->g.weight_decay) a->weight_decay = o->optim.weight_decay;
    if (!a->given_val_fraction) a->val_fraction = o->val_fraction;
    o->text_path = a->text, o->val_text_path = a->val_text;
    o->val_fraction = a->val_text ? 0.0f : (float)a->val_fraction;
    o->bpe_vocab_path = a->lmtok.bpe_vocab, o->bpe_merges_path = a->lmtok.bpe_merges;
    o->eval_batches = (size_t)a->eval_batches;
}

static void translation_shape(const train_args *a, clformer_config *c)
{
    c->share_tgt_embed = a->tie || a->share_all;
    c->share_all_embed = a->share_all;
    c->dropout = (float)a->dropout;
}

/* the preset's tying, and its dropout unless given */
static void lm_shape(const train_args *a, clformer_config *c)
{
    if (a->context) c->max_len = (int)a->context;
    if (a->g.dropout) c->dropout = (float)a->dropout;
}

static void translation_training(const train_args *a, clformer_train_options *o)
{
    o->optim.optimizer = optimizer_of(a->optimizer);
    o->schedule = schedule_of(a->schedule);
}

/* the task's (AdamW, cosine) unless given */
static void lm_training(const train_args *a, clformer_train_options *o)
{
    if (a->g.optimizer) o->optim.optimizer = optimizer_of(a->optimizer);
    if (a->g.schedule) o->schedule = schedule_of(a->schedule);
}

static int translation_tokenizers(train_args *a, clformer_train_options *o, void *bytes[2])
{
    return spm_setup(&a->spm, o, bytes);
}

static int lm_tokenizers(train_args *a, clformer_train_options *o, void *bytes[2])
{
    return lm_tokenizer_setup(&a->spm, &a->lmtok, o, &bytes[0]);
}

/* The checkpoint's vocabularies or SentencePiece models are the ones asked for. */
static int translation_resume_check(clformer_model *m, const resume_args *a)
{
    return resume_check_vocab("train", m, a->want, a->given, a->spm->tokenizer,
                              a->spm->vocab_size, a->spm->type, a->spm->model,
                              a->spm->src_model, a->spm->tgt_model);
}

static int lm_resume_check(clformer_model *m, const resume_args *a)
{
    return lm_tokenizer_resume_check(m, a->spm, a->lmtok);
}

static const train_task train_translation = {
    false, clformer_config_presets, check_translation_consistency, translation_data,
    translation_shape, 5, /* equal sizes: share_all_embed's joint vocabulary */
    translation_training, translation_tokenizers, translation_resume_check, "target ",
};

static const train_task train_lm = {
    true, clformer_config_lm_presets, check_lm_consistency, lm_data, lm_shape, 0, lm_training,
    lm_tokenizers, lm_resume_check, "",
};

static bool preset_fits(const train_task *task, const train_args *a)
{
    return !a->g.config || cli_is_one_of(a->config_name, task->presets());
}

/* --resume: the options given are the checkpoint's, its tokenizers too. */
static int check_resume(clformer_trainer *t, void *user)
{
    const resume_args *a = user;
    clformer_train_options have;
    clformer_trainer_settings(t, &have);
    const int rc = resume_check("train", a->want, a->given, &have);
    if (rc) return rc;
    return a->task->resume_check(clformer_trainer_model(t), a);
}

/* The task --task names (one of its choices). */
static const train_task *train_task_named(const char *name)
{
    return !strcmp(name, "lm") ? &train_lm : &train_translation;
}

/* The library's training options from the parsed command line; -1 to go
 * on, else the exit code (a model shape clformer_config_validate refuses). */
static int build_options(const train_task *task, train_args *a, clformer_train_options *o)
{
    /* the task's defaults and the preset's shape (the library's: a language
     * model's are nanoGPT's), then what the command line gives */
    if (clformer_train_options_for_task(o, task->lm, a->g.config ? a->config_name : NULL) !=
        CLFORMER_OK) {
        cli_runtime_error("train", "--config");
        return EXIT_USAGE;
    }
    task->data(a, o);
    o->decay_steps = (uint64_t)a->decay_steps;
    o->recompute = a->recompute;
    clformer_precision_parse(a->precision, &o->precision); /* one of the choices */
    o->loss_scale = (float)a->loss_scale;
    o->min_lr = a->given_min_lr ? (float)a->min_lr : -1.0f;
    o->src_path = a->src, o->tgt_path = a->tgt, o->val_src_path = a->val_src, o->val_tgt_path = a->val_tgt;
    o->min_freq = (int)a->min_freq, o->max_vocab = (int)a->max_vocab;
    o->batching.batch_size = (int)a->batch_size;
    if (a->batch_size) o->batching.batch_tokens = 0;
    else if (a->batch_tokens) o->batching.batch_tokens = (int)a->batch_tokens;
    o->batching.shuffle = !a->no_shuffle;
    o->batching.seed = (uint64_t)a->seed;
    clformer_config *c = &o->config;
    if (a->d_model) c->d_model = (int)a->d_model;
    if (a->heads) c->n_heads = (int)a->heads;
    if (a->d_ff) c->d_ff = (int)a->d_ff;
    if (a->enc_layers) c->n_enc_layers = (int)a->enc_layers;
    if (a->dec_layers) c->n_dec_layers = (int)a->dec_layers;
    if (a->max_len) c->max_len = (int)a->max_len;
    if (a->post_norm) c->norm_first = false;
    if ((a->activation && clformer_activation_parse(a->activation, &c->activation) != CLFORMER_OK) ||
        (a->positional && clformer_positional_parse(a->positional, &c->positional) != CLFORMER_OK)) {
        cli_runtime_error("train", "model options");
        return EXIT_USAGE;
    }
    task->shape(a, c);
    c->attention_dropout = a->g.attention_dropout ? (float)a->attention_dropout : -1.0f;
    c->activation_dropout = a->g.activation_dropout ? (float)a->activation_dropout : -1.0f;
    c->label_smoothing = (float)a->label_smoothing;
    if (!a->init && !a->resume) {
        /* check the shape now (vocabulary sizes are filled in from the data) */
        clformer_config probe = *c;
        probe.src_vocab = task->probe_src_vocab;
        probe.tgt_vocab = 5;
        if (clformer_config_validate(&probe) != CLFORMER_OK) {
            cli_runtime_error("train", "model options");
            return EXIT_USAGE;
        }
    }
    o->init_path = a->init, o->resume_path = a->resume;
    o->override_dropout = a->g.dropout || a->g.attention_dropout || a->g.activation_dropout, o->override_label_smoothing = a->g.label_smoothing;
    o->seed = (uint64_t)a->seed;
    task->training(a, o);
    o->optim.weight_decay = (float)a->weight_decay;
    o->optim.clip = (float)a->clip;
    o->lr = (float)a->lr;
    o->warmup = (uint64_t)a->warmup;
    o->warmup_init_lr = (float)a->warmup_init_lr;
    o->keep_last = (uint64_t)a->keep_last;
    o->save_best = a->save_best;
    o->best_metric = a->best_metric && !strcmp(a->best_metric, "bleu") ? CLFORMER_METRIC_BLEU
                                                                       : CLFORMER_METRIC_LOSS;
    o->patience = (uint64_t)a->patience;
    if (a->max_time) cli_duration_seconds(a->max_time, &o->max_seconds); /* checked */
    o->steps = (uint64_t)a->steps, o->epochs = (uint64_t)a->epochs;
    o->eval_every = (uint64_t)a->eval_every, o->bleu_sentences = (size_t)a->bleu_sentences;
    /* a run keeps what it trained unless told not to: back into --resume's
     * file (the run continues it), else a default named at the start */
    if (!a->save && !a->no_save && a->resume) {
        a->save = a->resume;
        a->save_default = "--resume's file";
    } else if (!a->save && !a->no_save) { /* never an earlier run's file */
        if (!cli_files_unused("train", DEFAULT_SAVE, a->default_save, sizeof a->default_save))
            return 1;
        a->save = a->default_save;
        a->save_default = "the default";
    }
    o->save_path = a->save, o->save_every = (uint64_t)a->save_every;
    if (!a->save && !cli_files_unused("train", INTERRUPTED_SAVE, a->interrupted_save,
                                      sizeof a->interrupted_save))
        return 1;
    o->stop_save_path = a->save ? a->save : a->interrupted_save;
    o->log_path = a->log;
    o->overwrite = a->overwrite;
    o->check_sync_every = (uint64_t)a->check_sync;
    if (a->plot && !a->log) { /* the figure is drawn from the log: keep one beside it */
        char named[4096];
        snprintf(named, sizeof named, "%s.jsonl", a->plot);
        /* a resumed run continues its log; a new one never takes an earlier one's */
        if (a->resume || a->overwrite) snprintf(a->plot_log, sizeof a->plot_log, "%s", named);
        else if (!cli_files_unused("train", named, a->plot_log, sizeof a->plot_log)) return 1;
        o->log_path = a->plot_log;
    }
    return -1;
}

/* Every file the run reads and writes, through the door (cli_files.h),
 * before any work: an output that is an input or another output, a FIFO or
 * device as a checkpoint, a file the run did not make (unless --resume
 * names it or --overwrite is given), a second run saving to the same file
 * are refused here. --init's weights are a starting point kept as they are.
 * -1 to go on, else the exit code. */
static int open_files(cli_files *f, const clformer_train_options *o, const char *plot,
                      const train_args *a)
{
    if (!cli_files_begin(f, "train", a->overwrite)) return 1;
    /* --plot first: the log kept beside it is named after it */
    const bool ok = cli_files_write(f, "--plot", plot, CLFORMER_WRITE_STREAM) &&
                    cli_files_read(f, "--tokenizer-model", a->spm.model) &&
                    cli_files_read(f, "--src-tokenizer-model", a->spm.src_model) &&
                    cli_files_read(f, "--tgt-tokenizer-model", a->spm.tgt_model) &&
                    cli_files_read(f, "--tokenizer-dir", a->lmtok.dir);
    if (ok && clformer_train_files(f->door, o) != CLFORMER_OK) {
        cli_runtime_error("train", NULL);
        return 1;
    }
    return ok ? cli_files_open(f) : 1;
}

int cmd_train(int argc, char **argv)
{
    train_args a;
    clformer_train_options o;
    int rc = parse_args(argc, argv, &a);
    const train_task *task = train_task_named(a.task); /* parse_args set a default */
    if (rc < 0) rc = task->check(task, &a);
    if (rc < 0) rc = build_options(task, &a, &o);
    if (rc >= 0) return rc;

    if (ranks_require("train")) return 1;
    /* rank 0 alone writes: its door holds the --save lock for the run */
    cli_files files = {"train", NULL, false};
    if (ranks_get()->rank == 0) rc = open_files(&files, &o, a.plot, &a);
    if (rc >= 0) {
        cli_files_end(&files);
        return rc;
    }
    if (a.save_default && ranks_get()->rank == 0) {
        printf("no --save given: the model will be saved to %s (%s; --save FILE to choose, "
               "--no-save for none)\n", o.save_path, a.save_default);
        fflush(stdout);
    }
    void *spm_bytes[2] = {NULL, NULL};
    const int spm_rc = task->tokenizers(&a, &o, spm_bytes);
    if (spm_rc) {
        free(spm_bytes[0]);
        free(spm_bytes[1]);
        cli_files_end(&files);
        return spm_rc;
    }
    clformer_context *ctx;
    if (ranks_context_create(&ctx) != CLFORMER_OK) {
        cli_runtime_error("train", "opening the device");
        free(spm_bytes[0]);
        free(spm_bytes[1]);
        cli_files_end(&files);
        return 1;
    }
    clformer_train_result res;
    /* --resume: the options given must be the checkpoint's */
    const resume_args check = {task, &o, &a.g, &a.spm, &a.lmtok};
    rc = train_run("train", ctx, o, a.plot, a.resume ? check_resume : NULL, (void *)&check, NULL,
                   &res);
    free(spm_bytes[0]);
    free(spm_bytes[1]);
    if (rc == 0 && ranks_get()->rank == 0) {
        if (res.early_stopped)
            printf("stopped early: %ld validations in a row without a better %s than %.4f "
                   "(step %llu)\n", a.patience, o.best_metric == CLFORMER_METRIC_BLEU ? "BLEU" : "loss",
                   res.best_val, (unsigned long long)res.best_step);
        if (res.time_limited)
            printf("stopped at the time limit (--max-time %s) after step %llu\n", a.max_time,
                   (unsigned long long)res.steps);
        printf("trained to step %llu in %.1fs (%.0f %stokens/s); last loss %.4f\n",
               (unsigned long long)res.steps, res.seconds, res.tokens_per_s,
               task->tokens, res.loss);
    }
    clformer_context_free(ctx);
    cli_files_end(&files);
    return rc;
}
