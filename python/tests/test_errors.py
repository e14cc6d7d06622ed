"""Devices, errors and threads: one exception class per status with the C
library's message, the built-in class a user would catch, and a model used
from several threads at once."""
from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

import clformer
from clformer import _lib, errors


def test_one_class_per_status():
    for code in range(1, len(errors._BY_CODE)):
        name = _lib.lib.clformer_status_name(code).decode()
        assert errors._BY_CODE[code].status == name
        assert issubclass(errors._BY_CODE[code], clformer.ClformerError)


def test_devices():
    found = clformer.devices()
    assert found and sum(d.chosen for d in found) == 1
    chosen = next(d for d in found if d.chosen)
    assert "pthread" in chosen.name  # conftest's CLFORMER_DEVICE
    with pytest.raises(clformer.NoDeviceError, match="pthread"):  # it lists what exists
        clformer.Device("no-such-device")
    with clformer.Device(chosen.selector) as device:
        assert device.name == chosen.name


def test_files(tmp_path: Path):
    with pytest.raises(clformer.FileError, match="nosuch.safetensors") as caught:
        clformer.load(tmp_path / "nosuch.safetensors")
    assert isinstance(caught.value, OSError)
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{broken}")
    with pytest.raises(clformer.FormatError, match="bad.safetensors"):
        clformer.load(bad)


def test_bad_ids(lm_path: Path):
    lm = clformer.load(lm_path)
    vocab = lm.config["tgt_vocab"]
    with pytest.raises(clformer.InvalidArgumentError, match=str(vocab)) as caught:
        lm.logits([1, vocab])
    assert isinstance(caught.value, ValueError)
    with pytest.raises(ValueError, match="shape"):
        lm.logits(np.zeros((1, 1, 1)))
    with pytest.raises(clformer.InvalidArgumentError, match="top_p"):
        lm.generate("the", top_p=0)


def test_threads_share_a_model(lm_path: Path):
    """Calls on one device from several threads run one after another: each
    gets what it gets alone."""
    lm = clformer.load(lm_path)
    alone = [lm.generate("the king", max_tokens=30, seed=s) for s in range(4)]
    got = [None] * 4

    def work(s: int) -> None:
        got[s] = lm.generate("the king", max_tokens=30, seed=s)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == alone


def test_a_stream_holds_the_device(lm_path: Path):
    lm = clformer.load(lm_path)
    stream = lm.stream("the", max_tokens=5)
    next(stream)
    with pytest.raises(RuntimeError, match="close"):
        lm.generate("the", max_tokens=2)
    stream.close()
    assert len(lm.generate("the", max_tokens=2)) >= 0
