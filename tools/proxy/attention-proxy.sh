#!/usr/bin/env bash
# The attention part of the GPU proxy: how the tiled attention kernels of a
# GPU's profile use memory and arithmetic, measured without a GPU. Each
# kernel (a reference GPU with NVIDIA's OpenCL limits: 48 KiB of local
# memory, 1024 items a group) runs once under Oclgrind's instruction counter
# (oclgrind-kernel --inst-counts) for a stated shape, from .sim files that
# build/attention_proxy writes with the library's own sources, build options,
# tiles and launch sizes (runtime/check/attention_proxy.c). Per launch and
# summed: global memory bytes loaded and stored per (query, key) pair
# (forward, backward, both), FMAs per pair, local-memory loads per FMA and
# work-groups per launch.
#
#   tools/proxy/attention-proxy.sh [--json] [--kernels tiled|rows] [--B N] [--H N] [--T N] [--dh N]
#   tools/proxy/attention-proxy.sh --check [--B N] [--H N] [--T N] [--dh N]
#
#   --json      the figures as one JSON object (the value of gpu-proxy.sh's
#               "attention"): bytes_per_pair is forward + backward (issue 28's
#               goal: <= 40 at T=128, dh=64)
#   --kernels   tiled (default): cl/flash_attention_tiled.cl as GPUs run it now;
#               rows: the per-row kernels of cl/flash_attention.cl that GPUs
#               ran before, for comparison
#   --check     instead of counting, runs each kernel under Oclgrind's data-race
#               and uninitialised-value checks (out-of-bounds accesses are always
#               checked) and fails on any report
#   shape       B x H heads of T queries and T keys of dh floats, self-attention
#               without masks or dropout (defaults B 2, H 4, T 128, dh 64;
#               the bytes per pair do not depend on B and H)
#   --build DIR the build directory with attention_proxy (default build/)
#
# Loads and stores count what Oclgrind executes: load/store instructions
# plus the vloadN/vstoreN built-ins it runs natively. FMAs are the lanes of
# llvm.fmuladd calls (a*b+c contracted). Oclgrind compiles for size (-Oz),
# not as a GPU compiler would, so instruction mixes are indicative; memory
# traffic is exact.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
die() { echo "attention-proxy: $*" >&2; exit 2; }

json=0 check=0 kernels=tiled B=2 H=4 T=128 dh=64 build=$root/build
while [[ $# -gt 0 ]]; do
    case $1 in
    -h | --help) usage; exit 0 ;;
    --json) json=1 ;;
    --check) check=1 ;;
    --kernels | --B | --H | --T | --dh | --build)
        [[ $# -ge 2 ]] || die "$1 needs a value (see --help)"
        case $1 in
        --build) build=$2 ;;
        --kernels) kernels=$2 ;;
        --B) B=$2 ;;
        --H) H=$2 ;;
        --T) T=$2 ;;
        --dh) dh=$2 ;;
        esac
        shift ;;
    *) die "unknown option '$1' (see --help)" ;;
    esac
    shift
done
[[ $kernels == tiled || $kernels == rows ]] || die "--kernels '$kernels': use tiled or rows"
command -v oclgrind-kernel >/dev/null ||
    die "oclgrind-kernel is not installed (Debian: apt-get install oclgrind)"
[[ -x $build/attention_proxy ]] ||
    die "$build/attention_proxy is missing: build first (tools/build.sh), or give --build DIR"

work=$(mktemp -d "${TMPDIR:-/tmp}/attention-proxy.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$build/attention_proxy" --out "$work" --kernels "$kernels" --B "$B" --H "$H" --T "$T" \
    --dh "$dh" > "$work/manifest" || exit 2

field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<< " $2"; }

# --- check: data races, uninitialised values and bounds, one kernel at a time
if [[ $check == 1 ]]; then
    failed=0
    while IFS= read -r line; do
        kernel=$(field kernel "$line")
        if ! LC_ALL=C oclgrind-kernel --data-races --uninitialized \
                --local-mem-size "$(field local_bytes "$line")" \
                --build-options "${line#* options=}" "$(field sim "$line")" \
                > "$work/$kernel.out" 2> "$work/$kernel.err" || [[ -s $work/$kernel.err ]]; then
            echo "attention-proxy: $kernel: Oclgrind reported:" >&2
            head -40 "$work/$kernel.err" >&2
            failed=1
        else
            echo "$kernel: no data race, uninitialised value or out-of-bounds access (T=$T dh=$dh)"
        fi
    done < "$work/manifest"
    exit "$failed"
fi

# --- counts ------------------------------------------------------------------
# One line a launch: kernel phase groups items pairs loaded stored fmas local_loads
while IFS= read -r line; do
    kernel=$(field kernel "$line")
    LC_ALL=C oclgrind-kernel --inst-counts --local-mem-size "$(field local_bytes "$line")" \
        --build-options "${line#* options=}" "$(field sim "$line")" \
        > "$work/$kernel.counts" 2> "$work/$kernel.err" ||
        { cat "$work/$kernel.err" >&2; die "oclgrind-kernel failed on $kernel"; }
    awk -v k="$kernel" -v ph="$(field phase "$line")" -v g="$(field groups "$line")" \
        -v it="$(field items "$line")" -v pairs="$(field pairs "$line")" '
        # "N - load global (B bytes)", "N - call _Z6vload4mPU3AS1Kf()", ...
        / - load global \(/  { sub(/\(/, "", $5); ld += $5 }
        / - store global \(/ { sub(/\(/, "", $5); st += $5 }
        / - load local \(/   { ll += $1 }
        / - call _Z[0-9]+vload[0-9]+.*AS1/ {
            match($0, /vload[0-9]+/); ld += $1 * 4 * substr($0, RSTART + 5, RLENGTH - 5) }
        / - call _Z[0-9]+vstore[0-9]+.*AS1/ {
            match($0, /vstore[0-9]+/); st += $1 * 4 * substr($0, RSTART + 6, RLENGTH - 6) }
        / - call _Z[0-9]+vload[0-9]+.*AS3/ { ll += $1 }
        / - call llvm\.fmuladd\./ {
            w = 1; if (match($0, /\.v[0-9]+f32/)) w = substr($0, RSTART + 2, RLENGTH - 5)
            fma += $1 * w }
        END { printf "%s %s %d %d %d %.0f %.0f %.0f %.0f\n", k, ph, g, it, pairs, ld, st, fma, ll }
    ' "$work/$kernel.counts"
done < "$work/manifest" > "$work/table"

awk -v json="$json" -v kernels="$kernels" -v B="$B" -v H="$H" -v T="$T" -v dh="$dh" '
    { k[NR] = $1; ph[NR] = $2; g[NR] = $3; it[NR] = $4; p = $5
      ld[NR] = $6 / p; st[NR] = $7 / p; fma[NR] = $8 / p; ll[NR] = $9 / p
      tot[$2] += ld[NR] + st[NR]; lds[$2] += ld[NR]; sts[$2] += st[NR]; fm[$2] += fma[NR]; n = NR }
    function r(x) { return sprintf("%.2f", x) }
    END {
        all = tot["forward"] + tot["backward"]
        if (json) {
            printf "{\"kernels\": \"%s\", \"shape\": {\"B\": %d, \"H\": %d, \"T\": %d, \"dh\": %d, ", kernels, B, H, T, dh
            printf "\"device\": \"reference GPU (NVIDIA OpenCL limits: 48 KiB local, 1024 items)\", "
            printf "\"attention\": \"self, no masks, no dropout\"},\n"
            printf " \"bytes_per_pair\": %s,\n", r(all)
            for (f = 0; f < 2; f++) {
                x = f ? "backward" : "forward"
                printf " \"%s\": {\"bytes_per_pair\": %s, \"loaded_per_pair\": %s, ", x, r(tot[x]), r(lds[x])
                printf "\"stored_per_pair\": %s, \"fmas_per_pair\": %s},\n", r(sts[x]), r(fm[x])
            }
            printf " \"launches\": ["
            for (i = 1; i <= n; i++)
                printf "%s\n  {\"kernel\": \"%s\", \"phase\": \"%s\", \"work_groups\": %d, \"items\": %d, \"loaded_per_pair\": %s, \"stored_per_pair\": %s, \"fmas_per_pair\": %s, \"local_loads_per_fma\": %s}", \
                    (i > 1 ? "," : ""), k[i], ph[i], g[i], it[i], r(ld[i]), r(st[i]), r(fma[i]), \
                    (fma[i] > 0 ? sprintf("%.3f", ll[i] / fma[i]) : "null")
            printf "]}\n"
            exit
        }
        printf "Attention proxy: %s kernels on a reference GPU (NVIDIA OpenCL limits),\n", kernels
        printf "B=%d H=%d T=%d dh=%d, self-attention without masks or dropout; per (query, key) pair:\n\n", B, H, T, dh
        printf "%-28s %-8s %6s %6s %9s %9s %9s %12s\n", "kernel", "phase", "groups", "items", "loaded", "stored", "FMAs", "local/FMA"
        for (i = 1; i <= n; i++)
            printf "%-28s %-8s %6d %6d %9s %9s %9s %12s\n", k[i], ph[i], g[i], it[i], r(ld[i]), r(st[i]), r(fma[i]), \
                (fma[i] > 0 ? sprintf("%.3f", ll[i] / fma[i]) : "-")
        printf "\nglobal bytes per pair: forward %s, backward %s, total %s\n", r(tot["forward"]), r(tot["backward"]), r(all)
        printf "FMAs per pair: forward %s, backward %s\n", r(fm["forward"]), r(fm["backward"])
    }
' "$work/table"
