#!/usr/bin/env bash
# `clformer train` under mpirun, as a user runs it (registered by
# tests/CMakeLists.txt with label mpi). One case per call:
#   resume        2 ranks save and resume on 2 ranks (bit-identical to an
#                 uninterrupted 2-rank run) and on 1 rank
#   kill          kill -9 of one rank mid-training: the job exits non-zero within 30 s
#   bad-selector  a selector that matches nothing on one rank: its message, a
#                 non-zero exit, no hang
# Needs CLFORMER_BINARY, MPIRUN and CLFORMER_TEST_DATA (tests/data).
set -u
case_name=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
fail() { echo "FAIL ($case_name): $*"; exit 1; }

# a small corpus: the test pairs repeated, so a step has full batches
for i in 1 2 3 4; do
  cat "$CLFORMER_TEST_DATA/corpus/small.de" >> train.src
  cat "$CLFORMER_TEST_DATA/corpus/small.en" >> train.tgt
done
export CLFORMER_DEVICE=${CLFORMER_DEVICE:-pocl:pthread}
mpi() { "$MPIRUN" --allow-run-as-root --oversubscribe "$@"; }
train=(train --src train.src --tgt train.tgt --config tiny --max-len 24 --batch-size 4
       --dropout 0.1 --lr 1e-3)

case $case_name in
resume)
  mpi -np 2 "$CLFORMER_BINARY" "${train[@]}" --steps 6 --save straight.safetensors > out1 2>&1 \
    || { cat out1; fail "2-rank training failed"; }
  mpi -np 2 "$CLFORMER_BINARY" "${train[@]}" --steps 3 --save half.safetensors > out2 2>&1 \
    || { cat out2; fail "2-rank training to step 3 failed"; }
  mpi -np 2 "$CLFORMER_BINARY" "${train[@]}" --resume half.safetensors --steps 6 \
    --save resumed.safetensors > out3 2>&1 || { cat out3; fail "2 -> 2 resume failed"; }
  cmp straight.safetensors resumed.safetensors \
    || fail "2 -> 2 resume is not bit-identical to the uninterrupted run"
  "$CLFORMER_BINARY" "${train[@]}" --resume half.safetensors --steps 6 \
    --save one.safetensors > out4 2>&1 || { cat out4; fail "2 -> 1 resume failed"; }
  grep -q "resuming half.safetensors at step 3" out4 || { cat out4; fail "2 -> 1: no resume line"; }
  grep -q "trained to step 6" out4 || { cat out4; fail "2 -> 1 did not reach step 6"; }
  ;;
kill)
  # mpirun itself in the background (not through a function: $! must be its pid)
  "$MPIRUN" --allow-run-as-root --oversubscribe -np 2 "$CLFORMER_BINARY" "${train[@]}" \
    --steps 100000 --log log.jsonl > out 2>&1 &
  job=$!
  for _ in $(seq 1 600); do  # up to 60 s for the first steps (kernels may compile)
    [ -s log.jsonl ] && break
    sleep 0.1
  done
  [ -s log.jsonl ] || { kill -9 $job; cat out; fail "no step was logged"; }
  victim=$(pgrep -P $job -x clformer | tail -n 1)
  [ -n "$victim" ] || { kill -9 $job; fail "no rank process found under mpirun $job"; }
  kill -9 "$victim"
  start=$(date +%s)
  for _ in $(seq 1 300); do
    kill -0 $job 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 $job 2>/dev/null; then
    kill -9 $job; fail "the job still runs 30 s after one rank was killed"
  fi
  wait $job; rc=$?
  [ $rc -ne 0 ] || fail "the job exited 0 after a rank was killed"
  echo "job ended with status $rc $(( $(date +%s) - start )) s after kill -9 of rank pid $victim"
  ;;
bad-selector)
  timeout 60 "$MPIRUN" --allow-run-as-root --oversubscribe \
    -np 1 -x CLFORMER_DEVICE=pocl:pthread "$CLFORMER_BINARY" "${train[@]}" --steps 5 : \
    -np 1 -x CLFORMER_DEVICE=nosuchdevice "$CLFORMER_BINARY" "${train[@]}" --steps 5 > out 2>&1
  rc=$?
  [ $rc -ne 124 ] || { cat out; fail "the job hung"; }
  [ $rc -ne 0 ] || { cat out; fail "the job exited 0"; }
  grep -q "nosuchdevice" out || { cat out; fail "no message naming the selector"; }
  ;;
*) fail "unknown case" ;;
esac
echo "ok ($case_name)"
