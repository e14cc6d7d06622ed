#!/usr/bin/env bash
# AddressSanitizer + UBSan gate: tools/sanitize.sh
#   1. builds ./build-asan (CLFORMER_ASAN=ON, -Werror),
#   2. runs every host test there (ctest -L host),
#   3. a short device run on PoCL (pthread): train a tiny model with
#      validation and a save, translate --beam, eval --model.
# Any sanitizer report fails it (exit 1). Leak reports from the OpenCL
# stack are suppressed by name only (tools/sanitize/lsan.supp, one comment
# each); clformer's own frames are never suppressed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCLFORMER_ASAN=ON \
  -DCLFORMER_WERROR=ON "-DCLFORMER_TEST_DEVICES=pocl:pthread" >/dev/null
cmake --build build-asan -j "$(nproc)" >/dev/null

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0
export LSAN_OPTIONS=suppressions=$root/tools/sanitize/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
echo "== host tests under ASan+UBSan"
# test_install builds a program against the installed library without the
# sanitizers, which cannot load an ASan library: it runs in the normal suite.
ctest --test-dir build-asan -L host -E '^test_install$' -j "$(nproc)" --output-on-failure

echo "== device run under ASan+UBSan (PoCL pthread)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OCL_ICD_VENDORS=$root/build-asan/icd POCL_DEVICES=pthread CLFORMER_DEVICE=pocl:pthread
export CLFORMER_CACHE_DIR=$work/cache
bin=$root/build-asan/clformer
cd "$work"
words=(red cat sees a big dog runs home)
for i in $(seq 1 40); do
  echo "${words[i % 8]} ${words[(i * 3) % 8]} ${words[(i * 5) % 8]}" >> train.src
  echo "${words[(i * 5) % 8]} ${words[(i * 3) % 8]} ${words[i % 8]}" >> train.tgt
done
head -8 train.src > val.src
head -8 train.tgt > val.tgt
"$bin" train --src train.src --tgt train.tgt --val-src val.src --val-tgt val.tgt \
  --config tiny --steps 4 --eval-every 2 --bleu-sentences 4 --save model.safetensors \
  --log train.jsonl >/dev/null
"$bin" translate --model model.safetensors --input val.src --output val.hyp --beam 3 2>/dev/null
"$bin" eval --model model.safetensors --src val.src --ref val.tgt --beam 2 >/dev/null
"$bin" eval --hyp val.hyp --ref val.tgt >/dev/null
echo "sanitize.sh: clean"
