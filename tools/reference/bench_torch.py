#!/usr/bin/python3
"""PyTorch CPU baseline for `clformer bench`.

Trains the same model as `clformer bench --config tiny|small|base` with
torch.nn.Transformer on the CPU, times warm training steps and greedy translation,
and prints JSON:

  {"config", "batch", "len", "threads", "params",
   "train_tokens_per_s", "train_step_ms", "translate_tokens_per_s", "translate_batch_ms"}

Threads: PyTorch runs as its users run it, at torch's own default intra-op threads
and OpenBLAS's own threads (no OMP_NUM_THREADS or set_num_threads on top of them, which
oversubscribes the cores); "threads" reports torch.get_num_threads() and "blas" the
library loaded. --threads N calls torch.set_num_threads(N) (say so with figures).

Counting: a training step (forward + backward + clip + Adam) over B sentence pairs of
length T counts B*T tokens (the target positions that carry a loss); translation
greedily decodes B source sentences of length T for exactly T steps each (no early
stop, so the work is fixed) and counts B*T generated tokens. nn.Transformer has no
key/value cache, so each decoding step reruns the decoder over the prefix.

With --clformer BINARY it also runs
`BINARY bench --config X --batch B --len T --steps N --warmup W --json` (the same
counting, see tools/cmd_bench.c) and prints
{"torch": ..., "clformer": ..., "ratio_clformer_over_torch": ...}; a missing binary or
a failing command is reported in "clformer": {"error": ...}, not raised.

The model is tools/reference/torch_reference.py's module tree (docs/MODEL.md) with docs/MODEL.md's defaults:
pre-norm, ReLU, sinusoidal positions, dropout 0.1, Adam (0.9, 0.98, 1e-9), clip 1.0.
"""

import argparse
import json
import os
import subprocess
import sys
import time

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_reference as ref  # noqa: E402  (the shared module tree)

# The library's translation presets (clformer_config_preset), as `clformer
# presets --json` writes them (with the language models', which this baseline
# leaves out); test_presets_json keeps this file equal to that output.
SHAPE = ("d_model", "n_heads", "d_ff", "n_enc_layers", "n_dec_layers")
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "presets.json")) as f:
    CONFIGS = {name: {k: p[k] for k in SHAPE} for name, p in json.load(f).items()
               if p["task"] == "translation"}
VOCAB = 8000
MAX_LEN = 256


def model_config(name):
    return {**CONFIGS[name], "src_vocab": VOCAB, "tgt_vocab": VOCAB, "max_len": MAX_LEN,
            "norm_first": True, "activation": "relu", "positional": "sinusoidal", "dropout": 0.1, "ln_eps": 1e-5,
            "label_smoothing": 0.0, "share_tgt_embed": False}


def random_batch(gen, b, t):
    """Full-length sentences <sos> w1..w(t-2) <eos> plus, for the target, one more word,
    so the decoder input and the labels are both t tokens long."""
    words = lambda n: torch.randint(4, VOCAB, (b, n), generator=gen)  # noqa: E731
    sos = torch.full((b, 1), ref.SOS, dtype=torch.int64)
    eos = torch.full((b, 1), ref.EOS, dtype=torch.int64)
    src = torch.cat([sos, words(t - 2), eos], 1)
    tgt = torch.cat([sos, words(t - 1), eos], 1)
    return src, tgt


def bench_train(model, args, gen):
    optim = torch.optim.Adam(model.parameters(), lr=1e-4, betas=ref.BETAS, eps=ref.ADAM_EPS)
    loss_fn = nn.CrossEntropyLoss(ignore_index=ref.PAD)
    model.train()
    batches = [random_batch(gen, args.batch, args.len) for _ in range(args.warmup + args.steps)]

    def step(src, tgt):
        optim.zero_grad(set_to_none=True)
        logits = model(src, tgt[:, :-1])
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt[:, 1:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optim.step()

    for src, tgt in batches[:args.warmup]:
        step(src, tgt)
    start = time.perf_counter()
    for src, tgt in batches[args.warmup:]:
        step(src, tgt)
    return (time.perf_counter() - start) / args.steps


def greedy(model, src, steps):
    memory = model.encode(src)
    ys = torch.full((src.shape[0], 1), ref.SOS, dtype=torch.int64)
    for _ in range(steps):
        logits = model.generator(model.decoder_states(memory, src, ys)[:, -1])
        ys = torch.cat([ys, logits.argmax(-1, keepdim=True)], 1)
    return ys


def bench_translate(model, args, gen):
    model.eval()  # PyTorch's fastest inference path
    src = random_batch(gen, args.batch, args.len)[0]
    with torch.no_grad():
        for _ in range(args.warmup):
            greedy(model, src, args.len)
        start = time.perf_counter()
        for _ in range(args.steps):
            greedy(model, src, args.len)
    return (time.perf_counter() - start) / args.steps


def blas_library():
    """The BLAS shared library this process loaded (Debian's PyTorch links libblas.so.3,
    which is netlib's reference BLAS, ~30x slower, unless OpenBLAS provides it)."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "blas" in line.lower() or "mkl" in line.lower()}
    except OSError:
        return "unknown"
    libs = sorted(os.path.realpath(p) for p in paths if p.startswith("/"))
    return ", ".join(libs) or "none found"


def run_torch(args):
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    cfg = model_config(args.config)
    model = ref.Seq2Seq(cfg, dropout=cfg["dropout"])
    tokens = args.batch * args.len
    train_s = bench_train(model, args, gen)
    translate_s = bench_translate(model, args, gen)
    return {"config": args.config, "batch": args.batch, "len": args.len,
            "threads": torch.get_num_threads(), "params": sum(p.numel() for p in model.parameters()),
            "train_tokens_per_s": tokens / train_s, "train_step_ms": 1e3 * train_s,
            "translate_tokens_per_s": tokens / translate_s,
            "translate_batch_ms": 1e3 * translate_s, "torch_version": torch.__version__,
            "blas": blas_library()}


def run_clformer(args):
    cmd = [args.clformer, "bench", "--config", args.config, "--batch", str(args.batch),
           "--len", str(args.len), "--steps", str(args.steps), "--warmup", str(args.warmup),
           "--json"]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.clformer_timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": f"{' '.join(cmd)}: {e}"}
    if p.returncode != 0:
        tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
        return {"error": f"{' '.join(cmd)} exited {p.returncode}: {' | '.join(tail)}"}
    for line in reversed(p.stdout.strip().splitlines()):  # the last JSON object printed
        try:
            out = json.loads(line)
        except ValueError:
            continue
        if isinstance(out, dict):
            return out
    try:
        return json.loads(p.stdout)
    except ValueError:
        return {"error": f"{' '.join(cmd)} printed no JSON object"}


def main():
    p = argparse.ArgumentParser(description="PyTorch CPU baseline for clformer bench")
    p.add_argument("--config", choices=list(CONFIGS), default="tiny")
    p.add_argument("--batch", type=int, default=16, help="sentences per batch (B)")
    p.add_argument("--len", type=int, default=32, help="tokens per sentence (T)")
    p.add_argument("--steps", type=int, default=5, help="timed repetitions")
    p.add_argument("--warmup", type=int, default=2, help="untimed repetitions first")
    p.add_argument("--threads", type=int, default=None,
                   help="torch.set_num_threads(N); default: torch's own")
    p.add_argument("--clformer", metavar="BINARY", help="also run BINARY bench and compare")
    p.add_argument("--clformer-timeout", type=float, default=1800.0)
    args = p.parse_args()
    if not 3 <= args.len < MAX_LEN or args.batch < 1 or args.steps < 1 or args.warmup < 0:
        p.error(f"need 3 <= --len < {MAX_LEN}, --batch >= 1, --steps >= 1, --warmup >= 0")

    result = run_torch(args)
    if "openblas" not in result["blas"] and "mkl" not in result["blas"]:
        print(f"warning: PyTorch uses {result['blas']}, not OpenBLAS or MKL: its matrix products "
              "are far below this CPU's speed (apt-get install libopenblas0-pthread)",
              file=sys.stderr)
    if args.clformer:
        theirs = run_clformer(args)
        ratio = {}
        for key, short in (("train_tokens_per_s", "train"), ("translate_tokens_per_s", "translate")):
            if isinstance(theirs.get(key), (int, float)) and result[key] > 0:
                ratio[short] = theirs[key] / result[key]
        result = {"torch": result, "clformer": theirs, "ratio_clformer_over_torch": ratio}
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
