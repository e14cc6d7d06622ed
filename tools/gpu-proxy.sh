#!/usr/bin/env bash
# The GPU proxy: how a GPU's kernels use memory and arithmetic, measured
# without a GPU, under Oclgrind's instruction counter. Its sections:
#   gemm       tools/proxy/gemm-proxy.sh: CLBlast's kernels with the parameter
#              sets an NVIDIA GPU runs (global bytes and local loads per FMA,
#              work-groups per launch)
#   attention  comes with the tiled attention kernels (issue 28); null here
#
#   tools/gpu-proxy.sh [--json] [--quick] [--build DIR]
#
#   --json    one JSON object {"attention": ..., "gemm": ...}
#   --quick   the GEMM section's h100-own sets only
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
json=0
args=()
while [[ $# -gt 0 ]]; do
    case $1 in
    -h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    --json) json=1 ;;
    --quick) args+=(--quick) ;;
    --build) [[ $# -ge 2 ]] || { echo "gpu-proxy: --build needs a directory" >&2; exit 2; }
             args+=(--build "$2"); shift ;;
    *) echo "gpu-proxy: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
if [[ $json == 1 ]]; then
    gemm=$("$root/tools/proxy/gemm-proxy.sh" --json ${args[@]+"${args[@]}"})
    printf '{"attention": null, "gemm": %s}\n' "$gemm"
else
    "$root/tools/proxy/gemm-proxy.sh" ${args[@]+"${args[@]}"}
fi
