"""Shared fixtures: the command line (CLFORMER_CLI, set by CTest; else the
build tree's), the device (PoCL's pthread device unless CLFORMER_DEVICE says
otherwise: the package and the command must run on the same one to agree bit
for bit), small data, and models trained once per session by the command."""
from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path
from typing import List

import pytest

os.environ.setdefault("CLFORMER_DEVICE", "pocl:pthread")

REPO = Path(__file__).resolve().parents[2]
CLI = Path(os.environ.get("CLFORMER_CLI", REPO / "build" / "clformer"))


def run_cli(*args: str, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    """Runs the command; its stdout and stderr as text."""
    if not CLI.exists():
        pytest.skip(f"the clformer command is not built ({CLI}): set CLFORMER_CLI")
    proc = subprocess.run([str(CLI), *map(str, args)], capture_output=True, text=True, **kwargs)
    if check and proc.returncode != 0:
        raise AssertionError(f"clformer {' '.join(map(str, args))} failed ({proc.returncode}):"
                             f"\n{proc.stderr}")
    return proc


def log_losses(path: Path) -> List[str]:
    """The loss of each step line of a training log, as written (8 digits)."""
    out = []
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        if "loss" in entry:
            out.append(line.split('"loss":')[1].split(",")[0])
    return out


def same_checkpoint(a: Path, b: Path) -> bool:
    """Whether two checkpoints hold the same tensors, bytes and metadata, apart
    from the run each names (clformer.run: the run that wrote it, so that a run
    replaces only its own files) and the header checksum that covers it."""
    def parts(path: Path):
        raw = Path(path).read_bytes()
        size = int.from_bytes(raw[:8], "little")
        header = json.loads(raw[8:8 + size])
        for key in ("clformer.run", "clformer.header_crc32c"):
            header.get("__metadata__", {}).pop(key, None)
        return header, raw[8 + size:]
    return parts(a) == parts(b)


def shape_of_log_loss(value: float) -> str:
    """A loss as the log writes it (jansson's %.8g with a decimal point)."""
    text = f"{value:.8g}"
    return text if any(c in text for c in ".e") else text + ".0"


@pytest.fixture(scope="session")
def data(tmp_path_factory) -> Path:
    """A text for language models and sentence pairs for translation."""
    d = tmp_path_factory.mktemp("data")
    rng = random.Random(1)
    words = "the king and queen of a land far away ruled with love and fear".split()
    lines = [" ".join(rng.choice(words) for _ in range(8)) for _ in range(300)]
    (d / "text.txt").write_text("\n".join(lines) + "\n")
    src = [" ".join(rng.choice(words) for _ in range(rng.randint(3, 7))) for _ in range(200)]
    (d / "train.src").write_text("\n".join(src) + "\n")
    (d / "train.tgt").write_text("\n".join(" ".join(reversed(s.split())) for s in src) + "\n")
    return d


LM_SHAPE = ["--task", "lm", "--d-model", "16", "--heads", "2", "--dec-layers", "1", "--d-ff",
            "32", "--context", "12", "--batch-size", "3", "--eval-batches", "2"]
LM_OPTIONS = dict(task="lm", d_model=16, heads=2, dec_layers=1, d_ff=32, context=12,
                  batch_size=3, eval_batches=2)

MT_SHAPE = ["--d-model", "16", "--heads", "2", "--enc-layers", "1", "--dec-layers", "1",
            "--d-ff", "32", "--max-len", "12", "--batch-size", "8", "--lr", "3e-3",
            "--bleu-sentences", "8"]
MT_OPTIONS = dict(d_model=16, heads=2, enc_layers=1, dec_layers=1, d_ff=32, max_len=12,
                  batch_size=8, lr=3e-3, bleu_sentences=8)


@pytest.fixture(scope="session")
def lm_path(data: Path) -> Path:
    """A small character language model trained by the command."""
    path = data / "lm.safetensors"
    run_cli("train", *LM_SHAPE, "--text", data / "text.txt", "--steps", "30", "--lr", "1e-2",
            "--warmup", "5", "--save", path)
    return path


@pytest.fixture(scope="session")
def mt_path(data: Path) -> Path:
    """A small translation model trained by the command."""
    path = data / "mt.safetensors"
    run_cli("train", *MT_SHAPE, "--src", data / "train.src", "--tgt", data / "train.tgt",
            "--steps", "30", "--save", path)
    return path
