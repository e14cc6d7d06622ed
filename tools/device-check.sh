#!/usr/bin/env bash
# The GPU check in one script: the test suite, `clformer check --all` and
# `clformer bench` (tiny, small, base; every precision the build offers) on a
# GPU, base's matrix products against the FMA peak (build/gemm_bench), the
# tiled attention kernels with the profile's and other tiles (build/attention_bench), and
# issue 28's goal table, written up as a Markdown report (format:
# docs/DEVICE-CHECK.md).
#
#   tools/device-check.sh [REPORT.md]          build here, then check (a GPU machine
#                                              with clformer's build dependencies)
#   tools/device-check.sh bundle [DIR]         build here and pack binaries, kernels,
#                                              tests and shared libraries into
#                                              DIR/bundle.tar.xz (DIR: .devcarry) for a
#                                              GPU machine with a driver but no build deps
#   tools/device-check.sh run [DIR] [REPORT]   on that machine: check from the bundle
#
# The device is CLFORMER_DEVICE (default gpu). Every phase has its own time
# limit and the report says what each one did; the script exits non-zero when a
# phase failed. Budget: about 10 minutes on a current GPU. DEVICE_CHECK_ONLY
# (a list of check_all, kernels, goals, variants, tiles, gemm, suite, bench)
# runs a subset.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
device=${CLFORMER_DEVICE:-gpu}

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; }

# --- bundle: a Release build whose tests select the GPU, plus its libraries --
bundle() {
    local top=${1:-.devcarry}
    mkdir -p "$top/tree"
    top=$(cd "$top" && pwd)
    local dir=$top/tree
    cmake -S . -B "$dir/build" -DCMAKE_BUILD_TYPE=Release -DCLFORMER_TEST_DEVICES=gpu \
        >/dev/null || return 1
    cmake --build "$dir/build" -j "$(nproc)" >/dev/null || return 1
    find "$dir/build" -name '*.o' -delete
    find "$dir/build" -maxdepth 1 -name '*.a' -delete
    find "$dir/build" -type f -perm -u+x -exec strip --strip-unneeded {} + 2>/dev/null
    # every shared library the binaries need except the C runtime (the GPU
    # machine has a newer one), and ctest for machines without it
    mkdir -p "$dir/lib" "$dir/bin"
    cp "$(command -v ctest)" "$dir/bin/"
    find "$dir/build" -type f -perm -u+x -print0 | xargs -0 ldd 2>/dev/null |
        awk '$3 ~ /^\// {print $3}' | sort -u |
        grep -v -E '/(libc|libm|libpthread|libdl|librt|libgcc_s|libstdc\+\+|ld-linux[^/]*)\.so' |
        xargs -r cp -L -t "$dir/lib"
    ldd "$dir/bin/ctest" | awk '$3 ~ /^\// {print $3}' |
        grep -v -E '/(libc|libm|libpthread|libdl|librt|libgcc_s|libstdc\+\+)\.so' |
        xargs -r cp -L -t "$dir/lib"
    rm -f "$dir/build/icd/"*.icd   # this machine's CPU devices are not there
    echo "$root" > "$dir/source-dir"
    git rev-parse --short HEAD > "$dir/commit" 2>/dev/null
    # compressed, it travels in about half the space
    tar -cJf "$top/bundle.tar.xz" -C "$top" tree && rm -rf "$dir"
    du -sh "$top/bundle.tar.xz" | awk '{print "device-check: bundle " $2 " is " $1}'
}

# --- helpers for the run ------------------------------------------------------
report=
say() { printf '%s\n' "$*" | tee -a "$report"; }
failed=0

# DEVICE_CHECK_ONLY="goals gemm ...": only those sections (check_all, kernels,
# goals, variants, tiles, gemm, suite, bench), e.g. the rest of a run a time limit stopped
sections="check_all kernels goals variants tiles gemm suite bench"
for s in ${DEVICE_CHECK_ONLY:-}; do
    [[ " $sections " == *" $s "* ]] ||
        { echo "device-check: DEVICE_CHECK_ONLY names '$s'; the sections are: $sections" >&2; exit 2; }
done
wanted() { [[ -z ${DEVICE_CHECK_ONLY:-} || " $DEVICE_CHECK_ONLY " == *" $1 "* ]]; }

# phase NAME SECONDS CMD...: runs CMD with a limit, keeps its output in the
# report folder and says in the report how it ended
phase() {
    local name=$1 limit=$2; shift 2
    local log="$logdir/$name.log" start=$SECONDS rc
    timeout --kill-after=10 "$limit" "$@" >"$log" 2>&1
    rc=$?
    local took=$((SECONDS - start))
    if ((rc == 0)); then
        say "- \`$name\`: passed in ${took} s"
    elif ((rc == 124 || rc == 137)); then
        say "- \`$name\`: **stopped at its ${limit} s limit**"; failed=1
    else
        say "- \`$name\`: **failed (exit $rc)** after ${took} s"; failed=1
    fi
    return $rc
}

# the NVIDIA ICD where the driver ships its library but no vendors file
nvidia_icd() {
    local icd_dir=$1 lib
    lib=$(ldconfig -p 2>/dev/null | awk '/libnvidia-opencl\.so\.1/ {print $NF; exit}')
    [[ -z "$lib" ]] && lib=$(find / -xdev -name 'libnvidia-opencl.so.1' 2>/dev/null | head -1)
    [[ -n "$lib" ]] && echo "$lib" > "$icd_dir/nvidia.icd"
    [[ -n "$lib" ]]
}

# The tiled attention kernels one by one, with the profile's tiles and
# variations of them (build/attention_bench: the group's rows halved,
# doubled and quartered, the rows split over more and fewer items, the
# streamed tile halved and doubled, and pairs of those), on base's
# long-context shape, GPT-2's causal one and head sizes 128 and 32: which
# tiles this GPU should get, measured in one sitting; at head size 64 also
# the tile search's choice in the goals' base step.
tiles_section() {
    local ab="$1/attention_bench"
    say ""
    say "## Attention tiles"
    say ""
    [[ -x "$ab" ]] || { say "attention_bench is not in the build"; return; }
    local names=() name searched=()
    # the tiles the tile search chose at head size 64 in the goals' base step,
    # timed beside the others as the set "given"
    local spec
    spec=$(grep -o '"attention_tiles": "[^"]*"' "$logdir/goal-base-1024.log" 2>/dev/null |
        head -1 | cut -d'"' -f4)
    [[ -n "$spec" ]] && searched=(--tiles "$spec")
    shape() { names+=("$1"); phase "$1" 150 "$ab" "${@:2}"; }
    shape tiles-base-1024 --batch 16 --heads 8 --len 1024 --head-dim 64 "${searched[@]}"
    shape tiles-gpt2-1024 --batch 8 --heads 12 --len 1024 --head-dim 64 --causal "${searched[@]}"
    shape tiles-dh128-1024 --batch 16 --heads 4 --len 1024 --head-dim 128
    shape tiles-dh32-1024 --batch 16 --heads 16 --len 1024 --head-dim 32
    for name in "${names[@]}"; do
        say ""
        say '```'
        tee -a "$report" <"$logdir/$name.log"
        say '```'
    done
}

# The base model's matrix products (one training step's, at 64 x 64 and at
# 16 x 1024) as a share of the device's FMA peak, with CLBlast's own
# parameters, with the per-shape search (which runs here first and fills
# the cache the bench runs read) and with clformer's own kernel (the tiled
# provider, cl/gemm.cl), and gpt-char's with the search and the tiled
# kernel; build/gemm_bench does the timing.
gemm_section() {
    local build=$1 gb="$1/gemm_bench" size b t
    [[ -x "$gb" ]] || { say ""; say "## GEMM"; say ""; say "gemm_bench is not in the build"; return; }
    say ""
    say "## GEMM: base's products against the FMA peak"
    say ""
    for size in 64x64 16x1024; do
        b=${size%x*} t=${size#*x}
        CLFORMER_GEMM_TUNING=off phase "gemm-$size-own" 240 "$gb" --model base --batch "$b" \
            --len "$t" --peak --min-time 0.2
        phase "gemm-$size-search" 240 "$gb" --model base --batch "$b" --len "$t" --peak \
            --min-time 0.2
        CLFORMER_GEMM=tiled phase "gemm-$size-tiled" 120 "$gb" --model base --batch "$b" \
            --len "$t" --peak --min-time 0.2
    done
    # gpt-char's products (d_model 384, 64 windows of 256, 65 characters), the
    # GEMMs that take 66 of its 92 ms on the H200, with the search
    phase gemm-gpt-char-search 120 "$gb" --model gpt-char --batch 64 --len 256 --vocab 65 \
        --peak --min-time 0.2
    CLFORMER_GEMM=tiled phase gemm-gpt-char-tiled 120 "$gb" --model gpt-char --batch 64 \
        --len 256 --vocab 65 --peak --min-time 0.2
    # and each of its tile sets on every shape: which set each shape should get
    local block
    for block in 128 64 32; do
        CLFORMER_GEMM=tiled phase "gemm-gpt-char-tiled$block" 90 "$gb" --model gpt-char \
            --batch 64 --len 256 --vocab 65 --peak --min-time 0.1 --tiles "$block"
    done
    say ""
    python3 "$root/tools/device_check_report.py" gemm "$logdir" | tee -a "$report"
}

# Every kernel as the device's own compiler built it (build/kernel_resources):
# private bytes per work item (off-chip on a GPU), the largest group, and on
# NVIDIA ptxas' registers and spills; the tiled attention kernels per head
# size, and any other kernel that spills or keeps private memory. The
# proxy's estimate without a GPU is tools/proxy/register-proxy.sh.
kernels_section() {
    local kr="$1/kernel_resources"
    [[ -x "$kr" ]] || return
    say ""
    say "## Kernels as the device's compiler built them"
    say ""
    phase kernels 120 "$kr" --log
    say ""
    say '```'
    awk 'NF == 9 && $1 == "program" { print; next }
         NF == 9 && $1 != "ptxas" && $5 ~ /^[0-9]+$/ && ($2 != "-" || $4 > 0 || ($9 != "-" && $9 > 0)) { print }' \
        "$logdir/kernels.log" | tee -a "$report"
    say '```'
    say "(private: bytes a work item keeps off-chip; regs, spill: ptxas, NVIDIA only; all"
    say "kernels and the build logs: kernels.log)"
}

# Issue 28's goals, measured here (docs/PERFORMANCE.md, "Tiled attention"):
# the attention kernels' share of a base step at 16 x 1024 with the profile's
# kernels and, in the same sitting, with the per-row kernels GPUs ran before
# (CLFORMER_PROFILE=row-attention); the GEMMs' share of the FMA peak in that
# step; GPT-2 124M (context 1024) and gpt-char tokens/s and launches per step;
# gpt-char's generation, 64 sequences and one, and its launches a token.
goals_section() {
    local clf=$1
    say ""
    say "## Issue 28's goals"
    say ""
    local base=(bench --config base --batch 16 --len 1024 --steps 1 --warmup 0 --json)
    # the log says which sets the GEMM search chose; the same step with
    # CLBlast's own sets (no search) says what the search gained in the step
    CLFORMER_LOG=info phase goal-base-1024 240 "$clf" "${base[@]}"
    # the attention tile search runs in that step's first (untimed) step, at
    # head size 64 (the log has its times); the same step with the profile's
    # tiles says what it gained
    CLFORMER_ATTENTION_TUNING=off phase goal-base-1024-profile-tiles 240 "$clf" "${base[@]}"
    # the same step with the backward by GEMMs (unmeasured on a GPU when
    # written; its new product shapes are searched on first use)
    CLFORMER_ATTENTION=gemm-backward phase goal-base-1024-gemm-backward 240 "$clf" "${base[@]}"
    phase goal-gpt2 240 "$clf" bench --config gpt2 --steps 2 --warmup 1 --json
    local char=(bench --config gpt-char --steps 3 --warmup 1 --json)
    phase goal-gpt-char 180 "$clf" "${char[@]}"
    # generating one sequence: a decoding step is launches more than work
    phase goal-gpt-char-one-row 120 "$clf" bench --config gpt-char --batch 1 --steps 1 \
        --warmup 1 --json
    # the same steps another way, each against its goal figure above (section
    # variants, 2 minutes: a second call may leave them out)
    if wanted variants; then
        CLFORMER_GEMM_TUNING=off phase goal-base-1024-own-gemm 120 "$clf" "${base[@]}"
        # and with the weight gradients unsplit: what the split gains
        CLFORMER_PROFILE=whole-gradients phase goal-base-1024-whole 120 "$clf" "${base[@]}"
        # and with clformer's own product kernel (cl/gemm.cl) instead of CLBlast
        CLFORMER_GEMM=tiled phase goal-base-1024-tiled-gemm 120 "$clf" "${base[@]}"
        CLFORMER_PROFILE=row-attention phase goal-base-1024-rows 240 "$clf" "${base[@]}"
        # every attention product a GEMM, the probabilities saved (18 GiB at 16 x 1024)
        CLFORMER_ATTENTION=unfused phase goal-base-1024-unfused 240 "$clf" "${base[@]}"
        CLFORMER_ATTENTION=gemm-backward phase goal-gpt2-gemm-backward 240 "$clf" bench \
            --config gpt2 --steps 2 --warmup 1 --json
        CLFORMER_ATTENTION=gemm-backward phase goal-gpt-char-gemm-backward 120 "$clf" "${char[@]}"
        CLFORMER_PROFILE=whole-gradients phase goal-gpt-char-whole 120 "$clf" "${char[@]}"
        CLFORMER_GEMM=tiled phase goal-gpt-char-tiled-gemm 120 "$clf" "${char[@]}"
        CLFORMER_GEMM=tiled phase goal-gpt2-tiled-gemm 240 "$clf" bench --config gpt2 --steps 2 \
            --warmup 1 --json
    fi
    say ""
    python3 "$root/tools/device_check_report.py" goals "$logdir" | tee -a "$report"
}

run_checks() {
    local build=$1 out=$2
    report=$out
    logdir="${out%.md}-logs"
    mkdir -p "$logdir"
    : >"$report"
    local clf="$build/clformer"
    export OCL_ICD_VENDORS="$build/icd" CLFORMER_DEVICE="$device"
    export CLFORMER_CACHE_DIR="$build/device-check-cache"
    mkdir -p "$OCL_ICD_VENDORS"
    [[ -e "$OCL_ICD_VENDORS/nvidia.icd" ]] || nvidia_icd "$OCL_ICD_VENDORS" ||
        [[ -n "$(ls "$OCL_ICD_VENDORS")" ]] || unset OCL_ICD_VENDORS

    say "# clformer device check"
    say ""
    say "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    say "- commit: $(cat "$build/../commit" 2>/dev/null || git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    if command -v nvidia-smi >/dev/null; then
        say "- GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)"
    fi
    say "- selector: CLFORMER_DEVICE=$device"
    say ""
    say '```'
    "$clf" devices >>"$report" 2>&1
    say '```'
    say ""
    say "## Phases"
    say ""
    # correctness first (check_all: every op against the double reference, in
    # seconds), then issue 28's figures, then the long suite and the bench: a
    # run stopped early (a lent machine's 10-minute command limit) keeps the
    # figures that matter most; DEVICE_CHECK_ONLY runs a subset in a second call
    if wanted check_all; then
        # the profile's tiles: the tile search would time every head size checked
        CLFORMER_GEMM_TUNING=table CLFORMER_ATTENTION_TUNING=off phase check_all 100 "$clf" \
            check --all
        tail -n 3 "$logdir/check_all.log" | sed 's/^/  /' | tee -a "$report"
    fi
    if wanted kernels; then kernels_section "$build"; fi
    if wanted goals; then goals_section "$clf"; fi
    if wanted tiles; then tiles_section "$build"; fi
    if wanted gemm; then gemm_section "$build"; fi
    if wanted suite; then
        local jobs
        jobs=$(nproc); ((jobs > 8)) && jobs=8
        # the tests and checks run CLBlast's tuned table without the per-shape GEMM
        # search (test_gemm_search runs it with sets of its own), and the profile's
        # attention tiles: each test process would otherwise time its own shapes
        # and head sizes, minutes in all. The tests that run
        # on the GPU alone (label gpu): the host's tests need tools a bundle lacks
        # (cmark, Oclgrind, clang, object files) and run in CI.
        say ""
        say "## Test suite"
        say ""
        CLFORMER_GEMM_TUNING=table CLFORMER_ATTENTION_TUNING=off phase suite 300 "$ctest" --test-dir "$build" --output-on-failure \
            -j "$jobs" --timeout 240 -L '^gpu$' -E 'mpi|asan|sanitize|fuzz|get_data|install'
        grep -E 'tests passed|tests failed|Total Test time' "$logdir/suite.log" | sed 's/^/  /' | tee -a "$report"
        grep -E '^\s+[0-9]+ - .*\(Skipped\)' "$logdir/suite.log" | sed 's/^/  not run: /' | tee -a "$report"
        grep -E '^\s+[0-9]+ - ' "$logdir/suite.log" | grep -v '(Skipped)' | sed 's/^/  failed: /' | tee -a "$report"
    fi
    wanted bench || { say ""; say "Logs: $(basename "$logdir")/ (packed as $(basename "$logdir").tar.gz after a bundle's run)"; return $failed; }

    say ""
    say "## Bench"
    say ""
    local precisions=(fp32)
    if "$clf" bench --help 2>&1 | grep -q -- '--precision'; then precisions=(fp32 bf16 fp16); fi
    say "| config | precision | batch x len | train tok/s | train GFLOP/s | translate tok/s | first step s | activations MiB |"
    say "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"
    local config prec batch args limit
    for config in tiny small base; do
        batch=64
        for prec in "${precisions[@]}"; do
            args=(bench --config "$config" --batch "$batch" --len 64 --json)
            [[ $prec != fp32 ]] && args+=(--precision "$prec")
            # fp32 comes first: its first step may time new GEMM shapes (the
            # search's budget is 120 s a process); the others read its times
            limit=60; [[ $prec == fp32 ]] && limit=180
            if timeout "$limit" "$clf" "${args[@]}" >"$logdir/bench-$config-$prec.json" 2>"$logdir/bench-$config-$prec.err"; then
                python3 - "$config" "$prec" "$batch" "$logdir/bench-$config-$prec.json" <<'EOF' | tee -a "$report"
import json, sys
c, p, b, f = sys.argv[1:]
j = json.load(open(f))
print(f"| {c} | {p} | {b} x 64 | {j['train_tokens_per_s']:,.0f} | {j['train_gflops']:,.0f} | "
      f"{j['translate_tokens_per_s']:,.0f} | {j['first_step_s']:.1f} | "
      f"{j['memory']['activations'] / 2**20:,.0f} |")
EOF
            else
                say "| $config | $prec | $batch x 64 | failed: $(tail -n 1 "$logdir/bench-$config-$prec.err") | | | | |"
                failed=1
            fi
        done
    done
    say ""
    say "Logs: $(basename "$logdir")/ (packed as $(basename "$logdir").tar.gz after a bundle's run)"
    return $failed
}

case "${1:-}" in
    -h|--help) usage; exit 0 ;;
    bundle) bundle "${2:-.devcarry}"; exit $? ;;
    run)
        top=$(cd "${2:-.devcarry}" && pwd) || exit 1
        [[ -d "$top/tree" ]] || tar -xJf "$top/bundle.tar.xz" -C "$top" || exit 1
        dir=$top/tree
        # the bundle's CTest files name the source and build folders of the machine
        # that built it: make those paths lead here
        src=$(cat "$dir/source-dir")
        if [[ "$src" != "$root" && ! -e "$src" ]]; then
            mkdir -p "$(dirname "$src")" && ln -s "$root" "$src"
        fi
        bdir_built="$src/${dir#"$root"/}/build"
        export LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        ctest=$(command -v ctest || echo "$dir/bin/ctest")
        # CTest runs some tests through the cmake that configured them
        if [[ ! -e "$(sed -n 's/^CMAKE_COMMAND:INTERNAL=//p' "$bdir_built/CMakeCache.txt")" ]] &&
           command -v cmake >/dev/null; then
            ln -sf "$(command -v cmake)" "$(sed -n 's/^CMAKE_COMMAND:INTERNAL=//p' "$bdir_built/CMakeCache.txt")"
        fi
        run_checks "$bdir_built" "${3:-device-check.md}"
        rc=$?
        # one file for the logs: a lent machine sends back a few files only
        tar -czf "$logdir.tar.gz" -C "$(dirname "$logdir")" "$(basename "$logdir")" &&
            rm -rf "$logdir"
        exit $rc ;;
    *)
        ctest=ctest
        tools/build.sh -DCLFORMER_TEST_DEVICES="$device" || exit 1
        mkdir -p build/icd
        run_checks "$root/build" "${1:-device-check.md}"
        exit $? ;;
esac
