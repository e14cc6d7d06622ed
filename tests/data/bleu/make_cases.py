#!/usr/bin/env python3
"""Writes the BLEU test cases and sacreBLEU's numbers for them.

Run from anywhere: python3 make_cases.py [path/to/val.de]
Needs `pip install sacrebleu` (2.x). The outputs (<case>.hyp, <case>.ref,
expected.tsv) are committed, so the C test (tests/host/test_bleu.c) needs no
Python. Each .hyp/.ref line ends with '\\n'; lines may hold other whitespace
(tab, CR, NBSP, U+2028 ...), which sacreBLEU splits on like str.split().
expected.tsv columns: case, lines, score, p1..p4, bp, hyp_len, ref_len,
correct (c1,c2,c3,c4), total (t1,...), str(score); floats as repr().
"""
import os
import random
import sys

import sacrebleu
from sacrebleu.metrics import BLEU

HERE = os.path.dirname(os.path.abspath(__file__))


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


def main():
    val = sys.argv[1] if len(sys.argv) > 1 else "/work/shared/data/multi30k/val.de"
    rows = []
    for name, (hyps, refs) in cases(val).items():
        assert len(hyps) == len(refs)
        for side, lines in (("hyp", hyps), ("ref", refs)):
            assert all("\n" not in line for line in lines)
            with open(os.path.join(HERE, f"{name}.{side}"), "w", encoding="utf-8", newline="") as f:
                f.write("".join(line + "\n" for line in lines))
        s = BLEU(tokenize="none").corpus_score(hyps, [refs])
        cols = [name, str(len(hyps)), repr(s.score)] + [repr(float(p)) for p in s.precisions]
        cols += [repr(s.bp), str(s.sys_len), str(s.ref_len)]
        cols += [",".join(str(int(x)) for x in s.counts), ",".join(str(int(x)) for x in s.totals)]
        cols.append(str(s))
        rows.append("\t".join(cols))
    with open(os.path.join(HERE, "expected.tsv"), "w", encoding="utf-8") as f:
        f.write(f"# sacreBLEU {sacrebleu.__version__}, BLEU(tokenize='none') defaults; see make_cases.py\n")
        f.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
