"""Language models from Python against the command's output, bit for bit:
generate (one prompt, a batch with samples), the streaming iterator, evaluate,
logits, export to Hugging Face's layout, and parameters through numpy."""
from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

import clformer
from conftest import run_cli

SAMPLING = dict(max_tokens=40, temperature=0.9, top_k=5, top_p=0.95, seed=7)
SAMPLING_FLAGS = ["--max-tokens", "40", "--temperature", "0.9", "--top-k", "5", "--top-p",
                  "0.95", "--seed", "7"]


@pytest.fixture(scope="module")
def lm(lm_path: Path) -> clformer.LanguageModel:
    model = clformer.load(lm_path)
    assert isinstance(model, clformer.LanguageModel)
    return model


def test_generate_one_prompt_is_the_commands(lm, lm_path):
    out = run_cli("generate", "--model", lm_path, "--prompt", "the king", *SAMPLING_FLAGS)
    assert out.stdout == "the king" + lm.generate("the king", **SAMPLING) + "\n"


def test_generate_batch_is_the_commands(lm, lm_path):
    out = run_cli("generate", "--model", lm_path, "--prompt", "the king", "--prompt", "a land",
                  "--num-samples", "2", "--json", *SAMPLING_FLAGS)
    rows = json.loads(out.stdout)["rows"]
    texts = lm.generate(["the king", "a land"], samples=2, **SAMPLING)
    assert texts == [row["text"] for row in rows]
    # a row makes the tokens it makes alone
    assert texts[0] == lm.generate("the king", **SAMPLING)


def test_stream_gives_the_generated_text(lm):
    tokens = list(lm.stream("the king", **SAMPLING))
    assert len(tokens) == SAMPLING["max_tokens"]
    assert "".join(t.text for t in tokens) == lm.generate("the king", **SAMPLING)
    assert [t.id for t in tokens][:3] == lm.encode(lm.decode([t.id for t in tokens]))[:3]
    # leaving early stops it, and the device is free again
    for i, _ in enumerate(lm.stream("the king", **SAMPLING)):
        if i == 2:
            break
    assert lm.generate("the king", **SAMPLING) == "".join(t.text for t in tokens)


def test_greedy(lm):
    assert lm.generate("the", max_tokens=10, temperature=0) == \
        lm.generate("the", max_tokens=10, top_k=1, seed=99)


def test_evaluate_is_the_commands(lm, lm_path, data):
    text_file = data / "text.txt"
    out = json.loads(run_cli("eval", "--model", lm_path, "--text", text_file, "--json").stdout)
    score = lm.evaluate(text_file.read_text())
    assert f"{score.loss:.6f}" == f"{out['loss']:.6f}"
    assert f"{score.perplexity:.4f}" == f"{out['perplexity']:.4f}"
    assert f"{score.bits_per_byte:.6f}" == f"{out['bits_per_byte']:.6f}"
    assert (score.tokens, score.bytes) == (out["tokens"], out["bytes"])


def test_logits_are_the_commands(lm, lm_path, tmp_path):
    ids = lm.encode("the king and queen")[:12]
    run_cli("logits", "--model", lm_path, "--ids", " ".join(map(str, ids)), "--out",
            tmp_path / "logits.safetensors")
    cli = safetensors(tmp_path / "logits.safetensors")["logits"]
    assert cli.shape == (1, len(ids), lm.config["tgt_vocab"])
    assert np.array_equal(lm.logits(ids), cli[0])  # bit for bit


def test_logits_score_the_text(lm):
    """The mean cross-entropy of the logits is evaluate's loss (one window)."""
    ids = lm.encode("the king and queen")[:13]  # context 12 + 1: one window
    logits = lm.logits(ids[:-1]).astype(np.float64)
    assert logits.shape == (12, lm.config["tgt_vocab"]) and lm.logits(ids[:-1]).dtype == np.float32
    logp = logits - np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1,
                                                                          keepdims=True)) \
        - logits.max(-1, keepdims=True)
    loss = -np.mean(logp[np.arange(12), ids[1:]])
    assert abs(loss - lm.evaluate(lm.decode(ids)).loss) < 1e-5
    batch = lm.logits(np.array([ids[:-1], ids[:-1]]))
    assert batch.shape == (2, 12, logits.shape[1])
    assert np.array_equal(batch[1], lm.logits(ids[:-1]))


def test_export_hf_is_the_commands(lm, lm_path, tmp_path):
    lm.export_hf(tmp_path / "py")
    run_cli("export", "--model", lm_path, "--out", tmp_path / "cli", "--format", "hf-gpt2")
    for f in sorted((tmp_path / "cli").iterdir()):
        assert (tmp_path / "py" / f.name).read_bytes() == f.read_bytes(), f.name
    hf = clformer.load(tmp_path / "py")  # a Hugging Face directory loads
    ids = lm.encode("the king")
    assert np.array_equal(hf.logits(ids), lm.logits(ids))


def safetensors(path: Path) -> dict:
    """The float32 tensors of a safetensors file (the format is a JSON header)."""
    data = path.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__" or t["dtype"] != "F32":
            continue
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + a:8 + n + b], dtype="<f4").reshape(t["shape"])
    return out


def test_state_dict_is_the_checkpoint(lm, lm_path, tmp_path):
    state = lm.state_dict()
    file = safetensors(lm_path)
    weights = {k: v for k, v in file.items() if not k.startswith("optim.")}
    assert list(state) == list(weights)
    for name, array in weights.items():
        assert np.array_equal(state[name], array), name
    # in and out: a changed tensor reads back, saves and loads
    model = clformer.load(lm_path)
    changed = dict(state)
    changed["pos_embed.weight"] = state["pos_embed.weight"] * 2
    model.load_state_dict(changed)
    assert np.array_equal(model.state_dict()["pos_embed.weight"], changed["pos_embed.weight"])
    model.save(tmp_path / "edited.safetensors")
    again = clformer.load(tmp_path / "edited.safetensors")
    assert np.array_equal(again.state_dict()["pos_embed.weight"], changed["pos_embed.weight"])
    with pytest.raises(KeyError, match="missing"):
        model.load_state_dict({"pos_embed.weight": changed["pos_embed.weight"]})
    with pytest.raises(ValueError, match="shape"):
        model.load_state_dict({"pos_embed.weight": np.zeros((2, 2))}, strict=False)


def test_text_round_trip(lm):
    ids = lm.encode("the queen")
    assert lm.decode(ids) == "the queen"
    assert lm.parameter_count > 0 and lm.config["n_enc_layers"] == 0
