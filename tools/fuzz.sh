#!/usr/bin/env bash
# Runs every libFuzzer target (tests/fuzz) for SECONDS each (default 60), one
# after another, under ASan+UBSan: tools/fuzz.sh [SECONDS] [TARGET...]
#
# Builds them with clang in ./build-fuzz (CLFORMER_FUZZ=ON). Each target
# starts from its committed seed corpus (tests/fuzz/corpus/<target>, copied:
# new inputs go to build-fuzz/corpus/<target>, not into the repository) and
# its dictionary (tests/fuzz/dict/<target>.dict). Prints one line per target
# with its executions; exits 1 when a target crashed, leaks or hangs, leaving
# the input in build-fuzz/artifacts/<target>/: copy it into
# tests/fuzz/corpus/<target>/ as a regression seed once it is fixed.
# Runs at nice 15: it is meant to share the machine.
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(fuzz_safetensors fuzz_checkpoint fuzz_config fuzz_train_state fuzz_vocab
           fuzz_corpus fuzz_program_cache fuzz_tokenizer fuzz_checksums fuzz_tokenizer_bpe
           fuzz_hf_dir fuzz_tokenizer_hf fuzz_gemm_search fuzz_hf_llama_config
           fuzz_attention_search)
fi
CC=${FUZZ_CC:-clang} CXX=${FUZZ_CXX:-clang++} cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCLFORMER_FUZZ=ON -DCLFORMER_TESTS=OFF >/dev/null || exit 1
nice -n 15 cmake --build build-fuzz -j "$(nproc)" --target "${targets[@]}" >/dev/null || {
  echo "fuzz.sh: build failed (cmake --build build-fuzz for the output)" >&2; exit 1; }

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=0
printf '%-20s %10s %12s %s\n' target seconds executions result
for t in "${targets[@]}"; do
  work=build-fuzz/corpus/$t art=build-fuzz/artifacts/$t
  mkdir -p "$work" "$art"
  dict=tests/fuzz/dict/$t.dict
  log=build-fuzz/$t.log
  # -rss_limit_mb: a parser that needs more memory than this for any input
  # is a finding too (a small file must not cost gigabytes). -timeout: one
  # input taking 10 s is a hang; FUZZ_TIMEOUT raises it on a starved machine
  # (at nice 15 under load, ASan's allocator alone stalled 10 s once).
  nice -n 15 "build-fuzz/tests/fuzz/$t" -max_total_time="$seconds" -timeout="${FUZZ_TIMEOUT:-10}" \
    -rss_limit_mb=1024 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$art/" ${dict:+$( [ -f "$dict" ] && echo "-dict=$dict")} \
    "$work" "tests/fuzz/corpus/$t" >"$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  if [ $rc -eq 0 ]; then result=ok; else result="FAILED (exit $rc; see $log, $art)"; failed=1; fi
  printf '%-20s %10s %12s %s\n' "$t" "$seconds" "${execs:-?}" "$result"
done
exit $failed
