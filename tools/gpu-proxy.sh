#!/usr/bin/env bash
# The GPU proxy: how a GPU's kernels use memory and arithmetic, measured
# without a GPU, under Oclgrind's instruction counter. Its sections:
#   attention  tools/proxy/attention-proxy.sh: the tiled attention kernels of
#              the GPU profile at T=128, dh=64 (global bytes per (query, key)
#              pair, forward and backward, FMAs per pair, local loads per FMA,
#              work-groups per launch)
#   gemm       tools/proxy/gemm-proxy.sh: CLBlast's kernels with the parameter
#              sets an NVIDIA GPU runs, and clformer's own (cl/gemm.cl) with
#              its tile sets (global bytes and local loads per FMA,
#              work-groups per launch)
#   registers  tools/proxy/register-proxy.sh: every kernel program compiled
#              by clang 14 for NVPTX and AMDGPU (private bytes kept off-chip,
#              NVPTX shared-memory loads per multiply-add, AMDGPU registers,
#              scratch, occupancy and calls per kernel)
#
#   tools/gpu-proxy.sh [--json] [--quick] [--only attention|gemm|registers] [--build DIR]
#
#   --json    one JSON object {"attention": ..., "gemm": ..., "registers": ...}; attention.bytes_per_pair
#             is issue 28's figure (goal: <= 40)
#   --quick   fewer runs: the GEMM section's h100-own and tiled128 sets only, attention on
#             one head (its bytes per pair are per head: the same figure),
#             registers at head size 64 only
#   --only    one section (the others are null in the JSON)
# Each section's script takes more options (--help).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
json=0 only=
gemm_args=() attention_args=() register_args=()
while [[ $# -gt 0 ]]; do
    case $1 in
    -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    --json) json=1 ;;
    --quick) gemm_args+=(--quick) attention_args+=(--B 1 --H 1) register_args+=(--dh 64) ;;
    --only) [[ $# -ge 2 && ($2 == attention || $2 == gemm || $2 == registers) ]] ||
                { echo "gpu-proxy: --only takes attention, gemm or registers" >&2; exit 2; }
            only=$2; shift ;;
    --build) [[ $# -ge 2 ]] || { echo "gpu-proxy: --build needs a directory" >&2; exit 2; }
             gemm_args+=(--build "$2") attention_args+=(--build "$2") register_args+=(--build "$2")
             shift ;;
    *) echo "gpu-proxy: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
run_attention() { "$root/tools/proxy/attention-proxy.sh" "$@" ${attention_args[@]+"${attention_args[@]}"}; }
run_gemm() { "$root/tools/proxy/gemm-proxy.sh" "$@" ${gemm_args[@]+"${gemm_args[@]}"}; }
run_registers() { "$root/tools/proxy/register-proxy.sh" "$@" ${register_args[@]+"${register_args[@]}"}; }
wanted() { [[ -z $only || $only == "$1" ]]; }
if [[ $json == 1 ]]; then
    attention=null gemm=null registers=null
    if wanted attention; then attention=$(run_attention --json); fi
    if wanted gemm; then gemm=$(run_gemm --json); fi
    if wanted registers; then registers=$(run_registers --json); fi
    printf '{"attention": %s, "gemm": %s, "registers": %s}\n' "$attention" "$gemm" "$registers"
else
    if wanted attention; then run_attention; fi
    [[ -n $only ]] || echo
    if wanted gemm; then run_gemm; fi
    [[ -n $only ]] || echo
    if wanted registers; then run_registers; fi
fi
