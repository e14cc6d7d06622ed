#!/usr/bin/env python3
"""clformer and nanoGPT side by side on Tiny Shakespeare, characters.

Runs nanoGPT's README CPU configuration (block 64, batch 12, 4 layers, 4 heads,
128 wide, dropout 0, eval_iters 20, lr decay over max_iters; its
shakespeare_char config otherwise: AdamW lr 1e-3 to 1e-4, beta2 0.99, 100
warm-up iterations) and `clformer train --task lm --config gpt-mini` with the same
schedule on the same split (first 90% of the characters train, last 10%
validate), then prints one table: validation loss, tokens/s and their ratio.

  /usr/bin/python3 tools/reference/lm_side_by_side.py --nanogpt PATH [--iters 2000]
      [--rounds N] [--text data/tinyshakespeare/input.txt] [--clformer build/clformer]
      [--before OLD/clformer]

(tools/get-data.sh tinyshakespeare data/tinyshakespeare writes the text.)

PATH is a checkout of karpathy/nanoGPT (not vendored here); its train.py runs
with the Python running this script (Debian's python3-torch 1.13) and
--compile=False. The data files nanoGPT reads (train.bin, val.bin, meta.pkl)
are written into a temporary directory from --text, so nothing is downloaded.

nanoGPT runs as its users run it: this script's environment unchanged, so
torch's own thread defaults and OpenBLAS's (no OMP_NUM_THREADS set on top of
OpenBLAS's threads, which oversubscribes the cores: 4x slower on 2 cores).
The table says which threads and which BLAS torch used. Debian's torch does
its matrix products through whatever libblas.so.3 points to: without
libopenblas0-pthread that is the reference BLAS, ~10x slower, so the script
refuses to run without it.

clformer's GEMMs on a CPU device go through the same OpenBLAS (its host
provider). OpenBLAS picks its kernels by CPU model: 0.3.21 (Debian 12) does
not know recent Intel models and falls back to its Prescott (SSE3) kernels,
with which products take about four times as long as with its AVX-512 ones
on such a CPU. There clformer runs its own AVX-512 product instead
(runtime/device/gemm_avx512.h) and torch keeps OpenBLAS's choice: each side
at its defaults. OPENBLAS_CORETYPE=SkylakeX in the environment selects
OpenBLAS's AVX-512 kernels for both (say so with the figures: that is
torch's best setting, not its default). The table says which kernels each
side runs.

Both sides report the median time per training iteration over the run past
its first tenth (validation iterations fall out of the median). --rounds N
alternates the runs N times in one sitting (with --before, an older build
first in each round) and reports the median ratio: run it on an idle
machine; the load average before each run is printed.
"""

import argparse
import ctypes
import datetime
import json
import os
import pickle
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    sys.exit("lm_side_by_side: numpy is missing; run this script with the Python that has torch and "
             "numpy (Debian: /usr/bin/python3 with python3-torch and python3-numpy, "
             "tools/install-deps.sh --with-torch)")

BATCH, BLOCK = 12, 64
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "GOTO_NUM_THREADS", "OPENBLAS_CORETYPE")

# Run inside the interpreter and environment nanoGPT gets: what torch uses.
PROBE = r"""
import ctypes, json, os, re, torch
torch.randn(64, 64) @ torch.randn(64, 64)  # loads the BLAS
blas = sorted({l.split()[-1] for l in open('/proc/self/maps')
               if re.search(r'lib(open)?blas', l.split()[-1] if l.split() else '')})
info = {'torch': torch.__version__, 'threads': torch.get_num_threads(),
        'interop_threads': torch.get_num_interop_threads(), 'blas_files': blas,
        'blas_info': (re.findall(r'BLAS_INFO=([^,]+)', torch.__config__.show()) or ['?'])[0]}
for path in blas:
    lib = ctypes.CDLL(path)
    if hasattr(lib, 'openblas_get_num_threads'):
        info['openblas_threads'] = lib.openblas_get_num_threads()
        lib.openblas_get_config.restype = ctypes.c_char_p
        info['openblas_config'] = lib.openblas_get_config().decode()
        lib.openblas_get_corename.restype = ctypes.c_char_p
        info['openblas_core'] = lib.openblas_get_corename().decode()
print(json.dumps(info))
"""


def require_openblas():
    """Debian's torch runs on libblas.so.3: it must be OpenBLAS's pthread build."""
    fix = "install it: sudo apt-get install libopenblas0-pthread (or tools/install-deps.sh --with-torch)"
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "libopenblas0-pthread"],
                             capture_output=True, text=True)
    except FileNotFoundError:
        return  # not Debian: the probe still prints which BLAS torch loaded
    if "install ok installed" not in out.stdout:
        sys.exit("lm_side_by_side: libopenblas0-pthread is not installed; Debian's torch would "
                 f"multiply with the reference BLAS (~10x slower); {fix}")


def probe_torch(env):
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit(f"lm_side_by_side: torch does not load in {sys.executable} ({out.stderr.strip()[-500:]}); "
                 "run this script with the Python that has torch (Debian: /usr/bin/python3 with python3-torch)")
    info = json.loads(out.stdout)
    if not any("openblas" in f for f in info["blas_files"]):
        sys.exit(f"lm_side_by_side: torch loaded {info['blas_files'] or 'no BLAS library'}, not OpenBLAS; "
                 "point libblas.so.3 at OpenBLAS (sudo update-alternatives --config "
                 "libblas.so.3-x86_64-linux-gnu) or install libopenblas0-pthread")
    return info


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


def median_step(times):
    """The median of per-iteration seconds past the first tenth (warm-up, compiling)."""
    steady = times[len(times) // 10:] or times
    return statistics.median(steady)


def run_nanogpt(path, text, iters, eval_interval):
    root = tempfile.mkdtemp(prefix="nanogpt_")
    try:
        nanogpt_data(text, root)
        shutil.copy(os.path.join(path, "configurator.py"), root)
        shutil.copytree(os.path.join(path, "config"), os.path.join(root, "config"))
        # nanoGPT's README CPU command, word for word but for the iteration count
        cmd = [sys.executable, os.path.join(path, "train.py"), "config/train_shakespeare_char.py",
               "--device=cpu", "--compile=False", "--eval_iters=20", "--log_interval=1",
               f"--block_size={BLOCK}", f"--batch_size={BATCH}", "--n_layer=4", "--n_head=4",
               "--n_embd=128", f"--max_iters={iters}", f"--lr_decay_iters={iters}",
               "--dropout=0.0", f"--eval_interval={eval_interval}", "--always_save_checkpoint=False"]
        out = subprocess.run(cmd, cwd=root, capture_output=True, text=True)  # environment as is
        if out.returncode != 0:
            sys.exit(f"nanoGPT failed ({out.returncode}):\n{out.stderr[-3000:]}")
        log = out.stdout
    finally:
        shutil.rmtree(root, ignore_errors=True)
    vals = re.findall(r"step (\d+): train loss ([\d.]+), val loss ([\d.]+)", log)
    times = [float(t) / 1000.0 for t in re.findall(r"iter \d+: loss [\d.]+, time ([\d.]+)ms", log)]
    return float(vals[-1][2]), BATCH * BLOCK / median_step(times)


def run_clformer(binary, text_path, iters, eval_interval):
    work = tempfile.mkdtemp(prefix="clformer_lm_")
    log = os.path.join(work, "log.jsonl")
    cmd = [binary, "train", "--task", "lm", "--text", text_path, "--config", "gpt-mini",
           "--steps", str(iters), "--lr-decay-steps", str(iters), "--eval-every",
           str(eval_interval), "--eval-batches", "20", "--no-save", "--log", log]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"clformer failed ({out.returncode}):\n{out.stderr[-3000:]}")
    elapsed, val = [], None
    with open(log) as f:
        for line in f:
            e = json.loads(line)
            if "val_loss" in e:
                val = e["val_loss"]
            elif "tokens_per_s" in e:
                elapsed.append(e["elapsed_s"])
    shutil.rmtree(work, ignore_errors=True)
    times = [b - a for a, b in zip(elapsed, elapsed[1:])]  # as nanoGPT's dt: step end to step end
    return val, BATCH * BLOCK / median_step(times)


def clformer_gemm(binary):
    """The gemm line `clformer devices` prints for the device it selects."""
    out = subprocess.run([binary, "devices"], capture_output=True, text=True).stdout
    chosen = False
    for line in out.splitlines():
        if not line.startswith("        "):  # a device's first line: "* " marks the chosen one
            chosen = line.startswith("* ")
        elif chosen and line.split()[:1] == ["gemm"]:
            return line.split(None, 1)[1]
    return "? (clformer devices names none)"


def cpu_has(flag):
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and flag in line.split() for line in f)
    except OSError:
        return False


def describe(info):
    env = ", ".join(f"{v}={os.environ[v]}" for v in THREAD_VARIABLES if v in os.environ) or "none"
    blas = ", ".join(info["blas_files"])
    return (f"torch {info['torch']}: {info['threads']} intra-op thread(s), {info['interop_threads']} "
            f"inter-op (torch's defaults); BLAS {blas} (BLAS_INFO={info['blas_info']}), "
            f"OpenBLAS {info.get('openblas_threads', '?')} thread(s), kernels for {info.get('openblas_core', '?')} "
            f"({info.get('openblas_config', '?')}); "
            f"thread variables set: {env}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nanogpt", required=True, help="a checkout of karpathy/nanoGPT")
    p.add_argument("--text", default="data/tinyshakespeare/input.txt")
    p.add_argument("--clformer", default="build/clformer")
    p.add_argument("--before", help="an older clformer binary, run before --clformer in every round")
    p.add_argument("--iters", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=1, help="alternate the runs this many times (1)")
    a = p.parse_args()
    if a.iters < 10 or a.rounds < 1:
        sys.exit("lm_side_by_side: --iters must be at least 10 and --rounds at least 1")
    if not os.path.isfile(os.path.join(a.nanogpt, "train.py")):
        sys.exit(f"lm_side_by_side: {a.nanogpt} has no train.py; give a checkout of karpathy/nanoGPT")
    for b in [a.clformer] + ([a.before] if a.before else []):
        if not os.access(b, os.X_OK):
            sys.exit(f"lm_side_by_side: {b} is not an executable clformer (build it: tools/build.sh)")
    require_openblas()
    info = probe_torch(dict(os.environ))
    with open(a.text, encoding="utf-8") as f:
        text = f.read()
    interval = max(1, min(250, a.iters))
    device = os.environ.get("CLFORMER_DEVICE", "default device")
    print(f"{datetime.datetime.now().isoformat(timespec='minutes')}, {os.cpu_count()} CPUs")
    print(f"nanoGPT: {describe(info)}")
    if info.get("openblas_core") == "Prescott" and cpu_has("avx2"):
        print("note: OpenBLAS runs its Prescott (SSE3) kernels on this AVX2/AVX-512 CPU, for torch's GEMMs "
              "(and clformer's where its GEMM line below names OpenBLAS; on an AVX-512 CPU clformer "
              "runs its own product instead); OPENBLAS_CORETYPE=SkylakeX (or Haswell) selects faster ones")
    binaries = ([("before", a.before)] if a.before else []) + [("clformer", a.clformer)]
    for name, b in binaries:
        print(f"{name}: {b}, device {device}, GEMM: {clformer_gemm(b)}")
    print(f"\n| round ({a.iters} iterations, batch {BATCH} x {BLOCK}) | load before | val loss | tokens/s |")
    print("| --- | ---: | ---: | ---: |")
    ratios = {name: [] for name, _ in binaries}
    for r in range(1, a.rounds + 1):
        toks = {}
        for name, b in binaries:
            load = os.getloadavg()[0]
            val, toks[name] = run_clformer(b, a.text, a.iters, interval)
            print(f"| {r}: {name} ({device}) | {load:.2f} | {val:.4f} | {toks[name]:,.0f} |", flush=True)
        load = os.getloadavg()[0]
        n_val, n_tok = run_nanogpt(a.nanogpt, text, a.iters, interval)
        print(f"| {r}: nanoGPT (torch {info['torch']}, {info['threads']} torch thread(s), "
              f"OpenBLAS {info.get('openblas_threads', '?')}) | {load:.2f} | {n_val:.4f} | {n_tok:,.0f} |",
              flush=True)
        for name in toks:
            ratios[name].append(toks[name] / n_tok)
    for name, _ in binaries:
        each = ", ".join(f"{x:.2f}x" for x in ratios[name])
        print(f"| {name} / nanoGPT, median of {a.rounds} | | | **{statistics.median(ratios[name]):.2f}x** ({each}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
