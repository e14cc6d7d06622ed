"""Ctrl-C: a training run stops after the step under way, writes its
checkpoint, then raises KeyboardInterrupt; the checkpoint loads and resumes.
Generation stops after the current token. Each in a child process that gets a
real SIGINT, as from a terminal."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import clformer
from conftest import LM_OPTIONS

# where this process found the package (installed, or the source tree)
PACKAGE_DIR = Path(clformer.__file__).resolve().parents[1]


def child(script: str) -> subprocess.Popen:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGE_DIR), env.get("PYTHONPATH")]))
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def interrupt_after(proc: subprocess.Popen, marker: str) -> tuple:
    """Waits for `marker` on the child's stdout, sends SIGINT, returns its output."""
    lines = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        lines.append(line)
        if marker in line or not line:
            break
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return "".join(lines) + out, err


def test_training_saves_then_raises(data, tmp_path):
    save = tmp_path / "run.safetensors"
    proc = child(f"""
        import clformer
        trainer = clformer.Trainer({LM_OPTIONS!r}, text={str(data / 'text.txt')!r},
                                   steps=10**6, save={str(save)!r})
        try:
            trainer.run(lambda step: print("step", step.step, flush=True))
        except KeyboardInterrupt:
            print("interrupted", trainer.result.steps, trainer.result.saved_to, flush=True)
            raise SystemExit(130)
        """)
    out, err = interrupt_after(proc, "step 2")
    assert proc.returncode == 130, err
    steps = int(out.split("interrupted ")[1].split()[0])
    assert steps >= 2 and f"interrupted {steps} {save}" in out
    model = clformer.load(save)  # intact, with the training state: it resumes
    assert model.step == steps
    resumed = clformer.Trainer(LM_OPTIONS, text=data / "text.txt", steps=steps + 2,
                               resume=save)
    assert [s.step for s in resumed] == [steps + 1, steps + 2]


def test_interrupt_in_the_loop_body_saves(data, tmp_path):
    save = tmp_path / "body.safetensors"
    with pytest.raises(KeyboardInterrupt):
        with clformer.Trainer(LM_OPTIONS, text=data / "text.txt", steps=100,
                              save=save) as trainer:
            for step in trainer:
                if step.step == 2:
                    raise KeyboardInterrupt
    assert clformer.load(save).step == 2


def test_generation_stops(lm_path):
    proc = child(f"""
        import clformer, time
        lm = clformer.load({str(lm_path)!r})
        print("generating", flush=True)
        start = time.monotonic()
        try:
            lm.generate("the king", max_tokens=10**6)
        except KeyboardInterrupt:
            print("stopped after", round(time.monotonic() - start, 1), flush=True)
        """)
    out, err = interrupt_after(proc, "generating")
    assert proc.returncode == 0, err
    assert "stopped after" in out
