#!/usr/bin/env bash
# Issue 21: nothing overwritten, nothing lost silently, one clear line per
# problem. `clformer` as a user runs it, one case per call (tests/CMakeLists.txt
# registers each):
#   messages  the exact lines of errors that used to be wrong (lost separators,
#             wrong blame, lists printed twice, help text, pipes refused)
#   stdout    output that cannot reach stdout (/dev/full) is exit 1, not 0
#   signals   SIGINT/SIGTERM during translate and eval: 130 and one line
#   outputs   outputs that would overwrite an input or each other, and
#             checkpoints aimed at devices or FIFOs, refused before any work
#   train     (device) a run keeps what it trained; --log on a full device;
#             one run per --save path; SIGTERM while loading: 130, one line;
#             a missing CLFORMER_KERNEL_DIR said as such
#   files     (device) outputs through symbolic links, onto character devices
#             and FIFOs: written in place or through the link, never replaced
#   generate  (device) SIGINT/SIGTERM while generate streams one prompt or
#             runs a batch: 130, one line, the text made so far printed
# Character devices are copies of /dev/null and /dev/full made with mknod
# (root), else the originals (written, never replaced, by correct code).
# Needs CLFORMER_BINARY and CLFORMER_TEST_DATA (tests/data).
CLI_TEST_TAG=safety
# shellcheck source=tests/cli_test_lib.sh
source "$(dirname "$0")/cli_test_lib.sh"

# expect RC 'EXACT STDERR' command...: the exit status and stderr, exactly
expect() {
  local want_rc=$1 want_err=$2; shift 2
  local err rc
  err=$("$@" 2>&1 >/dev/null); rc=$?
  if [[ $rc -eq $want_rc && "$err" == "$want_err" ]]; then ok "$want_rc: $want_err"
  else bad "$*: expected exit $want_rc and
  $want_err
got exit $rc and
  $err"
  fi
}

# wait_rc PID SECONDS: PID's exit status, or 124 after killing it (-9) when it
# still runs after SECONDS (a signal it ignored must fail the test, not hang it)
wait_rc() {
  for _ in $(seq 1 $(( $2 * 10 ))); do
    kill -0 "$1" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$1" 2>/dev/null; then kill -9 "$1"; wait "$1"; return 124; fi
  wait "$1"
}

# wait_fifo PID: until PID blocks opening a FIFO nobody writes (its signal
# handlers are in place by then), at most 20 s. A fixed sleep raced the
# program's start on a loaded machine: a signal before the handlers killed it
# without its line. Where the kernel hides wchan, waits 2 s instead.
wait_fifo() {
  local w
  for _ in $(seq 1 200); do
    w=$(cat "/proc/$1/wchan" 2>/dev/null) || break
    [[ $w == wait_for_partner ]] && return 0
    [[ $w == 0 || -z $w ]] && { sleep 2; return 0; }
    sleep 0.1
  done
}

# a character device like /dev/null (minor 3) or /dev/full (7): a copy when
# mknod works (root), else the original
char_device() {
  if mknod "$1" c 1 "$2" 2>/dev/null; then echo "$dir/$1"
  elif [[ $2 -eq 3 ]]; then echo /dev/null
  else echo /dev/full
  fi
}

for i in 1 2 3 4; do
  cat "$data/corpus/small.de" >> train.src
  cat "$data/corpus/small.en" >> train.tgt
done
train=(train --src train.src --tgt train.tgt --config tiny --max-len 24 --batch-size 4 --lr 1e-3)

case $case_name in
messages)
  # cf_fail_prefix glued its context to the message ("training datacannot open")
  expect 1 "clformer train: error: training data: cannot open 'nope.en': No such file or directory" \
    "$bin" train --src nope.en --tgt train.tgt --steps 1 --save never.safetensors
  head -n 3 train.tgt > short.tgt
  err=$("$bin" train --src train.src --tgt short.tgt --steps 1 --save never.safetensors 2>&1 >/dev/null)
  [[ "$err" == "clformer train: error: training data: 'train.src' has "* ]] && ok "separator: $err" \
    || bad "the line-count error lost its separator: $err"
  # settings that are wrong are said as such, once
  expect 1 "clformer devices: error: CLFORMER_LOG='verbose' is not a log level: use error, warn, info or debug" \
    env CLFORMER_LOG=verbose "$bin" devices
  out=$(CLFORMER_LOG=verbose "$bin" devices 2>/dev/null)
  [[ -z "$out" ]] && ok "no device table blames the gemm for CLFORMER_LOG" \
    || bad "CLFORMER_LOG=verbose printed: $out"
  expect 1 "clformer devices: error: CLFORMER_GEMM_TUNING='/nonexistent': cannot open it (No such file or directory); name a tuning file, or use auto (the built-in table, and the per-shape search on GPUs), search, table or off" \
    env CLFORMER_GEMM_TUNING=/nonexistent "$bin" devices
  out=$(CLFORMER_DEVICE=nosuch "$bin" devices 2>&1); rc=$?
  # the first device's line, whatever the machine has (an H200 alone, once)
  n=$(grep -c "^ *0:0 " <<< "$out")
  [[ $rc -eq 1 && $n -eq 1 ]] && ok "a selector error lists the devices once" \
    || bad "a selector error (exit $rc) lists device 0:0 $n times: $out"
  # the layer list grows with every op descriptor: its start and two names
  err=$("$bin" check --layer nosuch 2>&1 >/dev/null); rc=$?
  want="clformer check: error: --layer 'nosuch' matches no layer; the layers are "
  [[ $rc -eq 2 && "$err" == "$want"*gemm*layernorm* && "$err" != *$'\n'* ]] \
    && ok "2: $err" || bad "check --layer nosuch: expected exit 2 and '$want...', got $rc: $err"
  help=$(bash "${CLFORMER_SOURCE_DIR:?}/tools/get-data.sh" --help)
  [[ "$help" != *"set -euo"* && "$help" == *"Exit status: 0 done, 1 failure,"* ]] \
    && ok "get-data.sh --help is the comment block" || bad "get-data.sh --help: $help"
  # a pipe is read like a file
  printf 'a small dog runs in the park\n' > hyp
  out=$("$bin" eval --hyp hyp --ref <(printf 'a small dog runs in the park\n') 2>&1); rc=$?
  [[ $rc -eq 0 && "$out" == "BLEU = 100.00 "* ]] && ok "eval --ref <(...)" \
    || bad "eval --ref from a pipe: exit $rc: $out"
  ;;
stdout)
  printf 'a small dog\n' > hyp
  expect 1 "clformer eval: error: cannot write to stdout: No space left on device" \
    sh -c "\"$bin\" eval --hyp hyp --ref hyp --json > /dev/full"
  expect 1 "clformer devices: error: cannot write to stdout: No space left on device" \
    sh -c "\"$bin\" devices --json > /dev/full"
  expect 1 "clformer eval: error: cannot write to stdout: No space left on device" \
    sh -c "\"$bin\" eval --hyp hyp --ref hyp > /dev/full"
  ;;
outputs)
  echo '{"step": 1, "loss": 2.5}' > A.jsonl
  expect 2 "clformer plot: error: --out 'A.jsonl' is the same file as the input --log 'A.jsonl': writing it would destroy that input; choose another name" \
    "$bin" plot --log A.jsonl --out A.jsonl
  grep -q '"loss"' A.jsonl && ok "the log is intact" || bad "plot replaced its own log"
  expect 2 "clformer train: error: --plot 'X' is also the output --save 'X': one would overwrite the other; give each output its own file" \
    "$bin" "${train[@]}" --steps 1 --save X --plot X
  expect 2 "clformer train: error: --save 'X' is also the output --log 'X': one would overwrite the other; give each output its own file" \
    "$bin" "${train[@]}" --steps 1 --save X --log X
  expect 2 "clformer train: error: --save 'g.model' is the same file as the input --tokenizer-model 'g.model': writing it would destroy that input; choose another name" \
    "$bin" train --src train.src --tgt train.tgt --tokenizer spm --tokenizer-model g.model \
    --steps 1 --save g.model
  echo weights > I.safetensors
  expect 2 "clformer train: error: --save 'I.safetensors' is the same file as the input --init 'I.safetensors': writing it would destroy that input; choose another name" \
    "$bin" train --src train.src --tgt train.tgt --init I.safetensors --steps 1 --save I.safetensors
  echo model > m.safetensors
  expect 2 "clformer translate: error: --output 'X' is also the output --attention 'X': one would overwrite the other; give each output its own file" \
    "$bin" translate --model m.safetensors --output X --attention X
  [[ ! -e X ]] && ok "nothing was written" || bad "X was written"
  mkfifo fifo
  expect 2 "clformer train: error: --save 'fifo' is a FIFO: it is written to a regular file; name one" \
    "$bin" "${train[@]}" --steps 1 --save fifo
  null=$(char_device null 3)
  expect 2 "clformer train: error: --save '$null' is a character device: it is written to a regular file; name one" \
    "$bin" "${train[@]}" --steps 1 --save "$null"
  [[ -c $null && -p fifo ]] && ok "the device and the FIFO are still there" \
    || bad "a device or FIFO was replaced"
  expect 2 "clformer train: error: --save and --no-save exclude each other" \
    "$bin" "${train[@]}" --steps 1 --save a --no-save
  ;;
signals)
  # translate and eval had no handler: a signal killed them without a word.
  # Their input is a FIFO nobody writes, so each is still reading it.
  mkfifo never
  echo model > m.safetensors
  for run in "translate --model m.safetensors --input never" "eval --hyp never --ref never"; do
    for sig in INT TERM; do
      # shellcheck disable=SC2086
      "$bin" $run > /dev/null 2> err &
      job=$!; pids+=("$job")
      wait_fifo "$job"; kill -"$sig" "$job"; wait_rc "$job" 10; rc=$?
      cmd=${run%% *}
      [[ $rc -eq 130 && "$(grep -v '^$' err)" == "clformer $cmd: interrupted" ]] \
        && ok "SIG$sig during $cmd: 130, one line" || bad "SIG$sig during $cmd: exit $rc: $(cat err)"
    done
  done
  ;;
train)
  export CLFORMER_DEVICE=${CLFORMER_DEVICE:-pocl:pthread}
  # a missing kernel directory is not "does not fit the device"
  err=$(CLFORMER_KERNEL_DIR=$dir/none "$bin" "${train[@]}" --steps 1 --save kd.safetensors 2>&1 >/dev/null)
  [[ "$err" == *"kernel directory $dir/none (CLFORMER_KERNEL_DIR): cannot open"* &&
     "$err" != *"does not fit"* ]] && ok "CLFORMER_KERNEL_DIR: $err" \
    || bad "a missing CLFORMER_KERNEL_DIR: $err"
  # no --save: a default path, said at the start
  out=$("$bin" "${train[@]}" --steps 2 2>/dev/null); rc=$?
  [[ $rc -eq 0 && -s clformer-model.safetensors && "$out" == "no --save given: the model will be saved to clformer-model.safetensors (the default; --save FILE to choose, --no-save for none)"* &&
     "$out" == *"saved clformer-model.safetensors"* ]] && ok "train without --save keeps its model" \
    || bad "train without --save: exit $rc: $out"
  # --resume without --save: saved back into the checkpoint it continued
  cp clformer-model.safetensors resume.safetensors
  out=$("$bin" "${train[@]}" --resume resume.safetensors --steps 4 2>/dev/null); rc=$?
  [[ $rc -eq 0 && "$out" == *"saved resume.safetensors"* ]] && ! cmp -s resume.safetensors clformer-model.safetensors \
    && ok "--resume without --save saves back" || bad "--resume without --save: exit $rc: $out"
  # --no-save: nothing, as asked
  rm -f clformer-model.safetensors
  "$bin" "${train[@]}" --steps 1 --no-save > /dev/null 2>&1 && [[ ! -e clformer-model.safetensors ]] \
    && ok "--no-save saves nothing" || bad "--no-save"
  # --log on a full device: a warning at once, the model saved, exit 1
  full=$(char_device full 7)
  out=$("$bin" "${train[@]}" --steps 2 --save full.safetensors --log "$full" 2>&1); rc=$?
  warn="cannot write the log '$full' at step 1: No space left on device; training goes on, and the run will end with an error"
  last="clformer train: error: the log '$full' is incomplete: writing it failed at step 1 (No space left on device); the model was saved to full.safetensors"
  [[ $rc -eq 1 && "$out" == *"$warn"* && "$(tail -n 1 <<< "$out")" == "$last" && -s full.safetensors ]] \
    && ok "--log on a full device: $last" || bad "--log on a full device: exit $rc: $out"
  [[ -c $full ]] && ok "the device is still a device" || bad "the log replaced $full"
  # --plot failing after the save (the figure onto a full device) says the model was saved
  out=$("$bin" "${train[@]}" --steps 2 --save p.safetensors --log p.jsonl --plot "$full" 2>&1 >/dev/null); rc=$?
  last="clformer train: the model was saved to p.safetensors; only --plot failed (draw it again with clformer plot --log p.jsonl --out FILE.png)"
  [[ $rc -eq 1 && "$(tail -n 1 <<< "$out")" == "$last" && -s p.safetensors ]] \
    && ok "--plot failing after the save: $last" || bad "--plot failing after the save: exit $rc: $out"
  # a save that fails says "saving 'x': ..." once (it said "savingsaving 'x'")
  mkdir gone
  "$bin" "${train[@]}" --steps 100000 --save gone/x.safetensors --log gone.jsonl > /dev/null 2> run0 &
  job=$!; pids+=("$job")
  for _ in $(seq 1 600); do [[ -s gone.jsonl ]] && break; sleep 0.1; done
  rm -rf gone; kill -INT "$job"; wait_rc "$job" 120; rc=$?
  err=$(grep '^clformer train: error' run0)
  [[ $rc -eq 1 && "$err" == "clformer train: error: saving 'gone/x.safetensors': cannot write '"*"/gone/x.safetensors.tmp."*": No such file or directory" ]] \
    && ok "a failed save: $err" || bad "a failed save: exit $rc: $(cat run0)"
  # one run per --save path: a second run is refused while the first trains
  "$bin" "${train[@]}" --steps 100000 --save locked.safetensors --log lock.jsonl > run1 2>&1 &
  first=$!; pids+=("$first")
  for _ in $(seq 1 600); do [[ -s lock.jsonl ]] && break; sleep 0.1; done
  expect 1 "clformer train: error: another run is writing 'locked.safetensors' (it holds 'locked.safetensors.lock'); wait for it to end, or choose another name for --save" \
    "$bin" "${train[@]}" --steps 2 --save locked.safetensors
  kill -INT "$first"; wait_rc "$first" 120; rc=$?
  [[ $rc -eq 130 && -s locked.safetensors && ! -e locked.safetensors.lock ]] \
    && ok "the first run saved on Ctrl-C (130) and released its lock" \
    || bad "the first run: exit $rc: $(cat run1)"
  # SIGTERM while the data loads: 130 and one line (the source is a FIFO
  # nobody writes, so the run is still reading it when the signal comes)
  mkfifo slow.src
  "$bin" train --src slow.src --tgt train.tgt --config tiny --steps 5 --save slow.safetensors > /dev/null 2> run2 &
  job=$!; pids+=("$job")
  wait_fifo "$job"; kill -TERM "$job"; wait_rc "$job" 10; rc=$?
  [[ $rc -eq 130 && "$(grep -v '^$' run2)" == "clformer train: interrupted" ]] \
    && ok "SIGTERM while loading: 130, one line" || bad "SIGTERM while loading: exit $rc: $(cat run2)"
  # a second signal after the interrupt save ends with 130, not with -15
  "$bin" "${train[@]}" --steps 100000 --save twice.safetensors --log twice.jsonl > /dev/null 2> run3 &
  job=$!; pids+=("$job")
  for _ in $(seq 1 600); do [[ -s twice.jsonl ]] && break; sleep 0.1; done
  kill -INT "$job"; sleep 0.05; kill -TERM "$job" 2>/dev/null; sleep 0.05
  kill -TERM "$job" 2>/dev/null; wait_rc "$job" 120; rc=$?
  [[ $rc -eq 130 ]] && ok "signals during the interrupt save: 130" \
    || bad "signals during the interrupt save: exit $rc: $(cat run3)"
  ;;
files)
  export CLFORMER_DEVICE=${CLFORMER_DEVICE:-pocl:pthread}
  "$bin" "${train[@]}" --steps 2 --save model.safetensors > /dev/null 2>&1 || bad "training the model"
  # --save through a symbolic link: the link stays, its target is replaced
  mkdir keep && ln -s keep/real.safetensors link.safetensors
  "$bin" "${train[@]}" --resume model.safetensors --steps 3 --save link.safetensors > /dev/null 2>&1
  [[ -L link.safetensors && -s keep/real.safetensors ]] && ok "--save through a symlink" \
    || bad "--save through a symlink replaced the link"
  printf 'ein kleiner hund\n' > in.txt
  # --output a character device: written in place, still a device
  null=$(char_device null 3)
  "$bin" translate --model model.safetensors --input in.txt --output "$null" 2>/dev/null; rc=$?
  [[ $rc -eq 0 && -c $null ]] && ok "translate --output a character device" \
    || bad "translate --output $null: exit $rc, $(ls -l "$null")"
  full=$(char_device full 7)
  expect 1 "clformer translate: error: cannot write '$full': No space left on device" \
    "$bin" translate --model model.safetensors --input in.txt --output "$full"
  [[ -c $full ]] && ok "the full device is still a device" || bad "$full was replaced"
  # --output a FIFO: the reader gets the translation
  mkfifo out.fifo
  cat out.fifo > got &
  reader=$!; pids+=("$reader")
  "$bin" translate --model model.safetensors --input in.txt --output out.fifo 2>/dev/null; rc=$?
  wait_rc "$reader" 10
  [[ $rc -eq 0 && -p out.fifo && $(wc -l < got) -eq 1 ]] && ok "translate --output a FIFO" \
    || bad "translate --output a FIFO: exit $rc, $(wc -l < got) lines read"
  # --output through a symbolic link to stdout's file
  "$bin" translate --model model.safetensors --input in.txt --output /dev/stdout > direct 2>/dev/null
  [[ $(wc -l < direct) -eq 1 ]] && ok "translate --output /dev/stdout" || bad "--output /dev/stdout"
  ;;
generate)
  export CLFORMER_DEVICE=${CLFORMER_DEVICE:-pocl:pthread}
  for i in $(seq 1 200); do echo "line $i: the cat sat on the mat"; done > lm.txt
  "$bin" train --task lm --text lm.txt --d-model 16 --heads 2 --dec-layers 1 --d-ff 32 \
    --context 12 --batch-size 2 --steps 1 --save lm.safetensors > /dev/null 2>&1 \
    || bad "train --task lm for the generate case"
  # far more tokens than it makes before the signal: it stops only when told
  for run in "--prompt line" "--prompt line --prompt the --num-samples 2"; do
    for sig in INT TERM; do
      # shellcheck disable=SC2086
      "$bin" generate --model lm.safetensors $run --max-tokens 4000000 > out 2> err &
      job=$!; pids+=("$job")
      # a single prompt streams: wait for its first tokens. A batch prints at
      # the end, so nothing shows it has started: a signal still in the
      # loading is a clean stop too ("interrupted", nothing printed)
      for _ in $(seq 1 100); do [[ $run == *samples* || $(wc -c < out) -gt 8 ]] && break; sleep 0.1; done
      sleep 2; kill -"$sig" "$job"; wait_rc "$job" 20; rc=$?
      err=$(grep -v '^$' err); head=$(head -c 4 out)
      if [[ $rc -eq 130 && "$err" =~ ^clformer\ generate:\ interrupted\ after\ [0-9]+\ tokens$ &&
            ( "$head" == "line" || "$head" == "=== " ) ]] ||
         [[ $run == *samples* && $rc -eq 130 && "$err" == "clformer generate: interrupted" &&
            ! -s out ]]; then
        ok "SIG$sig during generate $run: 130, one line, $(wc -c < out) bytes printed"
      else
        bad "SIG$sig during generate $run: exit $rc: $err; printed: $(head -c 200 out)"
      fi
    done
  done
  ;;
*) echo "unknown case $case_name"; exit 2 ;;
esac
[[ $failures -eq 0 ]] || { echo "$failures failure(s)"; exit 1; }
