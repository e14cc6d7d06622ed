#!/usr/bin/env bash
# Tunes CLBlast's single-precision GEMM for one OpenCL device and writes
# <outdir>/gemm_tuning.txt, which clformer applies with
#
#   CLFORMER_GEMM_TUNING=$PWD/<outdir>/gemm_tuning.txt build/clformer ...
#
# (its lines can also go into the table in runtime/device/gemm_tuning.c, making them
# the default for devices like the one tuned). Every product clformer computes
# goes through CLBlast's GEMM, which picks per size between one "direct"
# kernel and an "indirect" one with copy/pad/transpose helpers: all of these
# are tuned, then the size from which indirect wins (XGEMM_MIN_INDIRECT_SIZE).
#
# Usage: tools/tuning/tune-clblast.sh [-p PLATFORM] [-d DEVICE] [-o OUTDIR] [-c]
#   -p, -d   OpenCL platform and device index as `clinfo -l` lists them (0, 0)
#   -o       where the tuners' JSON files and gemm_tuning.txt go (clblast-tuning)
#   -c       then compare with build/gemm_bench (tools/tuning/gemm_bench.c)
#            the result with CLBlast's defaults on the transformer's shapes
# Needs clblast-utils (Debian: apt-get install clblast-utils) and python3.
# Tuners run under `nice -n 10` (NICE=0: normal priority); a run that stops
# can be restarted: stages whose JSON file exists are skipped. On a 2-core
# CPU it takes 30-60 minutes. On an NVIDIA H100 through NVIDIA's OpenCL
# (2026-11-26) each candidate kernel took 0.5-4 s to compile, so the
# xgemm_direct stages alone ran past 4 minutes (the second stopped at 73 of
# its 210 candidates): plan on half an hour or more there.
#
# How the tuners are driven: clblast_tuner_xgemm and _xgemm_direct search in
# stages, a fixed set first, then random samples of a much larger set, and
# take one -fraction (a divisor: 1/fraction of each stage's set) for all
# stages. So each stage runs in a pass of its own with its own fraction, and
# the pass is stopped once its stage's JSON file is written; the GEMMK=1
# stages (a kernel variant for some mobile GPUs) are skipped. Each kernel is
# tuned on one product size, so check the result on the model's shapes with
# -c (or tools/tuning/gemm_compare.py). The direct kernel in particular is
# tuned at 256^3 but serves attention's small batched products: where the
# "attn" rows lose, try a set with a smaller WGD from the direct tuner's
# files (the PoCL entry in runtime/device/gemm_tuning.c took a 32-wide one).
set -euo pipefail

platform=0 device=0 outdir=clblast-tuning compare=0
root=$(cd "$(dirname "$0")/../.." && pwd)
while getopts "p:d:o:ch" opt; do
    case $opt in
    p) platform=$OPTARG ;;
    d) device=$OPTARG ;;
    o) outdir=$OPTARG ;;
    c) compare=1 ;;
    *) sed -n '2,21p' "$0"; exit 2 ;;
    esac
done
for tool in clblast_tuner_xgemm clblast_tuner_xgemm_direct clblast_tuner_copy_fast \
            clblast_tuner_copy_pad clblast_tuner_transpose_fast clblast_tuner_transpose_pad \
            clblast_tuner_routine_xgemm python3; do
    command -v "$tool" >/dev/null || { echo "tune-clblast: $tool not found (apt-get install clblast-utils python3)" >&2; exit 1; }
done
mkdir -p "$outdir"
cd "$outdir"
nice_level=${NICE:-10}

# best_of A B OUT: copies whichever of the tuner files A, B (either may be
# missing) reports the shorter best time to OUT.
best_of() {
    python3 - "$@" <<'EOF'
import json, os, shutil, sys
found = [p for p in sys.argv[1:3] if os.path.isfile(p)]
if found:
    best = min(found, key=lambda p: float(json.load(open(p))["best_time"]))
    shutil.copy(best, sys.argv[3])
EOF
}

# run_stage JSON FRACTION TUNER ARGS...: runs a tuner in a directory of its
# own (a later pass would overwrite the earlier stages' files) until it has
# written JSON, and keeps that file.
run_stage() {
    local json=$1 fraction=$2 tuner=$3
    shift 3
    if [ -s "$json" ]; then echo "== $json exists, skipping"; return; fi
    echo "== $tuner -fraction $fraction $* -> $json"
    rm -rf "pass-$json" && mkdir "pass-$json"
    if [ "$tuner" = clblast_tuner_routine_xgemm ]; then
        # it reads the kernels' results from its directory, from the files
        # of the first stages: put the best of both stages there
        for f in copy pad transpose padtranspose xgemm_1 xgemm_direct_1; do
            best_of "clblast_${f}_32.json" "clblast_${f%_1}_2_32.json" "pass-$json/clblast_${f}_32.json"
        done
    fi
    (cd "pass-$json" && exec nice -n "$nice_level" "$tuner" -precision 32 -platform "$platform" \
        -device "$device" -fraction "$fraction" -runs 2 "$@" >log.txt 2>&1) &
    local pid=$!
    while kill -0 "$pid" 2>/dev/null && [ ! -s "pass-$json/$json" ]; do sleep 2; done
    sleep 1 # let the tuner finish writing the file
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    [ -s "pass-$json/$json" ] || { echo "tune-clblast: $tuner wrote no $json; see $outdir/pass-$json/log.txt" >&2; exit 1; }
    cp "pass-$json/$json" .
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("   best %s ms: %s" % (d["best_time"], d["best_parameters"]))' "$json"
}

# Fractions: the second pass of each tuner reruns the first stage on
# size/fraction >= 1 configurations (46 and 578 in CLBlast 1.5), then samples.
f_direct=(1 40) f_gemm=(4 400)
# The direct kernel serves small products and attention's batched ones.
run_stage clblast_xgemm_direct_1_32.json "${f_direct[0]}" clblast_tuner_xgemm_direct -m 256 -n 256 -k 256
run_stage clblast_xgemm_direct_2_32.json "${f_direct[1]}" clblast_tuner_xgemm_direct -m 256 -n 256 -k 256
# The indirect kernel serves the large ones (linear layers, the generator).
run_stage clblast_xgemm_1_32.json "${f_gemm[0]}" clblast_tuner_xgemm -m 512 -n 512 -k 512
run_stage clblast_xgemm_2_32.json "${f_gemm[1]}" clblast_tuner_xgemm -m 512 -n 512 -k 512
# Its helpers: copies and transposes into padded buffers and back.
run_stage clblast_copy_32.json 1 clblast_tuner_copy_fast
run_stage clblast_pad_32.json 1 clblast_tuner_copy_pad
run_stage clblast_transpose_32.json 1 clblast_tuner_transpose_fast
run_stage clblast_padtranspose_32.json 1 clblast_tuner_transpose_pad

# The switch point: the routine tuner reads the kernel results from this
# directory (the best of each) and times direct against indirect.
run_stage clblast_gemm_routine_32.json 1 clblast_tuner_routine_xgemm

# Best parameters per kernel -> gemm_tuning.txt.
python3 - <<'EOF'
import glob, json
kernel_of = {"xgemm": "Xgemm", "xgemm_direct": "XgemmDirect", "copy": "Copy", "pad": "Pad",
             "transpose": "Transpose", "padtranspose": "Padtranspose",
             "gemm_routine": "GemmRoutine"}
best = {}
device = ""
for path in sorted(glob.glob("clblast_*_32.json")):
    with open(path) as f:
        data = json.load(f)
    family = data["kernel_family"]
    base = family[:-2] if family.endswith(("_1", "_2")) else family
    kernel = kernel_of.get(base)
    if kernel is None:
        continue
    device = "%s | %s | %s" % (data.get("platform_vendor", ""), data.get("device", ""),
                               data.get("platform_version", ""))
    time = float(data["best_time"])
    params = dict(p.split("=") for p in data["best_parameters"].split())
    params.pop("PRECISION", None)
    if kernel not in best or time < best[kernel][0]:
        best[kernel] = (time, params, path)
with open("gemm_tuning.txt", "w") as out:
    out.write("# CLBlast parameters for clformer (CLFORMER_GEMM_TUNING=<this file>)\n")
    out.write("# device: %s\n" % device)
    for kernel in ("Xgemm", "XgemmDirect", "Copy", "Pad", "Transpose", "Padtranspose",
                   "GemmRoutine"):
        if kernel in best:
            time, params, path = best[kernel]
            unit = "score" if kernel == "GemmRoutine" else "ms"
            out.write("# %s: best %s %s in %s\n" % (kernel, time, unit, path))
            out.write("%s %s\n" % (kernel, " ".join("%s=%s" % kv for kv in sorted(params.items()))))
print(open("gemm_tuning.txt").read())
EOF
echo "== wrote $outdir/gemm_tuning.txt"

[ "$compare" = 1 ] || exit 0
# CLBlast's defaults (0) against the file, interleaved, on the model's shapes.
tuning=$PWD/gemm_tuning.txt
cd "$root"
[ -x build/gemm_bench ] || { echo "tune-clblast: build clformer first (tools/build.sh)" >&2; exit 1; }
CLFORMER_DEVICE=${CLFORMER_DEVICE:-$platform:$device} \
    nice -n "$nice_level" python3 tools/tuning/gemm_compare.py 0 "$tuning" --quick
