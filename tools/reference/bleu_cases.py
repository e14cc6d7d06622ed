#!/usr/bin/env python3
"""Writes the BLEU test cases in tests/data/bleu and sacreBLEU's numbers for them.

Run from anywhere: python3 tools/reference/bleu_cases.py VAL_DE DATA
(VAL_DE: Multi30k's tokenised val.de, as `tools/get-data.sh multi30k DIR` writes it;
DATA: a folder holding multi30k/ (the tokenised files) and multi30k-raw/ (the
upstream data/task1/raw/*.gz)).
Needs `pip install sacrebleu` (2.x). The outputs are committed, so the C tests
(tests/host/test_bleu.c, test_cmd_eval.c) need no Python:
- <case>.hyp, <case>.ref: one sentence per line, each ending with '\\n'; lines
  may hold other whitespace (tab, CR, NBSP, U+2028 ...), which sacreBLEU
  splits on like str.split();
- expected.tsv: every case scored with BLEU(tokenize='none') (tokenised text);
- expected_13a.tsv: every case scored with BLEU() (tokenize='13a', the
  default, for detokenised text), including the raw-text cases;
- expected_lc.tsv, expected_lc_none.tsv: lower-cased BLEU (`sacrebleu -lc`,
  BLEU(lowercase=True)) with 13a on every case, and with 'none' on the
  tokenised cases and the cased ones (lower-case output against cased
  references: German, Greek final sigma, Cyrillic, U+0130, and 300 lines of
  the raw test_2016_flickr.de against its tokenised lower-cased twin);
- tok13a.jsonl: {"in": line, "out": sacreBLEU's 13a tokenisation of
  line.rstrip()} for every line of every case and a few lines no file can
  hold (with '\\n').
TSV columns: case, lines, score, p1..p4, bp, hyp_len, ref_len,
correct (c1,c2,c3,c4), total (t1,...), str(score); floats as repr().
"""
import gzip
import json
import os
import random
import re
import sys

import sacrebleu
from sacrebleu.metrics import BLEU
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data", "bleu")


def perturb(line, rng):
    words = line.split()
    kind = rng.randrange(8)
    if kind == 0 and len(words) > 1:      # drop a word
        del words[rng.randrange(len(words))]
    elif kind == 1 and len(words) > 1:    # swap neighbours
        i = rng.randrange(len(words) - 1)
        words[i], words[i + 1] = words[i + 1], words[i]
    elif kind == 2:                       # replace a word
        words[rng.randrange(len(words))] = rng.choice(["haus", "mann", "frau", "hund", "xyz"])
    elif kind == 3:                       # repeat a word (tests clipping)
        i = rng.randrange(len(words))
        words.insert(i, words[i])
    elif kind == 4:                       # truncate (brevity)
        words = words[: max(1, len(words) // 2)]
    elif kind == 5 and rng.random() < 0.1:
        words = []                        # an empty hypothesis
    return " ".join(words)                # kinds 6, 7: unchanged


def detokenise(line):
    """A plain detokeniser for the raw-text cases: punctuation back against
    its word, the first letter capitalised (not sacreBLEU's business; any
    realistic raw text will do)."""
    line = re.sub(r" ([.,!?:;])", r"\1", line)
    line = re.sub(r"\( ", "(", line)
    line = re.sub(r" \)", ")", line)
    line = re.sub(r'" (.*?) "', r'"\1"', line)
    return line[:1].upper() + line[1:]


def raw_cases(val_path):
    """Detokenised text with punctuation, numbers, entities and Unicode:
    where 13a and 'none' differ."""
    c = {}
    c["punct"] = (
        ["Hello, world! (It's \"fine\"): yes; no? [a] {b} <c> a/b a|b ~x^ `q` @home #1 $5 %",
         "Well-known e-mail: john.doe@example.com, isn't it?",
         "a.. b,, c.,d ,.e x.y,z ... ,,,"],
        ["Hello world! (It is \"fine\"): yes; no? [a] {b} <c> a / b a | b ~x ^ `q` @home # 1 $ 5 %",
         "Well known e-mail: john.doe@example.com , isn't it ?",
         "a. b, c. d, e x. y, z ..."],
    )
    c["numbers"] = (
        ["It costs 3.50 euros, or 1,000.5 cents.", "Pages 5-7 and 10 - 12, 1-2-3.",
         "3. .5 5, ,5 a5.b 5.a 2026-11-24", "-5 --5 5--"],
        ["It costs 3.50 euros , or 1,000.5 cents .", "Pages 5 - 7 and 10-12, 1 - 2 - 3.",
         "3 . .5 5 , ,5 a5 . b 5 . a 2026 - 11 - 24", "- 5 -- 5 5 --"],
    )
    c["entities"] = (
        ["&quot;Hi&quot; &amp; &lt;b&gt;", "&amp;quot; &amp;amp; &quot &#39;", "<skipped> a <skipped>b",
         "AT&T &lt;&gt;"],
        ['"Hi" & <b>', '&quot; &amp; &quot &#39;', "a b", "AT & T <>"],
    )
    c["unicode"] = (
        ["Größe: „Hallo“ – sagte er…", "Café, naïve. Ça va?", "日本語。テスト、です.",
         "€5.00 für 2½ Äpfel! 🙂.", "Ein Mann\u00a0. Eine Frau\u3000,"],
        ["Größe : „Hallo“ - sagte er ...", "Café , naïve . Ça va ?", "日本語。テスト、です.",
         "€5.00 für 2½ Äpfel ! 🙂 .", "Ein Mann. Eine Frau,"],
    )
    c["trailing"] = (
        ["word .  \t", "   leading spaces.", "", "mid\tdle,\r", "x.\u2028"],
        ["word.", "leading spaces .", "", "mid dle ,", "x ."],
    )
    with open(val_path, encoding="utf-8") as f:
        refs = [detokenise(line.rstrip("\n")) for line in f][:300]
    rng = random.Random(20261124)
    c["val300_raw"] = ([detokenise(perturb(r.lower(), rng)) for r in refs], refs)
    return c


def cased_cases(data):
    """Lower-case hypotheses against cased references, for lower-cased BLEU."""
    c = {}
    c["cased"] = (
        ["ein mann fährt über die straße.", "ößen äpfel übel ß", "οδος σας σ.",
         "привет, мир! ёлка", "i\u0307stanbul ist groß", "der kelvin k", "Mixed Case STAYS"],
        ["Ein Mann FÄHRT über die Straße.", "ÖSSEN Äpfel ÜBEL ẞ", "ΟΔΟΣ ΣΑΣ Σ.",
         "ПРИВЕТ, мир! Ёлка", "İstanbul ist GROSS", "der Kelvin \u212a", "mixed case stays"],
    )
    with gzip.open(os.path.join(data, "multi30k-raw", "test_2016_flickr.de.gz"), "rt",
                   encoding="utf-8") as f:
        refs = [line.rstrip("\n") for line in f][:300]
    with open(os.path.join(data, "multi30k", "test_2016_flickr.de"), encoding="utf-8") as f:
        tok = [line.rstrip("\n") for line in f][:300]
    rng = random.Random(20261126)
    c["test300_lc"] = ([perturb(t, rng) for t in tok], refs)
    return c


def cases(val_path):
    c = {}
    c["single"] = (["ein mann fährt fahrrad ."], ["ein mann fährt ein fahrrad ."])
    c["identical"] = (["a b c d e", "f g h i"], ["a b c d e", "f g h i"])
    c["empty_hyps"] = (["", "", ""], ["ein hund", "zwei katzen spielen", "x"])
    c["empty_both"] = (["", ""], ["", ""])
    c["empty_refs"] = (["ein hund", "zwei"], ["", ""])
    c["no_match"] = (["a b c d e"], ["f g h i j"])
    # hypotheses shorter than 4 tokens: no 4-grams at all (precision loop stops)
    c["short"] = (["a b", "c", "d e f"], ["a b", "c x", "d e f g"])
    # unigram and bigram matches only: 'exp' smoothing for orders 3 and 4
    c["zero_3_4"] = (["a b x c d y e f"], ["a b c d e f g h"])
    # matches up to trigrams, none for 4-grams
    c["zero_4"] = (["a b c x d e f y g"], ["a b c d e f g h i"])
    c["clipping"] = (["the the the the the the", "cat cat on on"], ["the cat is on the mat", "cat on the mat"])
    c["longer_hyp"] = (["ein mann mit einem hut und einer brille steht hier .", "a b c d e f"],
                       ["ein mann mit einem hut steht .", "a b c d"])
    c["whitespace"] = (
        ["ein\tmann\u00a0fährt\u3000ein  rad\r", " \x1cvor\u2028dem\u2009haus\x85. ", "a\u200bb c"],
        ["ein mann fährt ein rad", "vor dem haus .", "a\u200bb c"],
    )
    c["mixed"] = (["", "ein hund läuft", "zwei", "drei vier fünf sechs sieben"],
                  ["eine katze", "", "zwei", "drei vier fünf sechs acht"])
    with open(val_path, encoding="utf-8") as f:
        refs = [line.rstrip("\n") for line in f][:300]
    rng = random.Random(20240501)
    c["val300"] = ([perturb(r, rng) for r in refs], refs)
    return c


def score_row(name, hyps, refs, tokenize, lowercase=False):
    s = BLEU(tokenize=tokenize, lowercase=lowercase).corpus_score(hyps, [refs])
    cols = [name, str(len(hyps)), repr(s.score)] + [repr(float(p)) for p in s.precisions]
    cols += [repr(s.bp), str(s.sys_len), str(s.ref_len)]
    cols += [",".join(str(int(x)) for x in s.counts), ",".join(str(int(x)) for x in s.totals)]
    cols.append(str(s))
    return "\t".join(cols)


def write_tsv(name, tokenize, rows, lowercase=False):
    with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
        lc = ", lowercase=True" if lowercase else ""
        f.write(f"# sacreBLEU {sacrebleu.__version__}, BLEU(tokenize='{tokenize}'{lc}) defaults; "
                "see tools/reference/bleu_cases.py\n")
        f.write("\n".join(rows) + "\n")


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: bleu_cases.py VAL_DE DATA (see the docstring)")
    val, data = sys.argv[1], sys.argv[2]
    tokenised, raw, cased = cases(val), raw_cases(val), cased_cases(data)
    rows_none, rows_13a, lines_13a = [], [], []
    rows_lc, rows_lc_none = [], []
    for name, (hyps, refs) in {**tokenised, **raw, **cased}.items():
        assert len(hyps) == len(refs)
        for side, lines in (("hyp", hyps), ("ref", refs)):
            assert all("\n" not in line for line in lines)
            with open(os.path.join(HERE, f"{name}.{side}"), "w", encoding="utf-8", newline="") as f:
                f.write("".join(line + "\n" for line in lines))
            lines_13a += lines
        if name in tokenised:
            rows_none.append(score_row(name, hyps, refs, "none"))
        if name not in cased:
            rows_13a.append(score_row(name, hyps, refs, "13a"))
        if name not in raw:
            rows_lc_none.append(score_row(name, hyps, refs, "none", True))
        rows_lc.append(score_row(name, hyps, refs, "13a", True))
    write_tsv("expected.tsv", "none", rows_none)
    write_tsv("expected_13a.tsv", "13a", rows_13a)
    write_tsv("expected_lc.tsv", "13a", rows_lc, True)
    write_tsv("expected_lc_none.tsv", "none", rows_lc_none, True)
    # lines no file can hold: '-\n' joins, other '\n' are spaces
    lines_13a += ["rock-\nand roll", "two\nlines", "a -\n\n b", "end-\n"]
    tok = Tokenizer13a()
    with open(os.path.join(HERE, "tok13a.jsonl"), "w", encoding="utf-8") as f:
        for line in dict.fromkeys(lines_13a):
            f.write(json.dumps({"in": line, "out": tok(line.rstrip())}, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
