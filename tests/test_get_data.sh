#!/usr/bin/env bash
# tools/get-data.sh with local files (--from), no network:
# 1. a synthetic Multi30k-shaped corpus (right line counts, cased raw text with
#    punctuation): raw/ equals the input, the tokenised copy is lower-cased with
#    punctuation split off (numbers kept whole), a second run gives the same files;
# 2. the real Multi30k files in ../shared/data/multi30k when present (they are
#    already tokenised and lower-cased: the copy must equal them on >= 99% of
#    the lines, the rest being Moses' abbreviations);
# 3. errors, each exit 1 or 2 with one clear line and the old outputs intact:
#    a split with a wrong line count, an archive with a wrong SHA-256, a
#    missing archive, an unknown corpus, missing arguments.
set -uo pipefail
script="${CLFORMER_SOURCE_DIR:?run through ctest}/tools/get-data.sh"
tmp=$(mktemp -d /tmp/clformer-get-data-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
failures=0
check() {  # description, then a command that must succeed
    local what="$1"; shift
    if "$@"; then echo "ok   $what"; else echo "FAIL $what"; failures=$((failures + 1)); fi
}
expect_fail() {  # exit code, needle, command...
    local want="$1" needle="$2"; shift 2
    local err rc
    err=$("$@" 2>&1 >/dev/null); rc=$?
    if [[ $rc -eq $want && "$err" == *"$needle"* ]]; then echo "ok   exit $want: $needle"
    else echo "FAIL expected exit $want with '$needle', got $rc: $err"; failures=$((failures + 1)); fi
}

# 1. synthetic
src="$tmp/src"
mkdir -p "$src"
make_split() {  # name lines
    awk -v n="$2" 'BEGIN { for (i = 1; i <= n; i++)
        printf "A Dog (No. %d) runs, jumps: 3.5 metres!\n", i }' > "$src/$1.en"
    awk -v n="$2" 'BEGIN { for (i = 1; i <= n; i++)
        printf "Ein Hund (Nr. %d) läuft, springt: 3,5 Meter!\n", i }' > "$src/$1.de"
}
make_split train 29000; make_split val 1014; make_split test_2016_flickr 1000
out="$tmp/out"
check "runs with --from" "$script" multi30k "$out" --from "$src"
check "raw/ equals the input" cmp -s "$src/val.de" "$out/raw/val.de"
check "tokenised en" [ "$(sed -n 7p "$out/val.en")" = "a dog ( no . 7 ) runs , jumps : 3.5 metres !" ]
check "tokenised de" [ "$(sed -n 7p "$out/val.de")" = "ein hund ( nr . 7 ) läuft , springt : 3,5 meter !" ]
check "line counts" [ "$(cat "$out"/train.en | wc -l)" -eq 29000 ]
cp "$out/train.de" "$tmp/first.de"
check "a second run" "$script" multi30k "$out" --from "$src"
check "gives the same files" cmp -s "$tmp/first.de" "$out/train.de"
check "no temporary left" [ -z "$(ls -A "$out" | grep '^\.get-data')" ]

# 2. the real files, when this checkout has them
shared="${CLFORMER_SOURCE_DIR}/../shared/data/multi30k"
if [[ -f "$shared/train.en" ]]; then
    check "shared Multi30k with --from" "$script" multi30k "$tmp/m30k" --from "$shared"
    for f in train.en train.de val.en val.de test_2016_flickr.en test_2016_flickr.de; do
        total=$(wc -l < "$shared/$f")
        differ=$(diff "$shared/$f" "$tmp/m30k/$f" | grep -c '^<')
        check "$f: $differ of $total lines differ (<= 1%)" [ $((differ * 100)) -le "$total" ]
    done
else
    echo "note: $shared not present, only the synthetic corpus was used"
fi

# 3. errors
head -n 1013 "$src/val.en" > "$tmp/short" && mv "$tmp/short" "$src/val.en"
expect_fail 1 "val.en has 1013 lines" "$script" multi30k "$out" --from "$src"
check "old outputs intact" cmp -s "$tmp/first.de" "$out/train.de"
arch="$tmp/archives"
mkdir -p "$arch"
echo "not the real archive" > "$arch/training.tar.gz"
cp "$arch/training.tar.gz" "$arch/validation.tar.gz"
expect_fail 1 "mmt16_task1_test.tar.gz is missing" "$script" multi30k "$tmp/a" --from "$arch"
cp "$arch/training.tar.gz" "$arch/mmt16_task1_test.tar.gz"
expect_fail 1 "training.tar.gz: SHA-256" "$script" multi30k "$tmp/a" --from "$arch"
expect_fail 2 "unknown corpus 'europarl'" "$script" europarl "$tmp/a"
expect_fail 2 "usage" "$script" multi30k
expect_fail 1 "is not a directory" "$script" multi30k "$tmp/a" --from "$tmp/nowhere"

[[ $failures -eq 0 ]] || { echo "$failures check(s) failed"; exit 1; }
