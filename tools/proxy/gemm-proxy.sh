#!/usr/bin/env bash
# The GEMM part of the GPU proxy: how CLBlast's kernels, with the parameter
# sets an NVIDIA GPU runs, and clformer's own (the tiled provider's, with
# each of its tile sets) use memory, measured without a GPU. For each set
# and shape, build/gemm_proxy runs one product on Oclgrind's device
# with Oclgrind's instruction counter on (OCLGRIND_INST_COUNTS=1), and this
# script reads the counts: global bytes loaded and stored per useful
# multiply-add (the GEMM kernel alone, and with the pad/transpose kernels
# CLBlast's indirect path adds), local-memory loads per multiply-add, and
# the work-groups one launch has on the model's shape.
#
#   tools/proxy/gemm-proxy.sh [--json] [--quick] [--build DIR]
#
#   --json    the figures as one JSON object (the value of gpu-proxy.sh's "gemm")
#   --quick   only "h100-own", the sets CLBlast 1.5.3 gives an H100 today, and
#             "tiled128", clformer's kernel with its largest tiles
#   --build   the build directory with gemm_proxy (default build/)
#
# Sets and shapes: build/gemm_proxy --list (h100-own; xI, dI: the Xgemm and
# XgemmDirect candidates the per-shape GEMM search times on NVIDIA GPUs;
# tiled128, tiled64, tiled32: cl/gemm.cl with 128, 64 or 32 square blocks,
# which has no helper kernels). The
# shapes stand for base's query/key/value projection (4096 x 1536 x 512 at
# batch 64 x length 64) and attention scores (64 x 64 x 64, 512 of them),
# simulated at 128 x 128 x 128 and 64 x 64 x 64 x 2: a kernel's per-FMA
# figures depend on its tiles, not on m and n, once a tile is full; the pad
# and transpose kernels' share shrinks as m and n grow (theirs is read and
# write of the operands once, against m*n*k multiply-adds), so "with
# helpers" overstates them for the model's sizes. Oclgrind's local memory is
# raised to 1 MiB: it reports a kernel's local memory as that of every kernel
# in the program, which CLBlast's check would refuse for NVIDIA's 48 KiB.
# Loads and stores count what Oclgrind executes (vector loads once); Oclgrind
# compiles for size, not as a GPU compiler would, so instruction mixes are
# indicative; memory traffic is exact.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
die() { echo "gemm-proxy: $*" >&2; exit 2; }

json=0 quick=0 build=$root/build
while [[ $# -gt 0 ]]; do
    case $1 in
    -h | --help) usage; exit 0 ;;
    --json) json=1 ;;
    --quick) quick=1 ;;
    --build) [[ $# -ge 2 ]] || die "--build needs a directory"; build=$2; shift ;;
    *) die "unknown option '$1' (see --help)" ;;
    esac
    shift
done
[[ -x $build/gemm_proxy ]] ||
    die "$build/gemm_proxy is missing: build first (tools/build.sh), or give --build DIR"
icd=$build/icd
[[ -e $icd/oclgrind.icd ]] ||
    die "no Oclgrind ICD in $icd (Debian: apt-get install oclgrind, then reconfigure)"

work=$(mktemp -d "${TMPDIR:-/tmp}/gemm-proxy.XXXXXX")
trap 'rm -rf "$work"' EXIT

sets=$("$build/gemm_proxy" --list | awk '$1 == "set" { print $2 }')
shapes=$("$build/gemm_proxy" --list | awk '$1 == "shape" { print $2 }')
[[ $quick == 1 ]] && sets="h100-own tiled128"

# One run: its facts line and Oclgrind's counts, summed into one line:
# set shape kernel fma work_groups main_global main_local_loads all_global
measure() {
    local set=$1 shape=$2 out=$work/$1-$2.txt
    if ! OCL_ICD_VENDORS=$icd OCLGRIND_INST_COUNTS=1 OCLGRIND_LOCAL_MEM_SIZE=1048576 \
            "$build/gemm_proxy" --set "$set" --shape "$shape" >"$out" 2>&1; then
        echo "gemm-proxy: $set on $shape failed:" >&2
        tail -n 3 "$out" >&2
        return 1
    fi
    awk -v set="$set" -v shape="$shape" '
        # the direct kernel comes as XgemmDirectNN (..NT, TN, TT), batched as
        # XgemmDirectStridedBatchedNN (...); the indirect one as Xgemm or
        # XgemmStridedBatched
        /^Instructions executed for kernel/ {
            k = $5; gsub(/[^A-Za-z0-9_]/, "", k)
            sub(/^XgemmDirect.*/, "XgemmDirect", k); sub(/^XgemmStridedBatched$/, "Xgemm", k) }
        /load global \(/ || /store global \(/ {
            b = $0; sub(/.*\(/, "", b); sub(/ bytes.*/, "", b)
            all += b; if (k == main) mg += b; else glob[k] += b }
        /load local \(/ { if (k == main) ml += $1; else loc[k] += $1 }
        /^gemm_proxy / {
            for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
            main = f["kernel"] }
        END {
            if (main == "") exit 1
            # the main kernel may be counted before its facts line: add what was set aside
            mg += glob[main]; ml += loc[main]
            printf "%s %s %s %s %s %d %d %d\n", set, shape, main, f["fma"], f["model_work_groups"], mg, ml, all
        }' "$out"
}

: > "$work/rows"
for shape in $shapes; do
    for set in $sets; do
        measure "$set" "$shape" >> "$work/rows" || exit 1
    done
done

if [[ $json == 1 ]]; then
    "$build/gemm_proxy" --list | awk '$1 == "shape" { m = $7 " " $8; gsub(/[()]/, "", m)
        printf "%s\t%s %s %s\t%s\n", $2, $3, $4, $5, m }' > "$work/shapes"
    awk -v shapes="$work/shapes" '
        BEGIN {
            while ((getline line < shapes) > 0) {
                split(line, p, "\t"); sim[p[1]] = p[2]; model[p[1]] = p[3] }
            printf "{\"simulated\": {"; sep = ""
            for (s in sim) { printf "%s\"%s\": \"%s\"", sep, s, sim[s]; sep = ", " }
            printf "}, \"model\": {"; sep = ""
            for (s in model) { printf "%s\"%s\": \"%s\"", sep, s, model[s]; sep = ", " }
            printf "}, \"runs\": ["; sep = ""
        }
        {
            printf "%s{\"set\": \"%s\", \"shape\": \"%s\", \"kernel\": \"%s\", \"fma\": %s, " \
                   "\"global_bytes_per_fma\": %.4f, \"global_bytes_per_fma_with_helpers\": %.4f, " \
                   "\"local_loads_per_fma\": %.4f, \"work_groups_per_launch\": %s}", \
                   sep, $1, $2, $3, $4, $6 / $4, $8 / $4, $7 / $4, $5
            sep = ", "
        }
        END { printf "]}\n" }' "$work/rows"
    exit 0
fi

echo "GEMM proxy: CLBlast on Oclgrind with NVIDIA's parameter sets (gemm_proxy --list)"
"$build/gemm_proxy" --list | awk '$1 == "shape" { print "  " $0 }'
printf "\n%-10s %-9s %-12s %12s %12s %12s %14s\n" set shape kernel "global B/FMA" "+helpers" \
    "local ld/FMA" "work-groups"
awk '{ printf "%-10s %-9s %-12s %12.3f %12.3f %12.3f %14d\n", $1, $2, $3, $6 / $4, $8 / $4, $7 / $4, $5 }' \
    "$work/rows"
echo
echo "work-groups: one launch of the kernel on the model's shape (from the set's tiles)"
