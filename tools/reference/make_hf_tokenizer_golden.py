#!/usr/bin/env python3
"""Writes the golden files of Llama-style Hugging Face tokenizers under tests/data/hf_tokenizers/.

Three small tokenizers, trained here (no network) on tests/data/spm/sample.{en,de}
plus the edge cases of make_bpe_golden.py, each in the layout a Hugging Face
model directory ships:
  llama_spm/tokenizer.model   SentencePiece BPE with Llama's settings: byte
                              fallback, digits split, whitespace kept, a dummy
                              prefix (leading space), unk 0 / bos 1 / eos 2;
                              ids: transformers' LlamaTokenizer (legacy, 4.36's
                              default): BOS first, no EOS, the text cut at the
                              special pieces <unk> <s> </s> (their ids), each
                              other part sentencepiece's encode (with its
                              dummy prefix)
  smollm_bpe/tokenizer.json   byte-level BPE as SmolLM ships it: pre_tokenizer
                              Sequence[Digits(individual), ByteLevel(no prefix
                              space)], special tokens <|endoftext|> <|im_start|>
                              <|im_end|> at ids 0-2, no post-processor
  llama3_bpe/tokenizer.json   byte-level BPE as Llama 3 ships it: Split on
                              Llama 3's regex (Isolated) then ByteLevel without
                              its own regex, <|begin_of_text|> added first by a
                              TemplateProcessing post-processor, special tokens
                              as added tokens after the model's vocabulary
cases.json holds, for each tokenizer, texts and the ids the reference library
gives (`tokenizers` for tokenizer.json with add_special_tokens, transformers'
LlamaTokenizer for tokenizer.model), and the text decoding gives back.
tests/host/test_tokenizer_hf.c checks clformer's ids against them.

Run in the venv of tools/reference/llama_reference.py:
  /tmp/venv-llama/bin/python tools/reference/make_hf_tokenizer_golden.py
"""
import json
import os
import re
import sys

import sentencepiece as spm
import tokenizers
import transformers
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

sys.path.insert(0, os.path.dirname(__file__))
from make_bpe_golden import EDGE_CASES  # noqa: E402

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
OUT = os.path.join(ROOT, "tests", "data", "hf_tokenizers")
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

# Texts beyond the byte-level edge cases: digits, whitespace runs, special
# tokens inside text, and characters no training line had (byte fallback).
MORE = [
    "12345678901 2024-11-28 3.14159 x99y", "123456789", "1234567 99100", "x12345", "  two leading", "tabs\t\tand\n\n\nnewlines \n",
    "<|im_start|>user\nHi there<|im_end|>", "a<|endoftext|>b", "<|begin_of_text|>x",
    "<s> and </s> as text", "\u2603 snowman \u0f00 tibetan \U0001F9EA test tube",
    "CamelCaseWords and snake_case_words", "Don't DON'T It'S", "\u00c5ngstr\u00f6m", "   ",
]


def read_lines():
    lines = []
    for name in ("sample.en", "sample.de"):
        with open(os.path.join(ROOT, "tests", "data", "spm", name), encoding="utf-8") as f:
            lines += [line.rstrip("\n") for line in f if line.strip()]
    return lines


def split_encode(sp, text):
    """LlamaTokenizer's ids without the BOS, as the C side computes them."""
    ids = []
    for part in re.split(r"(<unk>|<s>|</s>)", text):
        if part in ("<unk>", "<s>", "</s>"):
            ids.append(sp.piece_to_id(part))
        elif part:
            ids += sp.encode(part)
    return ids


def train_spm(lines, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    prefix = os.path.join(out_dir, "tokenizer")
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines + EDGE_CASES * 2), model_prefix=prefix, model_type="bpe",
        vocab_size=700, character_coverage=0.995, byte_fallback=True, split_digits=True,
        allow_whitespace_only_pieces=True, remove_extra_whitespaces=False,
        normalization_rule_name="identity", add_dummy_prefix=True, unk_id=0, bos_id=1, eos_id=2,
        pad_id=-1, num_threads=1, minloglevel=2)
    os.remove(prefix + ".vocab")
    return prefix + ".model"


def train_bpe(lines, style):
    tok = Tokenizer(models.BPE())
    if style == "smollm":
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
        specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
        specials = []
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, min_frequency=2, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    # numbers often enough that digit merges exist (Llama 3 groups up to 3 digits)
    numbers = ["123 456 789 2024 100 365 1000000 12 34 56 99"] * 20
    tok.train_from_iterator(lines + EDGE_CASES * 2 + numbers, trainer)
    if style == "llama3":
        tok.add_special_tokens(["<|begin_of_text|>", "<|end_of_text|>"])
        bos = tok.token_to_id("<|begin_of_text|>")
        tok.post_processor = processors.TemplateProcessing(
            single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B",
            special_tokens=[("<|begin_of_text|>", bos)])
    return tok


def main():
    lines = read_lines()
    texts = EDGE_CASES + MORE + lines[:20]
    result = {"tokenizers": tokenizers.__version__, "transformers": transformers.__version__}

    model = train_spm(lines, os.path.join(OUT, "llama_spm"))
    slow = transformers.LlamaTokenizer(vocab_file=model, legacy=True)
    sp = spm.SentencePieceProcessor(model_file=model)
    cases = []
    for text in texts:
        ids = slow(text)["input_ids"]
        assert ids == [1] + split_encode(sp, text), repr(text)
        cases.append({"text": text, "ids": ids, "decoded": sp.decode(ids[1:])})
    result["llama_spm"] = cases

    for style in ("smollm", "llama3"):
        tok = train_bpe(lines, style)
        d = os.path.join(OUT, style + "_bpe")
        os.makedirs(d, exist_ok=True)
        tok.save(os.path.join(d, "tokenizer.json"))
        ref = Tokenizer.from_file(os.path.join(d, "tokenizer.json"))
        cases = []
        for text in texts:
            ids = ref.encode(text).ids
            cases.append({"text": text, "ids": ids,
                          "decoded": ref.decode(ids, skip_special_tokens=False)})
        result[style + "_bpe"] = cases

    with open(os.path.join(OUT, "cases.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, ensure_ascii=True, indent=0)
        f.write("\n")
    for d in sorted(os.listdir(OUT)):
        print(d, os.listdir(os.path.join(OUT, d)) if os.path.isdir(os.path.join(OUT, d)) else "")


if __name__ == "__main__":
    main()
