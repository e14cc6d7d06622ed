#!/usr/bin/env python3
"""Writes a synthetic parallel corpus the size of a real one, to measure how
clformer loads large corpora (time and memory) without downloading one.

    tools/synthetic-corpus.py --pairs 4500000 --out /tmp/wmt  # /tmp/wmt.src, /tmp/wmt.tgt

Sentence lengths are uniform in [--min-len, --max-len] words (WMT14 En-De
averages about 25 words a sentence); words come from a Zipf-distributed
vocabulary of --vocab types per side, like natural text, so building the
vocabulary and counting frequencies costs what it costs on real text. The
target is a different vocabulary of the same shape. Deterministic for a seed.
Only the Python standard library is needed.
"""
import argparse
import itertools
import random


def vocabulary(prefix, size):
    return [f"{prefix}{i}" for i in range(size)]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pairs", type=int, required=True, help="sentence pairs to write")
    p.add_argument("--out", required=True, help="writes OUT.src and OUT.tgt")
    p.add_argument("--vocab", type=int, default=200000, help="word types per side")
    p.add_argument("--min-len", type=int, default=5)
    p.add_argument("--max-len", type=int, default=45)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    if a.pairs < 1 or a.vocab < 1 or not 1 <= a.min_len <= a.max_len:
        p.error("need --pairs >= 1, --vocab >= 1 and 1 <= --min-len <= --max-len")
    rng = random.Random(a.seed)
    # Zipf weights 1/rank, accumulated once: random.choices bisects them
    cum = list(itertools.accumulate(1.0 / r for r in range(1, a.vocab + 1)))
    words = {side: vocabulary(side, a.vocab) for side in ("s", "t")}
    chunk = 10000
    with open(a.out + ".src", "w") as src, open(a.out + ".tgt", "w") as tgt:
        for start in range(0, a.pairs, chunk):
            n = min(chunk, a.pairs - start)
            for f, side in ((src, "s"), (tgt, "t")):
                lens = [rng.randint(a.min_len, a.max_len) for _ in range(n)]
                flat = rng.choices(words[side], cum_weights=cum, k=sum(lens))
                lines, at = [], 0
                for k in lens:
                    lines.append(" ".join(flat[at:at + k]))
                    at += k
                f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
