"""Translation and BLEU from Python against the command's output."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import clformer
from conftest import run_cli


@pytest.fixture(scope="module")
def mt(mt_path: Path) -> clformer.Translator:
    model = clformer.load(mt_path)
    assert isinstance(model, clformer.Translator)
    return model


@pytest.mark.parametrize("beam", [1, 3])
def test_translate_is_the_commands(mt, mt_path, data, tmp_path, beam):
    lines = (data / "train.src").read_text().splitlines()[:20]
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n")
    run_cli("translate", "--model", mt_path, "--input", tmp_path / "in.txt", "--output",
            tmp_path / "out.txt", "--beam", beam)
    assert mt.translate(lines, beam=beam) == (tmp_path / "out.txt").read_text().splitlines()
    assert mt.translate(lines[0], beam=beam) == mt.translate(lines[:1], beam=beam)[0]


@pytest.mark.parametrize("tokenize,lowercase", [("13a", False), ("none", False),
                                                ("13a", True)])
def test_bleu_is_the_commands(tmp_path, tokenize, lowercase):
    hyps = ["The cat sat on the mat.", "A dog, barking; loudly!", "ünïcode wörds here"]
    refs = ["The cat sat on a mat.", "a dog barked loudly!", "Ünïcode words here"]
    (tmp_path / "h").write_text("\n".join(hyps) + "\n")
    (tmp_path / "r").write_text("\n".join(refs) + "\n")
    flags = ["--tokenize", tokenize] + (["--lowercase"] if lowercase else [])
    out = json.loads(run_cli("eval", "--hyp", tmp_path / "h", "--ref", tmp_path / "r",
                             "--json", *flags).stdout)
    score = clformer.bleu(hyps, refs, tokenize=tokenize, lowercase=lowercase)
    assert score.score == out["bleu"]  # jansson writes doubles exactly
    assert list(score.precisions) == out["precisions"] and score.bp == out["bp"]
    assert (score.hyp_len, score.ref_len) == (out["hyp_len"], out["ref_len"])
    assert score.signature == out["signature"]
    assert str(score).startswith(f"BLEU = {score.score:.2f}")


def test_bleu_refuses_bad_input():
    with pytest.raises(ValueError, match="one reference per hypothesis"):
        clformer.bleu(["a"], ["a", "b"])
    with pytest.raises(ValueError, match="tokenize"):
        clformer.bleu(["a"], ["a"], tokenize="intl")
