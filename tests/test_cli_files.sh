#!/usr/bin/env bash
# Issue 30: every file a command writes goes through one door
# (docs/RELIABILITY.md). One case per call (tests/CMakeLists.txt registers each):
#   table    (host) for each command that writes, the paths it reads and
#            writes come from the command itself (CLFORMER_LIST_FILES=1: the
#            declarations its door checks), so a new output cannot be left
#            out. Each output named by an option is tried as each input, each
#            other output, a symbolic link to each input, a FIFO with no
#            reader, a character device, a folder and an existing file of its
#            own name; each derived output (a lock file, numbered snapshots,
#            the best checkpoint) is made an input and an existing user file,
#            and each default name must move aside for an earlier file. Every
#            one must be refused with exit 2 in one line before any device is
#            opened (CLFORMER_DEVICE names none), every file byte-identical.
#            What a flag allows is the exception: a stream output takes a
#            device, an appended log an existing file.
#   signals  (device) SIGINT while each command writes its output (train's
#            save, export, average, logits, translate, plot) ends it with 130
#            and leaves no temp file and no half-written output.
#   reproductions (device) the issue's 13 reproductions as a user ran them:
#            each a one-line refusal or the right result, files byte-identical.
# Needs CLFORMER_BINARY and CLFORMER_TEST_DATA (tests/data).
CLI_TEST_TAG=files
[[ -n ${VERBOSE:-} ]] || QUIET_OK=1 # ok lines only when asked: there are hundreds
# shellcheck source=tests/cli_test_lib.sh
source "$(dirname "$0")/cli_test_lib.sh"

# Every file, link, FIFO and folder here with its bytes: what a refusal must
# leave as it was.
snapshot() {
  find . -mindepth 1 -printf '%y %p %l\n' | sort
  find . -type f -exec sha256sum {} + | sort
}

# refused WHAT ARGS...: the command exits 2 with one line naming the problem,
# before any device, and leaves every byte as it was
refused() {
  local what=$1; shift
  local before after err rc
  before=$(snapshot)
  err=$(CLFORMER_DEVICE=no-such-device timeout 30 "$bin" "$@" 2>&1 >/dev/null); rc=$?
  after=$(snapshot)
  local lines
  lines=$(printf '%s\n' "$err" | grep -c .)
  if [[ $rc -ne 2 || $lines -ne 1 || "$err" != "clformer $1: error: "* ]]; then
    bad "$what: $*: expected exit 2 and one line, got exit $rc: $err"
  elif [[ "$before" != "$after" ]]; then
    bad "$what: $*: files changed: $(diff <(echo "$before") <(echo "$after") | head -5)"
  else
    ok "$what: $err"
  fi
}

# a character device like /dev/null: a copy when mknod works (root), else the original
if mknod dev c 1 3 2>/dev/null; then device=$dir/dev; else device=/dev/null; fi

setup_inputs() {
  for i in 1 2 3 4; do cat "$data/corpus/small.de"; done > S.src
  for i in 1 2 3 4; do cat "$data/corpus/small.en"; done > S.tgt
  cp S.src V.src; cp S.tgt V.tgt; cp S.src IN.txt; cp S.tgt REF.txt
  cp "$data/bpe/vocab.json" vocab.json; cp "$data/bpe/merges.txt" merges.txt
  head -c 2000 "$data/corpus/small.en" > T.txt; cp T.txt VT.txt
  for f in g.model M.safetensors R.safetensors B.safetensors C1.safetensors C2.safetensors; do
    echo "input $f" > "$f"
  done
  echo '{"step": 1, "loss": 2.5}' > L1.jsonl; cp L1.jsonl L2.jsonl
}

# Each command that writes, as a user runs it: every kind of output it has.
bases=(
  "train --src S.src --tgt S.tgt --val-src V.src --val-tgt V.tgt --steps 8 --save o.safetensors --save-every 4 --keep-last 2 --save-best --log o.jsonl --plot o.png --tokenizer spm --tokenizer-model g.model"
  "train --src S.src --tgt S.tgt --init M.safetensors --steps 2 --no-save --plot p.png"
  "train --src S.src --tgt S.tgt --resume R.safetensors --steps 4 --log r.jsonl"
  "train --task lm --text T.txt --val-text VT.txt --tokenizer gpt2-bpe --bpe-vocab vocab.json --bpe-merges merges.txt --steps 2 --save lm.safetensors"
  "demo --save d.safetensors --log d.jsonl --plot d.png"
  "translate --model M.safetensors --input IN.txt --output out.txt --attention att.png"
  "eval --model M.safetensors --src IN.txt --ref REF.txt --output hyp.txt"
  "plot --log L1.jsonl --log L2.jsonl --out fig.png"
  "logits --model M.safetensors --batch B.safetensors --out lg.safetensors"
  "export --model M.safetensors --out e.safetensors"
  "export --model M.safetensors --out hfdir --format hf-gpt2"
  "export --model M.safetensors --out hfldir --format hf-llama"
  "average --out avg.safetensors C1.safetensors C2.safetensors"
)

# writes_at PATH BUT ARGS...: true when the command ARGS lists a write to
# PATH (a numbered pattern matching it counts) other than output BUT's
writes_at() {
  local want=$1 but=$2; shift 2
  local kind what path flags
  while IFS=$'\t' read -r kind what path flags; do
    [[ $kind == write && $what != "$but" &&
       ( "$path" == "$want" || "${path//\*/4}" == "$want" ) ]] && return 0
  done < <(CLFORMER_LIST_FILES=1 "$bin" "$@" 2>/dev/null)
  return 1
}

# with_value ARGS... : the base's words with option $opt's value set to $value
with_value() {
  local out=() i=0 words=("$@")
  while [[ $i -lt ${#words[@]} ]]; do
    out+=("${words[$i]}")
    if [[ "${words[$i]}" == "$opt" && $((i + 1)) -lt ${#words[@]} && "${words[$((i + 1))]}" == "$old" ]]; then
      out+=("$value"); i=$((i + 2)); continue
    fi
    i=$((i + 1))
  done
  printf '%s\n' "${out[@]}"
}

table() {
  setup_inputs
  local base words listing
  for base in "${bases[@]}"; do
    read -ra words <<< "$base"
    listing=$(CLFORMER_LIST_FILES=1 "$bin" "${words[@]}" 2>&1); rc=$?
    if [[ $rc -ne 0 || "$listing" != *write* ]]; then
      bad "$base: CLFORMER_LIST_FILES gave exit $rc: $listing"; continue
    fi
    local r_what=() r_path=() w_what=() w_path=() w_flags=()
    while IFS=$'\t' read -r kind what path flags; do
      if [[ $kind == read ]]; then r_what+=("$what"); r_path+=("$path")
      else w_what+=("$what"); w_path+=("$path"); w_flags+=("$flags"); fi
    done <<< "$listing"
    local w k
    for w in "${!w_what[@]}"; do
      local what=${w_what[$w]} path=${w_path[$w]} flags=${w_flags[$w]} concrete=${w_path[$w]//\*/4}
      local opt=$what old=$path value args=()
      local named=false
      for k in "${!words[@]}"; do
        [[ "${words[$k]}" == "$what" && "${words[$((k + 1))]:-}" == "$path" ]] && named=true
      done
      if $named; then
        # an output the user names: every clash the door must refuse
        for k in "${!r_path[@]}"; do
          value=${r_path[$k]}; mapfile -t args < <(with_value "${words[@]}")
          refused "$what = input ${r_what[$k]}" "${args[@]}"
          rm -f "lnk$k"; ln -s "$dir/${r_path[$k]}" "lnk$k"
          value=lnk$k; mapfile -t args < <(with_value "${words[@]}")
          refused "$what = a link to ${r_what[$k]}" "${args[@]}"
          rm -f "lnk$k"
        done
        for k in "${!w_path[@]}"; do
          [[ $k -eq $w ]] && continue
          value=${w_path[$k]//\*/4}; mapfile -t args < <(with_value "${words[@]}")
          # an output named after this one moves with it (--save's lock): no clash
          writes_at "$value" "$what" "${args[@]}" || continue
          refused "$what = output ${w_what[$k]}" "${args[@]}"
        done
        mkfifo fifo; value=fifo; mapfile -t args < <(with_value "${words[@]}")
        refused "$what = a FIFO" "${args[@]}"; rm -f fifo
        if [[ $flags != *stream* ]]; then
          value=$device; mapfile -t args < <(with_value "${words[@]}")
          refused "$what = a device" "${args[@]}"
        fi
        mkdir folder; echo "the user's" > folder/README; value=folder
        mapfile -t args < <(with_value "${words[@]}")
        refused "$what = a folder" "${args[@]}"; rm -rf folder
        if [[ $flags == *directory* ]]; then
          mkdir "$path"; echo earlier > "$path/model.safetensors"
          refused "$what = an earlier export, no --overwrite" "${words[@]}"
          rm -rf "$path"
        elif [[ $flags != *append* ]]; then
          echo "the user's file" > "$path"
          refused "$what = an existing file" "${words[@]}"
          rm -f "$path"
        fi
        continue
      fi
      # a derived output: made an input, and found as the user's file
      if [[ ${#r_path[@]} -gt 0 ]]; then
        opt=${r_what[0]} old=${r_path[0]} value=$concrete
        local is_input=false
        for k in "${!r_path[@]}"; do [[ "${r_path[$k]}" == "$concrete" ]] && is_input=true; done
        if ! $is_input; then
          cp "$old" "$concrete"
          mapfile -t args < <(with_value "${words[@]}")
          if writes_at "$concrete" "" "${args[@]}"; then refused "$what as input $opt" "${args[@]}"
          else ok "$what moved aside for the input $opt"; fi
          rm -f "$concrete"
        fi
      fi
      if [[ $flags == *lock-file* || $flags == *numbered* || $what == --save-best ]]; then
        echo "the user's file" > "$concrete"
        refused "$what = an existing file" "${words[@]}"
        rm -f "$concrete"
      elif [[ $what != --save ]]; then
        # a default name moves aside for an earlier file
        echo "an earlier run's" > "$concrete"
        local moved
        moved=$(CLFORMER_LIST_FILES=1 "$bin" "${words[@]}" 2>&1 | awk -F'\t' -v w="$what" '$2 == w { print $3 }')
        if [[ -n $moved && "$moved" != "$concrete" && ! -e $moved ]]; then ok "$what moves to $moved"
        else bad "$what: with '$concrete' there the run still names '$moved'"; fi
        rm -f "$concrete"
      fi
    done
  done
  echo "$cases checks"
}

# wait_for FILE SECONDS: until FILE exists (a run reached its writing)
wait_for() {
  for _ in $(seq 1 $(( $2 * 10 ))); do [[ -e $1 ]] && return 0; sleep 0.1; done
  return 1
}

# temp files and half-written outputs left in the folder
leftovers() { find . -name '*.tmp.*' -o -name '*.lock'; }

signals() {
  export CLFORMER_DEVICE=${CLFORMER_DEVICE:-pocl:pthread}
  setup_inputs
  "$bin" train --src S.src --tgt S.tgt --config tiny --max-len 24 --batch-size 4 --steps 2 \
    --save m.safetensors > /dev/null 2>&1 || bad "training the model"
  # a large model makes saving and exporting take long enough to be caught
  "$bin" train --src S.src --tgt S.tgt --d-model 512 --heads 8 --d-ff 2048 --enc-layers 3 \
    --dec-layers 3 --max-len 24 --batch-size 2 --steps 1 --save big.safetensors > /dev/null 2>&1 \
    || bad "training the large model"
  "$bin" train --task lm --text T.txt --d-model 512 --heads 8 --d-ff 2048 --dec-layers 6 \
    --context 32 --batch-size 1 --steps 1 --save biglm.safetensors > /dev/null 2>&1 \
    || bad "training the large language model"
  cp big.safetensors big2.safetensors
  printf 'ein kleiner hund\n%.0s' $(seq 1 20) > in.txt
  local run n
  runs=(
    "export --model big.safetensors --out x.safetensors"
    "average --out x.safetensors big.safetensors big2.safetensors"
    "export --model biglm.safetensors --out x --format hf-gpt2"
  )
  for run in "${runs[@]}"; do
    for n in 1 2 3; do
      rm -rf x x.safetensors
      # shellcheck disable=SC2086
      "$bin" $run > /dev/null 2> err &
      job=$!; pids+=("$job")
      # the signal lands while the output is being written: once its temp
      # file is there (a run that was quicker is a clean finish)
      for _ in $(seq 1 300); do [[ -n $(leftovers) ]] && break; kill -0 "$job" 2>/dev/null || break; sleep 0.01; done
      sleep "0.0$n"
      kill -INT "$job" 2>/dev/null; wait "$job"; rc=$?
      left=$(leftovers)
      if [[ -n $left ]]; then bad "SIGINT during $run: left $left"
      elif [[ $rc -eq 130 && ! -e x && ! -e x.safetensors ]]; then ok "SIGINT during $run: 130, nothing left"
      elif [[ $rc -eq 0 && ( -s x.safetensors || -s x/model.safetensors ) ]]; then ok "$run finished before the signal"
      else bad "SIGINT during $run: exit $rc, $(ls) $(cat err)"; fi
    done
  done
  # train: Ctrl-C saves; a second signal during that save, and SIGTERM while
  # it loads, leave no temp or lock file
  "$bin" train --src S.src --tgt S.tgt --d-model 512 --heads 8 --d-ff 2048 --enc-layers 3 \
    --dec-layers 3 --max-len 24 --batch-size 2 --steps 100000 --save t.safetensors --log t.jsonl \
    > /dev/null 2>&1 &
  job=$!; pids+=("$job")
  wait_for t.jsonl 120 || bad "the training run did not start"
  kill -INT "$job"; sleep 0.2; kill -TERM "$job" 2>/dev/null; wait "$job"; rc=$?
  left=$(leftovers)
  [[ $rc -eq 130 && -z $left && -s t.safetensors ]] && ok "train: Ctrl-C saved, nothing left" \
    || bad "train Ctrl-C: exit $rc, left: $left"
  mkfifo slow.src
  "$bin" train --src slow.src --tgt S.tgt --config tiny --steps 5 --save slow.safetensors > /dev/null 2>&1 &
  job=$!; pids+=("$job")
  sleep 1; kill -TERM "$job"; wait "$job"; rc=$?
  left=$(leftovers)
  [[ $rc -eq 130 && -z $left ]] && ok "train: SIGTERM while loading leaves no lock" \
    || bad "train SIGTERM while loading: exit $rc, left: $left"
  # logits, translate and plot: their outputs are small; the signal arrives
  # at a random point of the run
  for run in "logits --model m.safetensors --batch batch.safetensors --out x.safetensors" \
             "translate --model m.safetensors --input in.txt --output x.txt" \
             "plot --log t.jsonl --out x.png"; do
    [[ $run == logits* ]] && python_free_batch
    for n in 1 2 3 4 5; do
      rm -f x.safetensors x.txt x.png
      # shellcheck disable=SC2086
      "$bin" $run > /dev/null 2>&1 &
      job=$!; pids+=("$job")
      sleep "0.$((n * 2))"; kill -INT "$job" 2>/dev/null; wait "$job"; rc=$?
      left=$(leftovers)
      [[ -z $left && ( $rc -eq 130 || $rc -eq 0 ) ]] && ok "SIGINT during $run: $rc" \
        || bad "SIGINT during $run: exit $rc, left $left"
    done
  done
  echo "$cases checks"
}

# expect_one RC NEEDLE ARGS...: exit RC, one line on stderr holding NEEDLE
expect_one() {
  local want_rc=$1 needle=$2; shift 2
  local err rc
  err=$(timeout 60 "$bin" "$@" 2>&1 >/dev/null); rc=$?
  if [[ $rc -eq $want_rc && $(printf '%s\n' "$err" | grep -c .) -eq 1 && "$err" == *"$needle"* ]]; then
    ok "$want_rc: $err"
  else
    bad "$*: expected exit $want_rc and one line with '$needle', got $rc: $err"
  fi
}

reproductions() {
  export CLFORMER_DEVICE=${CLFORMER_DEVICE:-pocl:pthread}
  setup_inputs
  local tr=(--config tiny --max-len 24 --batch-size 8)
  "$bin" train --src S.src --tgt S.tgt "${tr[@]}" --steps 4 --save mm.safetensors > /dev/null 2>&1 \
    || bad "training mm"
  python_free_batch
  local keep
  keep=$(sha256sum mm.safetensors batch.safetensors)
  # 1. logits --out naming its model, its batch, a link to the model, a FIFO
  ln -s mm.safetensors link.safetensors; mkfifo ff
  expect_one 2 "is the same file as the input --model" logits --model mm.safetensors --batch batch.safetensors --out mm.safetensors
  expect_one 2 "is the same file as the input --batch" logits --model mm.safetensors --batch batch.safetensors --out batch.safetensors
  expect_one 2 "is the same file as the input --model" logits --model mm.safetensors --batch batch.safetensors --out link.safetensors
  expect_one 2 "is a FIFO" logits --model mm.safetensors --batch batch.safetensors --out ff
  # 8. export and average --out a FIFO: refused at once, nothing pushed into it
  expect_one 2 "is a FIFO" export --model mm.safetensors --out ff
  expect_one 2 "is a FIFO" average --out ff mm.safetensors
  [[ "$(sha256sum mm.safetensors batch.safetensors)" == "$keep" ]] && ok "1, 8: inputs intact" || bad "1, 8: inputs changed"
  # 2. --keep-last and --save-best against inputs; pruning only the run's own
  cp S.src k2.step4.safetensors; cp S.src m.best.safetensors
  expect_one 2 "would write the input --src" train --src k2.step4.safetensors --tgt S.tgt "${tr[@]}" --steps 8 --save k2.safetensors --save-every 4 --keep-last 2
  expect_one 2 "is the same file as the input --src" train --src m.best.safetensors --tgt S.tgt --val-src V.src --val-tgt V.tgt "${tr[@]}" --steps 8 --save m.safetensors --save-best
  cmp -s S.src k2.step4.safetensors && cmp -s S.src m.best.safetensors && ok "2: inputs intact" || bad "2: an input changed"
  echo "a text file" > k.step2.safetensors; cp mm.safetensors k.step100.safetensors
  expect_one 2 "exists and is not this run's" train --src S.src --tgt S.tgt "${tr[@]}" --steps 8 --save k.safetensors --save-every 2 --keep-last 1
  rm k.step2.safetensors
  "$bin" train --src S.src --tgt S.tgt "${tr[@]}" --steps 8 --save k.safetensors --save-every 2 --keep-last 2 --overwrite > /dev/null 2>&1
  [[ -e k.step6.safetensors && -e k.step8.safetensors && ! -e k.step4.safetensors && -e k.step100.safetensors ]] \
    && ok "2: --keep-last 2 kept the run's newest two and the other run's file" || bad "2: pruning left $(ls k.step*)"
  expect_one 2 "k.step100.safetensors' exists and is not this run's" train --src S.src --tgt S.tgt "${tr[@]}" --steps 12 --resume k.safetensors --save k.safetensors --save-every 2 --keep-last 2
  "$bin" train --src S.src --tgt S.tgt "${tr[@]}" --steps 12 --resume k.safetensors --save k.safetensors --save-every 2 --keep-last 2 --overwrite > /dev/null 2>&1
  [[ -e k.step10.safetensors && -e k.step12.safetensors && ! -e k.step8.safetensors && -e k.step100.safetensors ]] \
    && ok "2: a resumed run prunes the snapshots of the run it resumed" || bad "2: resumed pruning left $(ls k.step*)"
  # 3. the save lock never deletes a file it did not make, an input least of all
  cp S.src q.safetensors.lock
  expect_one 2 "the lock file of --save" train --src q.safetensors.lock --tgt S.tgt "${tr[@]}" --steps 2 --save q.safetensors
  cmp -s S.src q.safetensors.lock && ok "3: the input is intact" || bad "3: the input changed"
  # 4. a link does not get around the lock
  ln -s s.safetensors sl.safetensors
  "$bin" train --src S.src --tgt S.tgt "${tr[@]}" --steps 100000 --save s.safetensors --log s.jsonl > /dev/null 2>&1 &
  job=$!; pids+=("$job")
  wait_for s.jsonl 120; sleep 0.5
  expect_one 1 "another run is writing" train --src S.src --tgt S.tgt "${tr[@]}" --steps 2 --save sl.safetensors
  kill -INT "$job"; wait "$job"
  # 5. defaults never replace an earlier run's file; --save EXISTING needs --overwrite
  local out
  out=$("$bin" train --src S.src --tgt S.tgt "${tr[@]}" --steps 1 2>/dev/null)
  out=$("$bin" train --src S.src --tgt S.tgt "${tr[@]}" --steps 1 2>/dev/null)
  [[ "$out" == *"saved to clformer-model-2.safetensors"* && -s clformer-model.safetensors && -s clformer-model-2.safetensors ]] \
    && ok "5: a second default run saves to clformer-model-2" || bad "5: second default run: $out"
  for n in 1 2; do
    "$bin" train --src S.src --tgt S.tgt "${tr[@]}" --steps 100000 --no-save --log ns$n.jsonl > /dev/null 2>&1 &
    job=$!; pids+=("$job"); wait_for ns$n.jsonl 120; kill -INT "$job"; wait "$job"
  done
  [[ -s clformer-interrupted.safetensors && -s clformer-interrupted-2.safetensors ]] \
    && ok "5: a second interrupted --no-save run keeps the first's file" || bad "5: interrupted saves: $(ls clformer-int*)"
  keep=$(sha256sum mm.safetensors)
  expect_one 2 "exists and this run did not make it" train --src S.src --tgt S.tgt "${tr[@]}" --steps 1 --save mm.safetensors
  [[ "$(sha256sum mm.safetensors)" == "$keep" ]] && ok "5: --save EXISTING kept it" || bad "5: mm changed"
  # 6, 7. hf-gpt2 exports: no stale file; clformer files valid or refused by name
  "$bin" train --task lm --text T.txt --tokenizer gpt2-bpe --bpe-vocab vocab.json --bpe-merges merges.txt \
    --d-model 16 --heads 2 --dec-layers 1 --d-ff 32 --context 16 --batch-size 2 --steps 1 --save bpe.safetensors > /dev/null 2>&1
  "$bin" train --task lm --text T.txt --d-model 16 --heads 2 --dec-layers 1 --d-ff 32 --context 16 \
    --batch-size 2 --steps 1 --save char.safetensors > /dev/null 2>&1
  "$bin" export --model bpe.safetensors --out D1 --format hf-gpt2 > /dev/null
  expect_one 2 "exists and this run did not make it" export --model char.safetensors --out D1 --format hf-gpt2
  "$bin" export --model char.safetensors --out D1 --format hf-gpt2 --overwrite > /dev/null
  [[ ! -e D1/vocab.json && ! -e D1/merges.txt && -s D1/clformer_vocab.json ]] && ok "6: no stale tokenizer file" \
    || bad "6: D1 holds $(ls D1)"
  "$bin" generate --model D1 --prompt 'the ' --max-tokens 3 > /dev/null 2>&1 && ok "6: generate reads the export" \
    || bad "6: generate on the export failed"
  for how in missing empty garbage folder; do
    rm -rf D2; cp -r D1 D2
    case $how in
      missing) rm D2/clformer_vocab.json ;;
      empty) : > D2/clformer_vocab.json ;;
      garbage) echo '[1,2' > D2/clformer_vocab.json ;;
      folder) rm D2/clformer_vocab.json; mkdir D2/clformer_vocab.json ;;
    esac
    expect_one 1 "D2/clformer_vocab.json" generate --model D2 --prompt 'the ' --max-tokens 3
    echo "the cat" > t.txt
    expect_one 1 "D2/clformer_vocab.json" eval --model D2 --text t.txt
  done
  # 9. a tensor's dtype is under the header checksum
  "$bin" export --model mm.safetensors --out b16.safetensors --dtype bf16 > /dev/null
  sed '0,/"BF16"/s//"F16" /' b16.safetensors > f16.safetensors
  expect_one 1 "a tensor's dtype or shape" translate --model f16.safetensors --input IN.txt
  # 10. hostile sizes and streams
  rm -rf D3; cp -r D1 D3; sed -i 's/"n_layer": 1,/"n_layer": 1000,/' D3/config.json
  expect_one 1 "has no tensor 'transformer.h.1." generate --model D3 --prompt 'the ' --max-tokens 3
  expect_one 1 "holds a NUL byte" train --src /dev/zero --tgt S.tgt --steps 1 --no-save
  expect_one 1 "holds a NUL byte" train --src /dev/urandom --tgt S.tgt --steps 1 --no-save
  expect_one 1 "goes on past 256 MiB" train --task lm --text /dev/zero --steps 1 --no-save
  awk 'BEGIN { for (s = 1; s <= 300000; s++) printf "{\"step\": %d, \"loss\": %.4f}\n{\"step\": %d, \"val_loss\": %.4f}\n", s, 5 - s / 100000, s, 4 + (s % 7) / 10 }' > big.jsonl
  "$bin" plot --log big.jsonl --out big.png > /dev/null 2>&1 && [[ -s big.png ]] \
    && ok "10: plot draws 300,000 training and validation points" || bad "10: plot of a 300,000-step log"
  # 11. a 240-byte legal name saves
  local long
  long=$(printf 'n%.0s' $(seq 1 228)).safetensors
  "$bin" export --model mm.safetensors --out "$long" > /dev/null 2>&1 && [[ -s $long ]] \
    && ok "11: a 240-byte name saves" || bad "11: a 240-byte name"
  # 13. messages and exit codes
  : > empty.txt
  expect_one 1 "the training text 'empty.txt' is empty" train --task lm --text empty.txt --steps 1 --no-save
  printf '#version: 0.2\n\x01\x02 abc\nx\ny z\n' > bad.txt
  expect_one 1 '\x01\x02' train --task lm --text T.txt --tokenizer gpt2-bpe --bpe-vocab vocab.json --bpe-merges bad.txt --steps 1 --no-save
  expect_one 1 "no\x1b[31mfile" translate --model "$(printf 'no\033[31mfile')"
  expect_one 1 "is a language model" translate --model char.safetensors --input IN.txt
  expect_one 2 "did you mean 'train'" trian
  expect_one 1 "cannot write in the folder '/proc'" export --model mm.safetensors --out /proc/x.safetensors
  expect_one 1 "cannot write in the folder '/proc'" train --src S.src --tgt S.tgt --steps 1 --save /proc/x.safetensors
  echo "$cases checks"
}

# A batch file for logits (src and tgt_in, I32 [1, 3]) written without Python.
python_free_batch() {
  local header='{"src":{"dtype":"I32","shape":[1,3],"data_offsets":[0,12]},"tgt_in":{"dtype":"I32","shape":[1,3],"data_offsets":[12,24]}}'
  while (( ${#header} % 8 )); do header+=' '; done
  {
    printf "$(printf '\\x%02x' $(( ${#header} & 255 )) $(( ${#header} >> 8 )) 0 0 0 0 0 0)"
    printf '%s' "$header"
    printf '\x01\x00\x00\x00\x05\x00\x00\x00\x02\x00\x00\x00\x01\x00\x00\x00\x06\x00\x00\x00\x07\x00\x00\x00'
  } > batch.safetensors
}

case $case_name in
table) table ;;
signals) signals ;;
reproductions) reproductions ;;
*) echo "unknown case $case_name"; exit 2 ;;
esac
[[ $failures -eq 0 ]] || { echo "$failures failure(s)"; exit 1; }
