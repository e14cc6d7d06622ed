"""examples/python/char_lm.py runs as the README shows it, one step on a small text."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import clformer
from conftest import REPO


def test_char_lm_example(data, tmp_path):
    env = dict(os.environ)
    package = str(Path(clformer.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package, env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, str(REPO / "examples/python/char_lm.py"),
                           str(data / "text.txt"), "--steps", "1", "--tokens", "20", "--save",
                           str(tmp_path / "m.safetensors")], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "1 steps in" in proc.stdout and "--- a sample" in proc.stdout
    assert clformer.load(tmp_path / "m.safetensors").step == 1
    missing = subprocess.run([sys.executable, str(REPO / "examples/python/char_lm.py")],
                             env=env, capture_output=True, text=True, cwd=tmp_path)
    assert missing.returncode == 2 and "tools/get-data.sh tinyshakespeare" in missing.stderr
    # without --save, a second run keeps the first run's checkpoint and names its own
    for run in (1, 2):
        again = subprocess.run([sys.executable, str(REPO / "examples/python/char_lm.py"),
                                str(data / "text.txt"), "--steps", "1", "--tokens", "5"],
                               env=env, capture_output=True, text=True, cwd=tmp_path, timeout=300)
        assert again.returncode == 0, again.stderr
    assert "saved to char_lm-2.safetensors" in again.stdout
    assert clformer.load(tmp_path / "char_lm.safetensors").step == 1
