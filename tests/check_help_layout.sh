#!/usr/bin/env bash
# Every command's --help keeps its option table in columns: each line of the
# options section starts with two spaces, so an option whose help runs over
# several lines (--precision) continues under its own text, not at column 0.
# Usage: tests/check_help_layout.sh CLFORMER
set -euo pipefail
bin=${1:?usage: check_help_layout.sh CLFORMER}
mapfile -t commands < <("$bin" --help | awk '/^commands:/ { on = 1; next } on && /^$/ { on = 0 }
                                            on && /^  [a-z]/ { print $1 }')
((${#commands[@]} > 5)) || { echo "FAIL: found only ${#commands[@]} commands in clformer --help"; exit 1; }
fail=0
for c in "${commands[@]}"; do
    help=$("$bin" "$c" --help)
    bad=$(printf '%s\n' "$help" | awk '/^options:/ { on = 1; next } on && /^$/ { on = 0 }
                                       on && !/^  / { print }')
    if [[ -n "$bad" ]]; then
        echo "FAIL: clformer $c --help: option lines out of their column:"$'\n'"$bad"
        fail=1
    fi
done
((fail == 0)) || exit 1
echo "${#commands[@]} commands: every option line of --help in its column"
