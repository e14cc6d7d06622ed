#!/usr/bin/env bash
# Fetches a public parallel corpus and prepares it for clformer.
#
#   tools/get-data.sh multi30k DIR [--from SRC]
#   tools/get-data.sh wmt14-en-de DIR [--from SRC]
#
# DIR gets, for each split, NAME.en and NAME.de, one sentence per line:
#   DIR/raw/   the text as published (cased, detokenised): for SentencePiece
#              (clformer train --tokenizer spm) and sacreBLEU's 13a (clformer eval)
#   DIR/       lower-cased, punctuation split off by whitespace: for the word-level
#              vocabulary and `clformer eval --tokenize none` (the README's commands)
# multi30k splits: train (29,000 pairs), val (1,014), test_2016_flickr (1,000).
# wmt14-en-de splits: train (4,468,840), newstest2013 (3,000), newstest2014 (2,737):
# Stanford NLP's copies, which are already Moses-tokenised, so raw/ holds them as
# published (tokenised, cased).
#
# Online, the archives/files are downloaded into DIR/download and checked: the
# Multi30k archives against their SHA-256, every split against its line count.
# --from SRC uses local copies instead (no network): SRC holds either those
# downloads (Multi30k: training.tar.gz validation.tar.gz mmt16_task1_test.tar.gz;
# WMT14: the files listed below), or the plain split files NAME.en and NAME.de
# (checked by line count; the tokenised copy of an already tokenised file is the
# file lower-cased).
# Outputs are written under a temporary name and renamed, so an interrupted run
# leaves no half-written file. Exit status: 0 done, 1 failure, 2 usage.
set -euo pipefail

usage() {
    echo "usage: tools/get-data.sh multi30k|wmt14-en-de DIR [--from SRC]   (--help: more)" >&2
    exit 2
}
fail() {
    echo "get-data.sh: error: $*" >&2
    exit 1
}

corpus="" dir="" from=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        -h|--help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        --from) [[ $# -ge 2 ]] || usage; from="$2"; shift 2 ;;
        --from=*) from="${1#--from=}"; shift ;;
        -*) echo "get-data.sh: error: unknown option $1" >&2; usage ;;
        *) if [[ -z "$corpus" ]]; then corpus="$1"; elif [[ -z "$dir" ]]; then dir="$1"; else usage; fi
           shift ;;
    esac
done
[[ -n "$corpus" && -n "$dir" ]] || usage

# split name, line count; archive name, SHA-256 (empty: none published)
case "$corpus" in
    multi30k)
        splits=(train:29000 val:1014 test_2016_flickr:1000)
        base=https://raw.githubusercontent.com/neychev/small_DL_repo/master/datasets/Multi30k
        archives=(training.tar.gz:20140d013d05dd9a72dfde46478663ba05737ce983f478f960c1123c6671be5e
                  validation.tar.gz:a7aa20e9ebd5ba5adce7909498b94410996040857154dab029851af3a866da8c
                  mmt16_task1_test.tar.gz:6d1ca1dba99e2c5dd54cae1226ff11c2551e6ce63527ebb072a1f70f72a5cd36)
        # names inside the archives -> split names
        renames=(train:train val:val test:test_2016_flickr) ;;
    wmt14-en-de)
        splits=(train:4468840 newstest2013:3000 newstest2014:2737)
        base=https://nlp.stanford.edu/projects/nmt/data/wmt14.en-de
        archives=(train.en: train.de: newstest2013.en: newstest2013.de: newstest2014.en:
                  newstest2014.de:)
        renames=() ;;
    *) echo "get-data.sh: error: unknown corpus '$corpus': use multi30k or wmt14-en-de" >&2
       usage ;;
esac

mkdir -p "$dir/raw" || fail "cannot create $dir"
work="$dir/.get-data.$$"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/raw"

have_plain() {  # $1: a directory holding every split as NAME.en / NAME.de
    local s
    for s in "${splits[@]}"; do
        [[ -f "$1/${s%%:*}.en" && -f "$1/${s%%:*}.de" ]] || return 1
    done
}

fetch() {  # downloads or copies every archive into $1, checking SHA-256s
    local a name sum src
    mkdir -p "$1"
    for a in "${archives[@]}"; do
        [[ -z "$from" || -f "$from/${a%%:*}" ]] ||
            fail "$from/${a%%:*} is missing: --from needs ${archives[*]%%:*} (or the plain" \
                 "files NAME.en NAME.de for ${splits[*]%%:*})"
    done
    for a in "${archives[@]}"; do
        name="${a%%:*}" sum="${a#*:}"
        if [[ -n "$from" ]]; then
            cp "$from/$name" "$1/$name"
        elif [[ ! -f "$1/$name" ]]; then
            echo "downloading $base/$name" >&2
            curl -fL --retry 3 -o "$1/$name.part" "$base/$name" ||
                fail "could not download $base/$name (offline? use --from DIR with local copies)"
            mv "$1/$name.part" "$1/$name"
        fi
        if [[ -n "$sum" ]] && ! echo "$sum  $1/$name" | sha256sum --check --status; then
            fail "$name: SHA-256 is $(sha256sum "$1/$name" | cut -d' ' -f1), expected $sum" \
                 "(a damaged or different file: delete it and download again)"
        fi
    done
}

# 1. the raw split files into $work/raw
if [[ -n "$from" ]] && have_plain "$from"; then
    for s in "${splits[@]}"; do
        cp "$from/${s%%:*}.en" "$from/${s%%:*}.de" "$work/raw/"
    done
elif [[ -n "$from" && ! -d "$from" ]]; then
    fail "--from $from is not a directory"
else
    fetch "$dir/download"
    if [[ "$corpus" == multi30k ]]; then
        for a in "${archives[@]}"; do tar -xzf "$dir/download/${a%%:*}" -C "$work/raw"; done
        for r in "${renames[@]}"; do
            for l in en de; do
                [[ -f "$work/raw/${r%%:*}.$l" ]] || fail "the archives hold no ${r%%:*}.$l"
                [[ "${r%%:*}" == "${r#*:}" ]] || mv "$work/raw/${r%%:*}.$l" "$work/raw/${r#*:}.$l"
            done
        done
    else
        for s in "${splits[@]}"; do
            cp "$dir/download/${s%%:*}.en" "$dir/download/${s%%:*}.de" "$work/raw/"
        done
    fi
fi

# 2. line counts, then the tokenised copies
for s in "${splits[@]}"; do
    name="${s%%:*}" want="${s#*:}"
    for l in en de; do
        got=$(wc -l < "$work/raw/$name.$l")
        [[ "$got" -eq "$want" ]] ||
            fail "$name.$l has $got lines, $corpus's has $want (a different or damaged copy)"
        # lower-case; split off punctuation (. and , not between digits; an
        # entity such as Moses' &apos; stays whole), one space between tokens
        perl -CSD -pe '$_ = lc; s/([^0-9])([.,])/$1 $2 /g; s/([.,])([^0-9])/ $1 $2/g;
                       s/(&[a-z]+;)|([!?;:"()\[\]])/defined $1 ? $1 : " $2 "/ge;
                       s/[ \t]+/ /g; s/^ //; s/ $//' \
            "$work/raw/$name.$l" > "$work/$name.$l"
    done
done

# 3. into place (a rename per file)
for s in "${splits[@]}"; do
    for l in en de; do
        mv -f "$work/raw/${s%%:*}.$l" "$dir/raw/${s%%:*}.$l"
        mv -f "$work/${s%%:*}.$l" "$dir/${s%%:*}.$l"
    done
done
echo "$corpus: ${splits[*]%%:*} in $dir (tokenised, lower-cased) and $dir/raw (as published)"
