#!/usr/bin/env bash
# The Python lines of docs/guides/pytorch.md that load a checkpoint into
# PyTorch (the README points there), run as written (from the repository root,
# with Debian's python3-torch: no safetensors module) on a checkpoint clformer
# trains here. Exit 77 (skipped)
# where python3 cannot import torch and numpy.
set -euo pipefail
src="${CLFORMER_SOURCE_DIR:?run through ctest}"
bin="${CLFORMER_BINARY:?run through ctest}"
python="${PYTHON:-/usr/bin/python3}"
if ! "$python" -c 'import torch, numpy' 2>/dev/null; then
    echo "SKIP: $python cannot import torch and numpy"
    exit 77
fi
tmp=$(mktemp -d /tmp/clformer-readme-python-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
for i in $(seq 1 40); do echo "a$((i % 7)) b$((i % 5)) c$((i % 3))"; done > "$tmp/train.src"
for i in $(seq 1 40); do echo "c$((i % 3)) b$((i % 5)) a$((i % 7))"; done > "$tmp/train.tgt"
"$bin" train --src "$tmp/train.src" --tgt "$tmp/train.tgt" --d-model 16 --heads 2 --d-ff 32 \
    --enc-layers 1 --dec-layers 1 --max-len 8 --batch-size 8 --steps 2 \
    --save "$tmp/m.safetensors" > "$tmp/train.log" 2>&1 || { cat "$tmp/train.log"; exit 1; }
# the block after "A checkpoint in your own PyTorch code", the path replaced
code=$(awk '/A checkpoint in your own PyTorch code/ { seen = 1 }
            seen && /^```python$/ { inside = 1; next }
            inside && /^```$/ { exit }
            inside { print }' "$src/docs/guides/pytorch.md")
[[ -n "$code" ]] || { echo "FAIL: no python block after 'A checkpoint in your own PyTorch code'"; exit 1; }
code=${code//\"m30k.safetensors\"/\"$tmp/m.safetensors\"}
printf '%s\n' "$code" > "$tmp/readme.py"
printf '%s\n' 'print("loaded", sum(p.numel() for p in model.parameters()), "parameters")' >> "$tmp/readme.py"
cd "$src"
"$python" "$tmp/readme.py"
