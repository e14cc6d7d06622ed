/* `clformer export`: a checkpoint without its training state, for PyTorch's
 * strict load_state_dict and for shipping a model; or (--format hf-gpt2,
 * hf-llama) a language model as a Hugging Face GPT-2 or Llama directory. */
#include "cli.h"
#include "clformer.h"
#include "commands.h"
#include "context_open.h"
#include "cli_files.h"

#include <stdlib.h>
#include <string.h>

/* The Hugging Face formats: each writes one family's models. */
static const struct {
    const char *format, *name, *class_name;
    clformer_status (*write)(clformer_model *m, const char *dir, clformer_precision precision);
} hf_formats[] = {
    {"hf-gpt2", "GPT-2", "GPT2LMHeadModel", clformer_model_export_hf_gpt2_as},
    {"hf-llama", "Llama", "LlamaForCausalLM", clformer_model_export_hf_llama_as},
};

/* The model loaded on the device and written into DIR in format hf[i]'s layout. */
static int export_hf(const char *model, const char *dir, clformer_precision precision, size_t i)
{
    clformer_context *ctx = NULL;
    clformer_model *m = NULL;
    clformer_status st = cli_context_create(NULL, &ctx);
    if (st == CLFORMER_OK) st = clformer_model_load(ctx, model, &m);
    if (st == CLFORMER_OK) st = hf_formats[i].write(m, dir, precision);
    if (st != CLFORMER_OK) {
        cli_runtime_error("export", NULL);
    } else {
        printf("wrote %s/model.safetensors and config.json (Hugging Face %s: "
               "%s.from_pretrained loads it)\n", dir, hf_formats[i].name,
               hf_formats[i].class_name);
        /* the tokenizer files: Hugging Face's own for a directory's tokenizer and GPT-2's BPE */
        const bool json = clformer_model_hf_tokenizer_file(m, "tokenizer.json", NULL),
                   spm = clformer_model_hf_tokenizer_file(m, "tokenizer.model", NULL);
        if (json || spm)
            printf("wrote %s/%s: the tokenizer of the directory the model came from "
                   "(AutoTokenizer.from_pretrained reads it)\n", dir,
                   json && spm ? "tokenizer.json and tokenizer.model"
                               : json ? "tokenizer.json" : "tokenizer.model");
        else if (clformer_model_bpe(m, false, NULL))
            printf("wrote %s/vocab.json and merges.txt: the model's GPT-2 BPE tokenizer "
                   "(GPT2TokenizerFast.from_pretrained reads them)\n", dir);
        else
            printf("note: this model's tokenizer (%s) has no Hugging Face files; "
                   "clformer_vocab.json%s keep%s it for clformer (generate, eval, train --init), "
                   "transformers does not read %s\n",
                   clformer_model_tokenizer(m, true, NULL) ? "SentencePiece" : "characters or bytes",
                   clformer_model_tokenizer(m, true, NULL) ? " and clformer_spm.model" : "",
                   clformer_model_tokenizer(m, true, NULL) ? "" : "s",
                   clformer_model_tokenizer(m, true, NULL) ? "them" : "it");
    }
    clformer_model_free(m);
    clformer_context_free(ctx);
    return st == CLFORMER_OK ? 0 : 1;
}

int cmd_export(int argc, char **argv)
{
    const char *model = NULL, *out = NULL, *format = "clformer", *dtype = "fp32";
    bool overwrite = false;
    const cli_option options[] = {
        {"--model", CLI_STRING, &model, "FILE", "the checkpoint, training or plain (required)"},
        {"--out", CLI_STRING, &out, "FILE", "write the weights and model metadata here (required; hf-gpt2, hf-llama: a directory)"},
        {"--format", CLI_CHOICE, &format, NULL, "clformer: a plain checkpoint (default); hf-gpt2, hf-llama: a language model of the gpt or llama family as Hugging Face's GPT-2 or Llama (model.safetensors + config.json)", 0, 0, "clformer|hf-gpt2|hf-llama"},
        {"--dtype", CLI_CHOICE, &dtype, NULL, "how the weights are stored: fp32 (default), bf16 or fp16 (16-bit, rounded to nearest even; half the size)", 0, 0, "fp32|bf16|fp16"},
        OVERWRITE_CLI_OPTION(overwrite),
    };
    const cli_spec spec = {
        "export",
        "Write a checkpoint's weights, config and vocabularies without its training state\n"
        "(no optim.* tensors, no train_state): the file loads with PyTorch's strict\n"
        "load_state_dict, and in clformer as a plain model. No device is used.\n"
        "--format hf-gpt2 writes a decoder-only model (train --task lm) as the directory\n"
        "transformers' save_pretrained writes (Conv1D weights [in, out], config.json), which\n"
        "GPT2LMHeadModel.from_pretrained loads with no missing or unexpected key; generate,\n"
        "eval and train --init read such a directory too. Tokenizer files: vocab.json +\n"
        "merges.txt for a model trained with --tokenizer gpt2-bpe (transformers reads them);\n"
        "for char, byte and spm models clformer_vocab.json (and clformer_spm.model), which\n"
        "only clformer reads.\n"
        "--format hf-llama writes a model of the llama family (--config llama-small, or read from\n"
        "a Hugging Face Llama directory) as LlamaForCausalLM's save_pretrained does: the\n"
        "tensors under their own names, config.json with its rope_theta, rope_scaling and\n"
        "num_key_value_heads; LlamaForCausalLM.from_pretrained loads it strictly.\n"
        "--dtype bf16|fp16 stores the weights in 16 bits (as save_pretrained with\n"
        "torch_dtype=torch.bfloat16/float16 does); clformer reads them back as fp32.",
        "clformer export --model FILE --out FILE [--format clformer|hf-gpt2|hf-llama] [--dtype fp32|bf16|fp16]",
        "The output is written atomically; docs/guides/pytorch.md shows the Python that loads it.\n"
        "hf-gpt2 writes a fresh folder and renames it into place; --overwrite replaces a\n"
        "folder that holds an earlier export alone (no file of it survives).\n"
        "fp16 holds magnitudes up to 65504: a weight beyond that is refused (use bf16).",
        options, sizeof options / sizeof options[0], NULL, 0, NULL};
    cli_result r = cli_parse(&spec, argc, argv);
    if (r != CLI_OK) return r == CLI_HELP ? 0 : EXIT_USAGE;
    if (!model || !out) {
        cli_error("export", "--model and --out are required");
        return EXIT_USAGE;
    }
    clformer_precision precision = CLFORMER_FP32;
    if (clformer_precision_parse(dtype, &precision) != CLFORMER_OK) { /* CLI_CHOICE checked it */
        cli_runtime_error("export", "--dtype");
        return EXIT_USAGE;
    }
    size_t hf = 0; /* 1 + the index of a Hugging Face format, 0: clformer */
    for (size_t i = 0; i < sizeof hf_formats / sizeof *hf_formats; i++)
        if (!strcmp(format, hf_formats[i].format)) hf = i + 1;
    cli_files files;
    if (!cli_files_begin(&files, "export", overwrite)) return 1;
    int rc = cli_files_read(&files, "--model", model) &&
                     cli_files_write(&files, "--out", out, hf ? CLFORMER_WRITE_DIRECTORY : 0)
                 ? cli_files_open(&files)
                 : 1;
    if (rc < 0 && hf) {
        rc = export_hf(model, out, precision, hf - 1);
    } else if (rc < 0 && clformer_checkpoint_export_as(model, out, precision) != CLFORMER_OK) {
        cli_runtime_error("export", NULL);
        rc = 1;
    }
    cli_files_end(&files);
    return rc < 0 ? 0 : rc;
}
