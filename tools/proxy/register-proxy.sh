#!/usr/bin/env bash
# The register part of the GPU proxy: what two LLVM-based GPU compilers make
# of every kernel a GPU's profile builds, measured without a GPU. Debian's
# clang 14 compiles each program of cl/ with the reference GPU profile's
# options (the ones tools/proxy/attention-proxy.sh simulates: 48 KiB of local
# memory, the tiled attention kernels' tiles per head size, NVIDIA's profile's
# for NVPTX and AMD's for AMDGPU, which differ) and libclc's
# built-ins linked in before optimisation, as a driver links its own, for
#   NVPTX sm_80   (NVIDIA's ISA): the bytes of private arrays a kernel keeps
#                 in "local" memory, which is off-chip: an array the
#                 compiler could not put in registers (ptxas, which allocates
#                 the registers, runs only in NVIDIA's driver); and its
#                 shared-memory loads per multiply-add, counted in the code
#                 (each load instruction, of any width, over the fma
#                 instructions: the unrolled tile loop dominates both), what
#                 a GPU issues for the tiled kernels' streamed tiles
#   AMDGPU gfx906 (AMD's back end allocates registers itself): VGPRs per
#                 work item, scratch bytes (spilled registers and private
#                 arrays, off-chip), waves per SIMD it allows, and real
#                 function calls (a helper the compiler did not inline)
#
#   tools/proxy/register-proxy.sh [--json] [--check] [--allow K,K] [--dh LIST] [--build DIR] [--cl DIR]
#                                 [--tiled-options OPTIONS]
#
#   --json    the figures as one JSON object (gpu-proxy.sh's "registers")
#   --check   fail (exit 1) naming each kernel that keeps private bytes in
#             NVPTX local memory, spills to AMDGPU scratch or makes a call
#   --allow   kernels whose private memory is by design (their source says
#             why): not flagged for it, still for calls; marked ~ in the table
#   --dh      the tiled attention kernels' head sizes (default 32,64,80,96,128)
#   --build   the build directory with attention_proxy and gemm_proxy (default build/)
#   --cl      the kernel programs (default cl/; the tests give one of their own)
#   --tiled-options  build options added after the tiled attention program's
#             own, to try other tiles (e.g. "-DFWD_SPLIT=4 -DFWD_PER_ITEM=2":
#             a -D given again replaces the profile's)
#
# Needs clang (14, with the NVPTX and AMDGPU targets, as Debian builds it) and
# libclc-14 (Debian: apt-get install clang libclc-14). A driver's compiler is
# newer and tuned otherwise, so the figures are indicative; a private array
# that one compiler must keep in memory is a warning for every GPU.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
die() { echo "register-proxy: $*" >&2; exit 2; }

json=0 check=0 allow= dhs=32,64,80,96,128 build=$root/build cl_dir=$root/cl tiled_extra=
while [[ $# -gt 0 ]]; do
    case $1 in
    -h | --help) usage; exit 0 ;;
    --json) json=1 ;;
    --check) check=1 ;;
    --dh | --build | --cl | --allow | --tiled-options)
        [[ $# -ge 2 ]] || die "$1 needs a value (see --help)"
        case $1 in
        --allow) allow=$2 ;;
        --tiled-options) tiled_extra=$2 ;;
        --dh) dhs=$2 ;;
        --build) build=$2 ;;
        --cl) cl_dir=$2 ;;
        esac
        shift ;;
    *) die "unknown option '$1' (see --help)" ;;
    esac
    shift
done
[[ $dhs =~ ^[0-9]+(,[0-9]+)*$ ]] || die "--dh '$dhs': give head sizes as N,N,... (e.g. 64,128)"
compgen -G "$cl_dir/*.cl" >/dev/null || die "--cl '$cl_dir': no kernel programs (*.cl) there"

clc=/usr/lib/clc
clang=$(command -v clang-14 || command -v clang || true)
[[ -n $clang ]] || die "clang is not installed (Debian: apt-get install clang libclc-14)"
for lib in nvptx64--nvidiacl.bc gfx906-amdgcn-mesa-mesa3d.bc; do
    [[ -f $clc/$lib ]] || die "$clc/$lib is missing: install libclc-14 (Debian: apt-get install libclc-14)"
done
[[ -x $build/attention_proxy ]] ||
    die "$build/attention_proxy is missing: build first (tools/build.sh), or give --build DIR"

work=$(mktemp -d "${TMPDIR:-/tmp}/register-proxy.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The reference GPU's build options: for every program (the per-row attention
# manifest's), and for the tiled attention program per head size.
options_of() { sed -n '1s/.* options=-cl-std=CL1.2 //p' "$1"; }
"$build/attention_proxy" --out "$work/rows" --kernels rows --B 1 --H 1 --T 16 --dh 64 \
    > "$work/rows.manifest" || exit 2
plain=$(options_of "$work/rows.manifest")
jobs=()
for src in "$cl_dir"/*.cl; do
    program=$(basename "$src" .cl)
    [[ $program == flash_attention_tiled || $program == gemm ]] && continue
    jobs+=("$program 0 $plain")
done
# the tiled GEMM provider's kernel with each of its tile sets, as
# gemm_proxy --list gives them ("set tiled128 gemm_tiled 'GM=128 GN=128 ...'"
# from runtime/device/gemm_tiled.c), on the forward's transposes (x W^T);
# its "dh" column is the block's rows
if [[ -f $cl_dir/gemm.cl ]]; then
    [[ -x $build/gemm_proxy ]] || die "$build/gemm_proxy is missing: build first (tools/build.sh)"
    while read -r gm defines; do
        jobs+=("gemm $gm $plain $defines -DTRANS_A=0 -DTRANS_B=1")
    done < <("$build/gemm_proxy" --list | awk -F"'" '$1 ~ / gemm_tiled $/ {
        n = split($2, kv, " "); out = ""
        for (i = 1; i <= n; i++) { out = out " -D" kv[i]; if (kv[i] ~ /^GM=/) gm = substr(kv[i], 4) }
        print gm out }')
    [[ $(printf '%s\n' "${jobs[@]}" | grep -c '^gemm ') -gt 0 ]] ||
        die "gemm_proxy --list names no tile sets of the tiled GEMM kernel"
fi
# the tiled attention program per head size, with each vendor's tiles for
# its own compiler: one job a target
[[ -f $cl_dir/flash_attention_tiled.cl ]] || dhs=
target_jobs=()
for dh in ${dhs//,/ }; do
    for vendor in nvidia amd; do
        "$build/attention_proxy" --out "$work/tiled$dh$vendor" --kernels tiled --B 1 --H 1 \
            --T 16 --dh "$dh" --vendor "$vendor" > "$work/tiled$dh$vendor.manifest" || exit 2
    done
    target_jobs+=("nvptx flash_attention_tiled $dh $(options_of "$work/tiled${dh}nvidia.manifest")${tiled_extra:+ $tiled_extra}"
                  "amdgpu flash_attention_tiled $dh $(options_of "$work/tiled${dh}amd.manifest")${tiled_extra:+ $tiled_extra}")
done

# compile TARGET PROGRAM DH OPTIONS...: one line per kernel,
# "program dh kernel key value ..." into $work/out/
compile() {
    local target=$1 program=$2 dh=$3; shift 3
    local base=(-x cl -cl-std=CL1.2 -Xclang -finclude-default-header -O3 -Wno-everything -S)
    local out=$work/out/$target.$program.$dh asm=$work/asm/$target.$program.$dh.s
    if [[ $target == nvptx ]]; then
        "$clang" "${base[@]}" -target nvptx64-unknown-nvidiacl -march=sm_80 \
            -Xclang -mlink-builtin-bitcode -Xclang "$clc/nvptx64--nvidiacl.bc" \
            "$@" "$cl_dir/$program.cl" -o "$asm" || return 1
        awk -v p="$program" -v dh="$dh" '
            /\.entry/ { k = $3; sub(/\(.*/, "", k); order[++n] = k; bytes[k] = 0 }
            /__local_depot[0-9]+\[/ { b = $0; sub(/.*\[/, "", b); sub(/\].*/, "", b); bytes[k] = b }
            /^[ \t]*ld\.shared\./ { lds[k]++ }
            /^[ \t]*fma\.rn\.f32/ { fma[k]++ }
            END { for (i = 1; i <= n; i++) { k = order[i]
                    print p, dh, k, "nvptx_local_bytes", bytes[k], "nvptx_shared_loads_per_fma",
                        (fma[k] ? sprintf("%.3f", lds[k] / fma[k]) : "-") } }
        ' "$asm" > "$out"
    else
        "$clang" "${base[@]}" -target amdgcn-mesa-mesa3d -mcpu=gfx906 -nogpulib \
            -Xclang -mlink-builtin-bitcode -Xclang "$clc/gfx906-amdgcn-mesa-mesa3d.bc" \
            "$@" "$cl_dir/$program.cl" -o "$asm" || return 1
        # a kernel's code runs from its label to its metadata comments
        awk -v p="$program" -v dh="$dh" '
            /^[A-Za-z_][A-Za-z0-9_]*:/ { k = $1; sub(/:.*/, "", k); calls[k] = 0 }
            /s_swappc_b64/ { calls[k]++ }
            /; NumVgprs: / { v[k] = $3 }
            /; ScratchSize: / { s[k] = $3 }
            /; Occupancy: / { o[k] = $3; order[++n] = k }
            END {
                for (i = 1; i <= n; i++) {
                    k = order[i]
                    print p, dh, k, "amdgpu_vgprs", v[k], "amdgpu_scratch_bytes", s[k], \
                        "amdgpu_occupancy", o[k], "amdgpu_calls", calls[k]
                }
            }
        ' "$asm" > "$out"
    fi
}
mkdir -p "$work/out" "$work/asm"
export -f compile
export work clang clc cl_dir
{ printf '%s\n' "${jobs[@]}" | sed 's/^/nvptx /; p; s/^nvptx /amdgpu /'
  [[ ${#target_jobs[@]} -eq 0 ]] || printf '%s\n' "${target_jobs[@]}"; } |
    xargs -P "$(nproc)" -L 1 bash -c 'compile "$@"' _ ||
    die "a kernel program failed to compile (run the clang line by hand to see why)"

# one row per (program, dh, kernel): the NVPTX figure joined to the AMDGPU ones
# (AMDGPU lists the helpers it kept as functions too: only kernels are kept)
cat "$work"/out/nvptx.* | sort > "$work/nvptx"
cat "$work"/out/amdgpu.* | sort > "$work/amdgpu"
join -j1 <(awk '{print $1 "|" $2 "|" $3, $5, $7}' "$work/nvptx") \
    <(awk '{print $1 "|" $2 "|" $3, $5, $7, $9, $11}' "$work/amdgpu") |
    tr '|' ' ' | sort -k1,1 -k2,2n -k3,3 |
    awk -v allow=",$allow," '{ print $1, $2, $3, $4, $6, $7, $8, $9,
                                     (index(allow, "," $3 ",") ? 1 : 0), $5 }' > "$work/table"
# columns: program dh kernel nvptx_local vgprs scratch occupancy calls allowed
# nvptx_shared_loads_per_fma ("-" without multiply-adds)
[[ -s $work/table ]] || die "no kernels found in the compilers' output"
for k in ${allow//,/ }; do
    awk -v k="$k" '$3 == k { found = 1 } END { exit !found }' "$work/table" ||
        die "--allow names '$k', which no kernel program has"
done
# flagged: private memory off-chip (unless allowed) or a call
flagged='(($4 > 0 || $6 > 0) && !$9) || $8 > 0'

bad=$(awk "$flagged" "$work/table")
if [[ $json == 1 ]]; then
    awk -v compiler="$("$clang" --version | head -1)" '
        BEGIN {
            printf "{\"compiler\": \"%s\", \"nvptx\": \"sm_80\", \"amdgpu\": \"gfx906\", \"kernels\": [", compiler
            f = "{\"program\": \"%s\", \"head_dim\": %d, \"kernel\": \"%s\", \"nvptx_local_bytes\": %d, "
            f = f "\"nvptx_shared_loads_per_fma\": %s, "
            f = f "\"amdgpu_vgprs\": %d, \"amdgpu_scratch_bytes\": %d, \"amdgpu_occupancy\": %d, \"amdgpu_calls\": %d, \"allowed\": %s}"
        }
        {
            printf ("%s" f), (NR > 1 ? ", " : ""), $1, $2, $3, $4, ($10 == "-" ? "null" : $10), $5, $6, $7, $8, ($9 ? "true" : "false")
            if ('"$flagged"') flagged++
        }
        END { printf "], \"kernels_flagged\": %d}\n", flagged }
    ' "$work/table"
else
    echo "GPU compilers without a GPU: $("$clang" --version | head -1), libclc; NVPTX sm_80, AMDGPU gfx906"
    echo "(dh: the tiled attention kernels' head size, gemm's block rows; * marks private memory off-chip or a call,"
    echo " ~ private memory that --allow names as by design)"
    echo "(lds/fma: NVPTX shared-memory loads per multiply-add in the code)"
    printf '%-22s %4s %-34s %12s %8s %6s %8s %6s %5s\n' program dh kernel "nvptx local" lds/fma vgprs \
        scratch waves calls
    awk '{ printf "%-22s %4s %-34s %12d %8s %6d %8d %6d %5d%s\n", $1, ($2 ? $2 : "-"), $3, $4, $10, $5,
                  $6, $7, $8, ('"$flagged"') ? " *" : ($4 > 0 || $6 > 0) ? " ~" : "" }' "$work/table"
fi
if [[ $check == 1 && -n $bad ]]; then
    echo "register-proxy: $(wc -l <<< "$bad") kernel(s) keep private memory off-chip or make calls:" >&2
    awk '{ printf "  %s %s%s: NVPTX local %d bytes, AMDGPU scratch %d bytes, %d calls\n", $1, $3,
                  ($2 ? " (dh " $2 ")" : ""), $4, $6, $8 }' <<< "$bad" >&2
    exit 1
fi
exit 0
