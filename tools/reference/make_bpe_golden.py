#!/usr/bin/env python3
"""Writes the golden files of GPT-2's byte-level BPE under tests/data/bpe/.

Trains a small ByteLevelBPE with Hugging Face `tokenizers` (no network) on a
few KB of Tiny Shakespeare plus hand-written edge cases, saves its vocab.json
and merges.txt, reloads the tokenizer from those two files the way a user of
GPT-2's files would, and writes the ids it gives for each test string to
cases.json. tests/host/test_tokenizer_bpe.c checks that clformer's encoder
(runtime/data/tokenizer_bpe.c) gives the same ids. Needs (in a venv):
    pip install tokenizers==0.15.2
Usage: python3 tools/reference/make_bpe_golden.py TINYSHAKESPEARE_INPUT [output-dir]
"""
import json
import os
import sys

import tokenizers
from tokenizers import ByteLevelBPETokenizer

# Strings the C test encodes; the edge cases are also in the training text so
# that merges over non-ASCII bytes exist.
EDGE_CASES = [
    "", " ", "  ", "\n", "\n\n\n", "a  b", "a \n b", "   leading", "trailing   ",
    "tab\there", "\t\t x", "a\r\nb\r\n", "\x0b\x0c\r", "x  \n\n  y",
    "I'm you're we've they'll he'd it's don't", "'s", "''s", "'S 'LL", "o'clock", " 'tis",
    "123 4567 3.14 x2 1,000,000", "\u0663\u0664\u0665 digits", "\u216b \u00bd \u00b2\u00b3",
    "na\u00efve caf\u00e9", "Gr\u00fc\u00dfe", "\u041f\u0440\u0438\u0432\u0435\u0442 \u043c\u0438\u0440",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8", "\ud55c\uad6d\uc5b4", "\u05e2\u05d1\u05e8\u05d9\u05ea",
    "\ufb01 ligature", "e\u0301 combining", "\u0915\u094d\u0937\u0924\u094d\u0930\u093f\u092f",
    "\U0001F600 \U0001F44D\U0001F3FD \U0001F468\u200d\U0001F469\u200d\U0001F467", "\U0001F1EB\U0001F1F7!",
    "a\u00a0b", "\u00a0", "a\u3000b", "x\u2028y", "a\u0085b", "a\x1cb", "a\u200bb", "a \u00a0 b",
    "\x00\x01 nul", "<|endoftext|>", "Hello, world!!! ...", "--==>> <<", " !?", "\u00ab\u00bb \u201cquoted\u201d",
    "a" * 300, "a" * 301, "aaa", " aaa", "eee ooo lll", "a" * 7 + " " + "e" * 9, "ab" * 120 + " " + "\u00e9" * 50, "MiXeD CaSe WORDS", "$%^&*()_+{}|:\"<>?",
    "(c) \u00a9 2024 \u00a9 \u00ab x \u00bb \u00a9 \u00e9t\u00e9 \u306e \u201cx\u201d \u1e01 \u1e01",
    "x \u0085y \u00a0y \u3000y \u2028y \u2029y \u1680y \u202fy \u205fy \u2000y \u200ay",
    "\U00010400\U00010428 deseret", "\u00aa\u00b5\u00ba", "\u2160\u2161 roman",
]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        os.path.dirname(__file__), "..", "..", "tests", "data", "bpe")
    os.makedirs(out, exist_ok=True)
    with open(sys.argv[1], encoding="utf-8") as f:
        shakespeare = f.read()
    train = shakespeare[:12000]
    held_out = shakespeare[500000:503000]  # lines not seen in training

    tok = ByteLevelBPETokenizer(add_prefix_space=False)
    tok.train_from_iterator([train] + EDGE_CASES * 3, vocab_size=700, min_frequency=2,
                            special_tokens=["<|endoftext|>"], show_progress=False)
    tok.save_model(out)
    vocab, merges = os.path.join(out, "vocab.json"), os.path.join(out, "merges.txt")

    # Reload from the two files alone, as from GPT-2's release.
    ref = ByteLevelBPETokenizer(vocab, merges, add_prefix_space=False)
    texts = EDGE_CASES + [line for line in held_out.split("\n")[1:40] if line]
    texts.append(held_out)  # one long text with its newlines
    cases = []
    for text in texts:
        ids = ref.encode(text).ids
        assert ref.decode(ids) == text, repr(text)
        cases.append({"text": text, "ids": ids})
    with open(os.path.join(out, "cases.json"), "w", encoding="utf-8") as f:
        json.dump({"tokenizers_version": tokenizers.__version__, "cases": cases}, f,
                  ensure_ascii=True, indent=0)
        f.write("\n")
    print("%s: vocab %d, %d cases (tokenizers %s)" % (out, ref.get_vocab_size(), len(cases),
                                                    tokenizers.__version__))


if __name__ == "__main__":
    main()
