#!/usr/bin/env bash
# Trains the same model twice, on one rank at batch N*B and on N ranks at batch B
# each (the same global batch), and plots both loss curves in one figure: the
# check that data-parallel training learns as one device does.
#
#   tools/dist/compare-ranks.sh [--ranks N] [--batch-size B] [--out DIR] -- TRAIN-ARGS...
#
# TRAIN-ARGS go to both `clformer train` runs (data, model, steps, --eval-every,
# ...); do not give --batch-size, --log or --save. Writes DIR/one-rank.jsonl,
# DIR/N-ranks.jsonl and DIR/compare.png (default DIR: compare-ranks), then prints
# the validation losses side by side. CLFORMER (default build/clformer) and
# MPIRUN (default mpirun) name the programs; as root, mpirun gets
# --allow-run-as-root, and --oversubscribe always (a small machine has fewer
# cores than ranks x threads). Exit status: 0 done, 1 a run failed, 2 usage.
set -euo pipefail

ranks=2 batch=32 out=compare-ranks
usage() {
    echo "usage: tools/dist/compare-ranks.sh [--ranks N] [--batch-size B] [--out DIR] -- TRAIN-ARGS..." >&2
    exit 2
}
while [[ $# -gt 0 ]]; do
    case $1 in
    --ranks) ranks=${2:?}; shift 2 ;;
    --batch-size) batch=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) usage ;;
    esac
done
[[ $# -gt 0 && $ranks =~ ^[0-9]+$ && $batch =~ ^[0-9]+$ && $ranks -ge 2 && $batch -ge 1 ]] || usage
for a in "$@"; do
    case $a in
    --batch-size|--batch-tokens|--log|--save) echo "compare-ranks.sh: do not give $a in TRAIN-ARGS" >&2; exit 2 ;;
    esac
done

clformer=${CLFORMER:-build/clformer}
mpirun=${MPIRUN:-mpirun}
mpi_flags=(--oversubscribe)
[[ $(id -u) -eq 0 ]] && mpi_flags+=(--allow-run-as-root)
mkdir -p "$out"
one=$out/one-rank.jsonl many=$out/$ranks-ranks.jsonl

echo "== 1 rank, --batch-size $((ranks * batch))"
"$clformer" train "$@" --batch-size $((ranks * batch)) --log "$one"
echo "== $ranks ranks, --batch-size $batch each"
"$mpirun" "${mpi_flags[@]}" -np "$ranks" "$clformer" train "$@" --batch-size "$batch" --log "$many"
"$clformer" plot --log "$one" --label "1 rank, batch $((ranks * batch))" \
    --log "$many" --label "$ranks ranks, batch $batch each" \
    --title "one rank against $ranks ranks at the same global batch" --out "$out/compare.png"

# validation losses side by side
python3 - "$one" "$many" <<'EOF'
import json, sys
def val(path):
    out = {}
    for line in open(path):
        e = json.loads(line)
        if "val_loss" in e:
            out[e["step"]] = e["val_loss"]
    return out
a, b = val(sys.argv[1]), val(sys.argv[2])
print(f"{'step':>6} {'1 rank':>10} {'N ranks':>10} {'difference':>11}")
for s in sorted(set(a) & set(b)):
    print(f"{s:>6} {a[s]:>10.4f} {b[s]:>10.4f} {b[s] - a[s]:>+11.4f}")
EOF
