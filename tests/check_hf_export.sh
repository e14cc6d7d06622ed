#!/usr/bin/env bash
# Hugging Face round trips, as docs/guides/language-models.md shows them: a
# small Llama-style and a small GPT-2-style model trained here, exported with
# `export --format hf-llama|hf-gpt2`, loaded strictly by transformers 4.36's
# LlamaForCausalLM / GPT2LMHeadModel, and `clformer logits` on the export
# within 1e-4 of transformers' (tools/reference/*_reference.py check-export).
# Needs a Python with transformers 4.36.x and torch: CLFORMER_HF_PYTHON, else
# ~/.venvs/clformer-hf/bin/python (docs/guides/pytorch.md makes it); exit 77
# (skipped, said so) where there is none. The C build and its other tests do
# not need Python.
set -euo pipefail
src="${CLFORMER_SOURCE_DIR:?run through ctest}"
bin="${CLFORMER_BINARY:?run through ctest}"
data="${CLFORMER_TEST_DATA:?run through ctest}"
python="${CLFORMER_HF_PYTHON:-$HOME/.venvs/clformer-hf/bin/python}"
if ! "$python" -c 'import torch, numpy, safetensors, transformers as t
assert t.__version__.startswith("4.36."), t.__version__' 2>/dev/null; then
    echo "SKIP: no Python with transformers 4.36 and torch at $python (set CLFORMER_HF_PYTHON)"
    exit 77
fi
tmp=$(mktemp -d /tmp/clformer-hf-export-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
cp "$data/corpus/small.en" text.txt

run() { "$@" > log.txt 2>&1 || { cat log.txt; echo "FAIL: $*"; exit 1; }; }

# same_logits CHECKPOINT EXPORT: the export read back gives the checkpoint's
# logits bit for bit (so a mistake the writer and reader share still shows)
same_logits() {
    rm -f a.safetensors b.safetensors
    run "$bin" logits --model "$1" --ids "3 5 7 9 11 2 4" --out a.safetensors
    run "$bin" logits --model "$2" --ids "3 5 7 9 11 2 4" --out b.safetensors
    cmp -s a.safetensors b.safetensors || { echo "FAIL: $2's logits differ from $1's"; exit 1; }
}

# Llama: RoPE, RMSNorm, SwiGLU, no biases
run "$bin" train --task lm --text text.txt --config llama-small --d-model 32 --heads 4 \
    --d-ff 64 --dec-layers 2 --context 16 --batch-size 4 --steps 3 --save llama.safetensors
run "$bin" export --format hf-llama --model llama.safetensors --out llama-hf
same_logits llama.safetensors llama-hf
"$python" "$src/tools/reference/llama_reference.py" check-export llama-hf --clformer "$bin"

# GPT-2: learned positions, LayerNorm, GELU, tied head
run "$bin" train --task lm --text text.txt --config gpt-mini --d-model 32 --heads 4 \
    --d-ff 64 --dec-layers 2 --context 16 --batch-size 4 --steps 3 --save gpt.safetensors
run "$bin" export --format hf-gpt2 --model gpt.safetensors --out gpt-hf
same_logits gpt.safetensors gpt-hf
head -c 400 text.txt > val.txt
"$python" "$src/tools/reference/gpt2_reference.py" check-export gpt-hf --text val.txt \
    --clformer "$bin"
echo "hf exports: both load strictly and match"
