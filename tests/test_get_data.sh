#!/usr/bin/env bash
# tools/get-data.sh with local files (--from), no network, on a made-up copy
# of Multi30k's tokenised files (the right names and line counts; their
# SHA-256 sums given through GET_DATA_SHA256), so that the test needs no
# data set and no other file can change what it sees:
# 1. tokenised files alone: DIR/ gets them byte for byte (their SHA-256 checked),
#    no raw/, and a note that says what --from expects for it;
# 2. with raw files beside them (NAME.LANG.gz or raw/NAME.LANG): DIR/raw/ too;
#    a second run gives the same files;
# 3. errors, each exit 1 or 2 with one clear line and the earlier outputs intact:
#    a tokenised file with one byte changed (SHA-256), a raw file with a line
#    missing, a missing file, --from not a directory, an unknown corpus, no DIR.
# 4. tinyshakespeare --from FILE or DIR on a made-up text: input.txt as given,
#    train.txt its first int(n * 0.9) characters, val.txt the rest; a damaged
#    copy (SHA-256) is refused with the earlier outputs intact. With the real
#    input.txt at hand (TINYSHAKESPEARE_INPUT), the published sums of the text
#    and of nanoGPT's split (made by Python's d[:int(n*0.9)]) must hold.
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
    if [[ $rc -eq $want && "$err" == *"$needle"* && $(printf '%s\n' "$err" | wc -l) -eq 1 ]]; then
        echo "ok   exit $want: $needle"
    else
        echo "FAIL expected exit $want and one line with '$needle', got $rc: $err"
        failures=$((failures + 1))
    fi
}
files=(train.en train.de val.en val.de test_2016_flickr.en test_2016_flickr.de)

# the fixture: Multi30k's line counts, made-up lower-case sentences
shared="$tmp/multi30k"
mkdir -p "$shared"
declare -A lines=([train]=29000 [val]=1014 [test_2016_flickr]=1000)
for f in "${files[@]}"; do
    n=${lines[${f%.*}]}
    awk -v n="$n" -v l="${f##*.}" 'BEGIN { for (i = 1; i <= n; i++)
        printf "a %s sentence number %d of %d .\n", l, i, n }' > "$shared/$f"
done
(cd "$shared" && sha256sum "${files[@]}") > "$tmp/sums"
export GET_DATA_SHA256="$tmp/sums"

# 1. tokenised files only
out="$tmp/out"
note=$("$script" multi30k "$out" --from "$shared" 2>&1 >/dev/null)
check "runs with --from on the tokenised files" [ $? -eq 0 ]
for f in "${files[@]}"; do check "$f copied" cmp -s "$shared/$f" "$out/$f"; done
check "no raw/ without raw files" [ ! -e "$out/raw" ]
check "a note says what --from needs for raw/" grep -q "raw/NAME.LANG or NAME.LANG.gz" <<< "$note"

# 2. with raw files (any text with the right line counts stands for them)
src="$tmp/src"
mkdir -p "$src/raw"
for f in "${files[@]}"; do
    ln -s "$shared/$f" "$src/$f"
    sed 's/^./\U&/' "$shared/$f" > "$src/raw/$f"
done
gzip -c "$src/raw/val.de" > "$src/val.de.gz" && rm "$src/raw/val.de"
check "runs with raw files" "$script" multi30k "$out" --from "$src"
for f in "${files[@]}"; do check "raw/$f" cmp -s <(sed 's/^./\U&/' "$shared/$f") "$out/raw/$f"; done
check "a second run" "$script" multi30k "$out" --from "$src"
check "gives the same files" cmp -s "$shared/train.de" "$out/train.de"
check "no temporary left" [ -z "$(ls -A "$out" | grep '^\.get-data')" ]

# 3. errors
bad="$tmp/bad"
mkdir -p "$bad"
for f in "${files[@]}"; do cp "$shared/$f" "$bad/$f"; done
sed -i '5s/a/b/' "$bad/val.en"
expect_fail 1 "val.en: SHA-256" "$script" multi30k "$out" --from "$bad"
cp "$shared/val.en" "$bad/val.en"
head -n 999 "$shared/test_2016_flickr.de" > "$bad/test_2016_flickr.de.gz.txt"
gzip -c "$bad/test_2016_flickr.de.gz.txt" > "$bad/test_2016_flickr.de.gz"
expect_fail 1 "raw/test_2016_flickr.de has 999 lines" "$script" multi30k "$out" --from "$bad"
rm "$bad/train.de"
expect_fail 1 "has no train.de" "$script" multi30k "$out" --from "$bad"
check "earlier outputs intact" cmp -s "$shared/train.de" "$out/train.de"
check "earlier raw/ intact" cmp -s <(sed 's/^./\U&/' "$shared/val.de") "$out/raw/val.de"
expect_fail 1 "is not a directory" "$script" multi30k "$tmp/a" --from "$tmp/nowhere"
expect_fail 2 "unknown corpus 'europarl'" "$script" europarl "$tmp/a"
expect_fail 2 "usage" "$script" multi30k

# 4. tinyshakespeare: 12,345 characters of made-up text (not a multiple of 10)
ts="$tmp/ts-src"
mkdir -p "$ts"
awk 'BEGIN { s = ""; for (i = 0; length(s) < 12345; i++) s = s "line " i " of a play\n";
             printf "%s", substr(s, 1, 12345) }' > "$ts/input.txt"
n_train=$(awk 'BEGIN { print int(12345 * 0.9) }')
head -c "$n_train" "$ts/input.txt" > "$tmp/want-train.txt"
tail -c +"$((n_train + 1))" "$ts/input.txt" > "$tmp/want-val.txt"
check "the fixture splits into two non-empty parts" [ -s "$tmp/want-train.txt" -a -s "$tmp/want-val.txt" ]
(cd "$ts" && sha256sum input.txt && cd "$tmp" && sha256sum want-train.txt want-val.txt |
     sed 's/want-//') > "$tmp/ts-sums"
lm="$tmp/lm"
GET_DATA_SHA256="$tmp/ts-sums" "$script" tinyshakespeare "$lm" --from "$ts/input.txt" > /dev/null
check "tinyshakespeare --from FILE runs" [ $? -eq 0 ]
check "input.txt as given" cmp -s "$ts/input.txt" "$lm/input.txt"
check "train.txt: the first int(n * 0.9) characters" cmp -s "$tmp/want-train.txt" "$lm/train.txt"
check "val.txt: the rest" cmp -s "$tmp/want-val.txt" "$lm/val.txt"
check "train.txt then val.txt is input.txt" cmp -s <(cat "$lm/train.txt" "$lm/val.txt") "$ts/input.txt"
check "tinyshakespeare --from DIR runs" env GET_DATA_SHA256="$tmp/ts-sums" "$script" tinyshakespeare "$lm" --from "$ts"
sed '3s/line/lime/' "$ts/input.txt" > "$tmp/damaged.txt"
expect_fail 1 "input.txt: SHA-256" env GET_DATA_SHA256="$tmp/ts-sums" "$script" tinyshakespeare "$lm" --from "$tmp/damaged.txt"
check "earlier outputs intact" cmp -s "$tmp/want-train.txt" "$lm/train.txt"
expect_fail 1 "neither a file nor a directory holding input.txt" "$script" tinyshakespeare "$lm" --from "$tmp/nowhere"
check "no temporary left" [ -z "$(ls -A "$lm" | grep '^\.get-data')" ]
if [[ -n "${TINYSHAKESPEARE_INPUT:-}" && -f "${TINYSHAKESPEARE_INPUT}" ]]; then
    real="$tmp/real"
    check "the real input.txt and nanoGPT's split match their published SHA-256" \
        env -u GET_DATA_SHA256 "$script" tinyshakespeare "$real" --from "$TINYSHAKESPEARE_INPUT"
    check "train.txt holds 1,003,854 characters" [ "$(wc -c < "$real/train.txt")" -eq 1003854 ]
else
    echo "note: TINYSHAKESPEARE_INPUT not set: the published sums were not checked on the real text"
fi

[[ $failures -eq 0 ]] || { echo "$failures check(s) failed"; exit 1; }
