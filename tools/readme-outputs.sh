#!/usr/bin/env bash
# Regenerates the command outputs README.md quotes, with the date, commit and
# device they came from, so that the quoted figures can be refreshed instead
# of going stale:
#   demo    `clformer demo`'s held-out sample, exact count, BLEU and timing
#           (the block under "Two commands")
#   checks  how many checks `clformer check --quick` and `clformer check` run
#           and fail (the figures of docs/TESTING.md, "On GPUs")
# Usage: tools/readme-outputs.sh [demo|checks]... (default: both). Uses
# build/clformer and CLFORMER_DEVICE (default pocl:pthread); prints Markdown.
# Paste the blocks into README.md (demo) or docs/TESTING.md (checks) with the
# line that dates them.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/clformer
[[ -x "$bin" ]] || { echo "readme-outputs.sh: error: $bin not built (run tools/build.sh)" >&2; exit 1; }
export CLFORMER_DEVICE="${CLFORMER_DEVICE:-pocl:pthread}"
sections=("$@")
[[ ${#sections[@]} -gt 0 ]] || sections=(demo checks)
device=$("$bin" devices | sed -n 's/^\* [0-9]*:[0-9]* *//p' | head -n 1)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
echo "<!-- tools/readme-outputs.sh ${sections[*]}: $(date -u +%Y-%m-%d), $commit, $device -->"
for s in "${sections[@]}"; do
    case "$s" in
    demo)
        out=$("$bin" demo 2>&1)
        echo '```'
        # the first held-out example, then the totals
        printf '%s\n' "$out" | awk '/^held-out sentences/ { print; n = 3; next }
                                    n > 0 { print; n--; if (n == 0) print "..." }'
        printf '%s\n' "$out" | grep -E '^(held-out set:|BLEU =|trained [0-9]+ steps)'
        echo '```'
        ;;
    checks)
        quick=$("$bin" check --quick | tail -n 1)
        full=$("$bin" check | tail -n 1)
        echo "clformer check --quick: $quick; clformer check: $full ($device)"
        ;;
    *) echo "readme-outputs.sh: error: unknown section '$s' (demo, checks)" >&2; exit 2 ;;
    esac
done
