#!/usr/bin/env bash
# Fetches a public corpus and prepares it for clformer.
#
#   tools/get-data.sh multi30k DIR [--from SRC]
#   tools/get-data.sh wmt14-en-de DIR [--from SRC]
#   tools/get-data.sh tinyshakespeare DIR [--from FILE]
#
# tinyshakespeare (a language model's text): DIR/input.txt, the 1,115,394
#   characters of karpathy/char-rnn's data/tinyshakespeare/input.txt (the file
#   nanoGPT's shakespeare_char downloads), and nanoGPT's split of it:
#   DIR/train.txt its first 90% of characters (int(n * 0.9)), DIR/val.txt the
#   rest; all three checked against their SHA-256. --from FILE takes a local
#   copy of input.txt (or a directory holding one) instead of downloading.
#
# For the two parallel corpora, DIR gets, for each split, NAME.en and NAME.de (one
# sentence per line):
#   DIR/NAME.{en,de}      lower-cased and tokenised: for the word-level vocabulary and
#                         `clformer eval --tokenize none` (docs/RESULTS.md's word-level runs)
#   DIR/raw/NAME.{en,de}  the text as published (cased, detokenised): for SentencePiece
#                         (clformer train --tokenizer spm) and sacreBLEU's 13a (clformer eval)
#
# multi30k: splits train (29,000 pairs), val (1,014), test_2016_flickr (1,000) from
#   github.com/multi30k/dataset, data/task1: tok/NAME.lc.norm.tok.LANG (checked
#   against their SHA-256) and raw/NAME.LANG.gz (checked by line count).
# wmt14-en-de: splits train (4,468,840), newstest2013 (3,000), newstest2014 (2,737)
#   from nlp.stanford.edu/projects/nmt (checked by line count). Those files are
#   already tokenised (cased), so raw/ holds them as published and DIR/ lower-cased.
#
# Online, the files are downloaded into DIR/download. --from SRC takes local copies
# instead (no network); SRC holds, for each split and language, the tokenised file
# as NAME.LANG (or under its upstream name) and, optionally, the raw one as
# raw/NAME.LANG or NAME.LANG.gz. Without raw files, only DIR/ is prepared (a
# note says so). Every output is written under a temporary name and renamed, so
# an interrupted run leaves no half-written file. Exit status: 0 done, 1 failure,
# 2 usage.
set -euo pipefail

usage() {
    echo "usage: tools/get-data.sh multi30k|wmt14-en-de|tinyshakespeare DIR [--from SRC]" \
         "  (--help: more)" >&2
    exit 2
}
fail() {
    echo "get-data.sh: error: $*" >&2
    exit 1
}

corpus="" dir="" from=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        --from) [[ $# -ge 2 ]] || usage; from="$2"; shift 2 ;;
        --from=*) from="${1#--from=}"; shift ;;
        -*) echo "get-data.sh: error: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) if [[ -z "$corpus" ]]; then corpus="$1"; elif [[ -z "$dir" ]]; then dir="$1"; else usage; fi
           shift ;;
    esac
done
[[ -n "$corpus" && -n "$dir" ]] || usage

# tokenised file: upstream path | SHA-256 (empty: none published)
declare -A sha=()
case "$corpus" in
    multi30k)
        splits=(train:29000 val:1014 test_2016_flickr:1000)
        base=https://raw.githubusercontent.com/multi30k/dataset/master/data/task1
        tok_path() { echo "tok/$1.lc.norm.tok.$2"; }
        raw_path() { echo "raw/$1.$2.gz"; }
        sha=([train.en]=08925f8e0572bcd5a006702fc5fe20e2d77c6917d4eebd576fc20de6693c2119
             [train.de]=cb5a23529b65ec2061f1dc446192a9c37382b63cc75f81a0be59d34894b3a505
             [val.en]=46573ce391ae227f1c72f873392436a20ef18e0a6d518098cfbd70b77c8572ec
             [val.de]=97232bd273eceb7207f689527386a97e4be2616b18ada47576bdaf96c8ae1f00
             [test_2016_flickr.en]=5b7f32627cf99eced828311b955dae9800bb52bc8b91cf8b6526829e605b29d2
             [test_2016_flickr.de]=c6a33d39d48f9f510de147651316cd9d918e09ad0219df734a2f16b6baccacc4) ;;
    wmt14-en-de)
        splits=(train:4468840 newstest2013:3000 newstest2014:2737)
        base=https://nlp.stanford.edu/projects/nmt/data/wmt14.en-de
        tok_path() { echo "$1.$2"; }
        raw_path() { echo ""; } ;;  # the published files are the raw/ copies
    tinyshakespeare) ;;
    *) echo "get-data.sh: error: unknown corpus '$corpus': use multi30k, wmt14-en-de or" \
            "tinyshakespeare" >&2
       exit 2 ;;
esac
# GET_DATA_SHA256=FILE (sha256sum's "HASH  NAME.LANG" lines) replaces the
# published sums: tests/test_get_data.sh checks the script on files it makes
if [[ -n "${GET_DATA_SHA256:-}" ]]; then
    sha=()
    while read -r h n; do [[ -n "$h" ]] && sha[$n]=$h; done < "$GET_DATA_SHA256" ||
        fail "cannot read GET_DATA_SHA256=$GET_DATA_SHA256"
fi

# A language model's text: one file and its 90/10 split
if [[ "$corpus" == tinyshakespeare ]]; then
    url=https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt
    if [[ -z "${GET_DATA_SHA256:-}" ]]; then
        sha=([input.txt]=86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed
             [train.txt]=a9e24e23a1ec77744dad26844bfd5a09b6e041954e1eef0000e7f24cba6db735
             [val.txt]=c54f3753a4e6e3c3d1759212815a7caf826e68a33021b25312984400bed40a1f)
    fi
    mkdir -p "$dir" || fail "cannot create $dir"
    work="$dir/.get-data.$$"
    trap 'rm -rf "$work"' EXIT
    mkdir -p "$work"
    if [[ -z "$from" ]]; then
        echo "downloading $url" >&2
        curl -fsSL --retry 3 -o "$work/input.txt" "$url" ||
            fail "could not download $url (offline? use --from FILE with a local copy)"
    elif [[ -f "$from" ]]; then
        cat "$from" > "$work/input.txt" || fail "cannot read $from"
    elif [[ -f "$from/input.txt" ]]; then
        cat "$from/input.txt" > "$work/input.txt" || fail "cannot read $from/input.txt"
    else
        fail "--from $from is neither a file nor a directory holding input.txt"
    fi
    # nanoGPT's prepare.py: train_data = data[:int(n*0.9)], val_data the rest
    # (characters; the file is ASCII, so bytes)
    n=$(wc -c < "$work/input.txt")
    head -c $((n * 9 / 10)) "$work/input.txt" > "$work/train.txt"
    tail -c +$((n * 9 / 10 + 1)) "$work/input.txt" > "$work/val.txt"
    for f in input.txt train.txt val.txt; do
        sum="${sha[$f]:-}"
        if [[ -n "$sum" ]] && ! echo "$sum  $work/$f" | sha256sum --check --status; then
            fail "$f: SHA-256 is $(sha256sum "$work/$f" | cut -d' ' -f1), expected $sum" \
                 "(a damaged or different copy of Tiny Shakespeare's input.txt)"
        fi
    done
    for f in input.txt train.txt val.txt; do mv -f "$work/$f" "$dir/$f"; done
    echo "tinyshakespeare: $dir/input.txt ($n characters), train.txt (first 90%)," \
         "val.txt (last 10%)"
    exit 0
fi
if [[ -n "$from" && ! -d "$from" ]]; then fail "--from $from is not a directory"; fi

mkdir -p "$dir" || fail "cannot create $dir"
work="$dir/.get-data.$$"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/raw"

download() {  # upstream path -> $dir/download/<path>, echoes the local path
    local out="$dir/download/$1"
    if [[ ! -f "$out" ]]; then
        mkdir -p "$(dirname "$out")"
        echo "downloading $base/$1" >&2
        curl -fsSL --retry 3 -o "$out.part" "$base/$1" ||
            fail "could not download $base/$1 (offline? use --from SRC with local copies)"
        mv "$out.part" "$out"
    fi
    echo "$out"
}

first_file() {  # the first of the arguments that is a file, or nothing
    local f
    for f in "$@"; do [[ -f "$f" ]] && { echo "$f"; return; }; done
    true
}

have_raw=1
for s in "${splits[@]}"; do
    name="${s%%:*}" want="${s#*:}"
    for l in en de; do
        # the tokenised file
        if [[ -n "$from" ]]; then
            src=$(first_file "$from/$name.$l" "$from/$(tok_path "$name" "$l")" \
                             "$from/$(basename "$(tok_path "$name" "$l")")")
            [[ -n "$src" ]] || fail "$from has no $name.$l: --from needs the tokenised files" \
                                    "NAME.LANG for ${splits[*]%%:*} (raw ones optional)"
        else
            src=$(download "$(tok_path "$name" "$l")")
        fi
        sum="${sha[$name.$l]:-}"
        if [[ -n "$sum" ]] && ! echo "$sum  $src" | sha256sum --check --status; then
            fail "$src: SHA-256 is $(sha256sum "$src" | cut -d' ' -f1), expected $sum" \
                 "(a damaged or different copy of $corpus's $name.$l)"
        fi
        # the raw file
        raw=""
        if [[ "$corpus" == wmt14-en-de ]]; then
            raw="$src"
        elif [[ -n "$from" ]]; then
            raw=$(first_file "$from/raw/$name.$l" "$from/$name.$l.gz" "$from/raw/$name.$l.gz")
        else
            raw=$(download "$(raw_path "$name" "$l")")
        fi
        if [[ -z "$raw" ]]; then
            have_raw=0
        elif [[ "$raw" == *.gz ]]; then
            gzip -dc "$raw" > "$work/raw/$name.$l" || fail "$raw is not a gzip file"
        else
            cp "$raw" "$work/raw/$name.$l"
        fi
        if [[ "$corpus" == wmt14-en-de ]]; then
            perl -CSD -pe '$_ = lc' "$src" > "$work/$name.$l"
        else
            cp "$src" "$work/$name.$l"
        fi
        for f in "$work/$name.$l" ${raw:+"$work/raw/$name.$l"}; do
            got=$(wc -l < "$f")
            [[ "$got" -eq "$want" ]] ||
                fail "${f#$work/} has $got lines, $corpus's $name has $want (a different or" \
                     "damaged copy)"
        done
    done
done

# into place (a rename per file), only once everything is checked
[[ $have_raw -eq 1 ]] && mkdir -p "$dir/raw"
for s in "${splits[@]}"; do
    for l in en de; do
        mv -f "$work/${s%%:*}.$l" "$dir/${s%%:*}.$l"
        [[ $have_raw -eq 0 ]] || mv -f "$work/raw/${s%%:*}.$l" "$dir/raw/${s%%:*}.$l"
    done
done
echo "$corpus: ${splits[*]%%:*} in $dir (tokenised, lower-cased)" \
     "$([[ $have_raw -eq 1 ]] && echo "and $dir/raw (as published)")"
[[ $have_raw -eq 1 ]] ||
    echo "note: $from has no raw files (raw/NAME.LANG or NAME.LANG.gz): $dir/raw not prepared" >&2
