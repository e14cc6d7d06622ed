#!/usr/bin/env bash
# The GPU proxy: how a GPU's kernels use memory and arithmetic, measured
# without a GPU, under Oclgrind's instruction counter. Its sections:
#   attention  tools/proxy/attention-proxy.sh: the tiled attention kernels of
#              the GPU profile at T=128, dh=64 (global bytes per (query, key)
#              pair, forward and backward, FMAs per pair, local loads per FMA,
#              work-groups per launch)
#   gemm       tools/proxy/gemm-proxy.sh: CLBlast's kernels with the parameter
#              sets an NVIDIA GPU runs (global bytes and local loads per FMA,
#              work-groups per launch)
#
#   tools/gpu-proxy.sh [--json] [--quick] [--only attention|gemm] [--build DIR]
#
#   --json    one JSON object {"attention": ..., "gemm": ...}; attention.bytes_per_pair
#             is issue 28's figure (goal: <= 40)
#   --quick   fewer runs: the GEMM section's h100-own sets only, attention on
#             one head (its bytes per pair are per head: the same figure)
#   --only    one section (the other is null in the JSON)
# Each section's script takes more options (--help).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
json=0 only=
gemm_args=() attention_args=()
while [[ $# -gt 0 ]]; do
    case $1 in
    -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    --json) json=1 ;;
    --quick) gemm_args+=(--quick) attention_args+=(--B 1 --H 1) ;;
    --only) [[ $# -ge 2 && ($2 == attention || $2 == gemm) ]] ||
                { echo "gpu-proxy: --only takes attention or gemm" >&2; exit 2; }
            only=$2; shift ;;
    --build) [[ $# -ge 2 ]] || { echo "gpu-proxy: --build needs a directory" >&2; exit 2; }
             gemm_args+=(--build "$2") attention_args+=(--build "$2"); shift ;;
    *) echo "gpu-proxy: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
run_attention() { "$root/tools/proxy/attention-proxy.sh" "$@" ${attention_args[@]+"${attention_args[@]}"}; }
run_gemm() { "$root/tools/proxy/gemm-proxy.sh" "$@" ${gemm_args[@]+"${gemm_args[@]}"}; }
if [[ $json == 1 ]]; then
    attention=null gemm=null
    [[ $only == gemm ]] || attention=$(run_attention --json)
    [[ $only == attention ]] || gemm=$(run_gemm --json)
    printf '{"attention": %s, "gemm": %s}\n' "$attention" "$gemm"
else
    [[ $only == gemm ]] || run_attention
    [[ -n $only ]] || echo
    [[ $only == attention ]] || run_gemm
fi
