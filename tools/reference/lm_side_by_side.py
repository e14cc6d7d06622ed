#!/usr/bin/env python3
"""clformer and nanoGPT side by side on Tiny Shakespeare, characters.

Runs nanoGPT's README CPU configuration (block 64, batch 12, 4 layers, 4 heads,
128 wide, dropout 0, eval_iters 20, lr decay over max_iters; its
shakespeare_char config otherwise: AdamW lr 1e-3 to 1e-4, beta2 0.99, 100
warm-up iterations) and `clformer train --task lm --config gpt-mini` with the same
schedule on the same split (first 90% of the characters train, last 10%
validate), then prints one table: validation loss, tokens/s and their ratio.

  /usr/bin/python3 tools/reference/lm_side_by_side.py --nanogpt PATH [--iters 2000]
      [--text data/tinyshakespeare/input.txt] [--clformer build/clformer]

(tools/get-data.sh tinyshakespeare data/tinyshakespeare writes the text.)

PATH is a checkout of karpathy/nanoGPT (not vendored here); its train.py runs
with Debian's torch 1.13 and --compile=False. The data files nanoGPT reads
(train.bin, val.bin, meta.pkl) are written into a temporary directory from
--text, so nothing is downloaded. Run both in one sitting on an idle machine:
tokens/s of a loaded machine say little.
"""

import argparse
import json
import os
import pickle
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

import numpy as np


def nanogpt_data(text, root):
    """nanoGPT's shakespeare_char layout: sorted characters, uint16 ids, 90/10."""
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    n = len(text)
    d = os.path.join(root, "data", "shakespeare_char")
    os.makedirs(d, exist_ok=True)
    np.array([stoi[c] for c in text[:int(n * 0.9)]], dtype=np.uint16).tofile(os.path.join(d, "train.bin"))
    np.array([stoi[c] for c in text[int(n * 0.9):]], dtype=np.uint16).tofile(os.path.join(d, "val.bin"))
    with open(os.path.join(d, "meta.pkl"), "wb") as f:
        pickle.dump({"vocab_size": len(chars), "itos": dict(enumerate(chars)), "stoi": stoi}, f)


def run_nanogpt(path, text, iters, eval_interval):
    root = tempfile.mkdtemp(prefix="nanogpt_")
    try:
        nanogpt_data(text, root)
        shutil.copy(os.path.join(path, "configurator.py"), root)
        shutil.copytree(os.path.join(path, "config"), os.path.join(root, "config"))
        cmd = [sys.executable, os.path.join(path, "train.py"), "config/train_shakespeare_char.py",
               "--device=cpu", "--compile=False", "--eval_iters=20", "--log_interval=1",
               "--block_size=64", "--batch_size=12", "--n_layer=4", "--n_head=4",
               "--n_embd=128", f"--max_iters={iters}", f"--lr_decay_iters={iters}",
               "--dropout=0.0", f"--eval_interval={eval_interval}", "--always_save_checkpoint=False"]
        # Debian's torch starts with one OpenMP thread here: give it every core,
        # as clformer's device has
        env = dict(os.environ, OMP_NUM_THREADS=str(os.cpu_count()))
        out = subprocess.run(cmd, cwd=root, capture_output=True, text=True, env=env)
        if out.returncode != 0:
            sys.exit(f"nanoGPT failed ({out.returncode}):\n{out.stderr[-3000:]}")
        log = out.stdout
    finally:
        shutil.rmtree(root, ignore_errors=True)
    vals = re.findall(r"step (\d+): train loss ([\d.]+), val loss ([\d.]+)", log)
    times = [float(t) for t in re.findall(r"iter \d+: loss [\d.]+, time ([\d.]+)ms", log)]
    steady = times[len(times) // 10:] or times  # past the first iterations' warm-up
    tok_s = 12 * 64 / (statistics.median(steady) / 1000.0)
    return float(vals[-1][2]), tok_s


def run_clformer(binary, text_path, iters, eval_interval):
    work = tempfile.mkdtemp(prefix="clformer_lm_")
    log = os.path.join(work, "log.jsonl")
    cmd = [binary, "train", "--task", "lm", "--text", text_path, "--config", "gpt-mini",
           "--steps", str(iters), "--lr-decay-steps", str(iters), "--eval-every",
           str(eval_interval), "--eval-batches", "20", "--no-save", "--log", log]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"clformer failed ({out.returncode}):\n{out.stderr[-3000:]}")
    steps, val = [], None
    with open(log) as f:
        for line in f:
            e = json.loads(line)
            if "val_loss" in e:
                val = e["val_loss"]
            elif "tokens_per_s" in e:
                steps.append(e)
    shutil.rmtree(work, ignore_errors=True)
    total_tokens = sum(e["tokens"] for e in steps)
    seconds = steps[-1]["elapsed_s"] - steps[0]["elapsed_s"]  # past the first step's compiling
    return val, (total_tokens - steps[0]["tokens"]) / seconds


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nanogpt", required=True, help="a checkout of karpathy/nanoGPT")
    p.add_argument("--text", default="data/tinyshakespeare/input.txt")
    p.add_argument("--clformer", default="build/clformer")
    p.add_argument("--iters", type=int, default=2000)
    a = p.parse_args()
    with open(a.text, encoding="utf-8") as f:
        text = f.read()
    interval = max(1, min(250, a.iters))
    c_val, c_tok = run_clformer(a.clformer, a.text, a.iters, interval)
    n_val, n_tok = run_nanogpt(a.nanogpt, text, a.iters, interval)
    print(f"| run ({a.iters} iterations, batch 12 x 64) | val loss | tokens/s |")
    print("| --- | --- | --- |")
    print(f"| nanoGPT (PyTorch {__import__('torch').__version__}, CPU, {os.cpu_count()} threads) | {n_val:.4f} | {n_tok:,.0f} |")
    print(f"| clformer ({os.environ.get('CLFORMER_DEVICE', 'default device')}) | {c_val:.4f} | {c_tok:,.0f} |")
    print(f"| ratio clformer / nanoGPT | | {c_tok / n_tok:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
