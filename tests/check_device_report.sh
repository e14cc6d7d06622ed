#!/bin/sh
# Runs tools/device_check_report.py TABLE DIR and fails unless each TEXT is
# found, as fixed text, in a line of its output: one grep -F per text, since
# CTest's multi-line regular expressions over this output took up to minutes
# to match. Exit 77 (skipped) without python3: the C build needs none.
#
#   check_device_report.sh REPORT_PY TABLE DIR TEXT...
report_py=$1 table=$2 dir=$3
shift 3
command -v python3 >/dev/null || { echo "skipped: no python3"; exit 77; }
out=$(python3 "$report_py" "$table" "$dir") || { echo "$out"; exit 1; }
status=0
for text in "$@"; do
    if ! printf '%s\n' "$out" | grep -qF -- "$text"; then
        echo "missing from device_check_report.py $table: $text"
        status=1
    fi
done
[ "$status" = 0 ] || printf '%s\n' "$out"
exit $status
