#!/usr/bin/python3
"""tinygrad baseline for `clformer bench`: the same model trained on the same OpenCL device.

Builds the pre-norm encoder-decoder Transformer of `clformer bench --config
tiny|small|base` (docs/MODEL.md: sinusoidal positions, ReLU, dropout 0.1, embeddings
scaled by sqrt(d_model), final LayerNorms, a generator Linear) in tinygrad, runs its
training step (forward, cross-entropy with ignore-index, backward, clip to norm 1.0,
Adam (0.9, 0.98, 1e-9)) under TinyJit, the way tinygrad is meant to be used, and
prints JSON:

  {"config", "batch", "len", "device", "params", "train_tokens_per_s", "train_step_ms",
   "first_step_s", "tinygrad_version"}

Counting is tools/reference/bench_torch.py's and `clformer bench`'s: a step over B
sentence pairs of T tokens counts B*T target tokens. Only training is measured:
tinygrad's greedy decoding without a key/value cache recompiles for every prefix
length, which would time its compiler, not its kernels.

The device is tinygrad's: `DEV=CL` runs on the first OpenCL device (PoCL's pthread
device when that is the only one), the same one `CLFORMER_DEVICE=pocl:pthread` picks.
Needs `pip install tinygrad` (tested with 0.14.0); the C build never does.
"""

import argparse
import json
import math
import os
import sys
import time

import numpy as np
from tinygrad import Context, Device, Tensor, TinyJit, nn
from tinygrad.nn.state import get_parameters

CONFIGS = {  # d_model, n_heads, d_ff, n_enc_layers, n_dec_layers (bench_torch.py's)
    "tiny": (64, 4, 256, 2, 2),
    "small": (256, 4, 1024, 3, 3),
    "base": (512, 8, 2048, 6, 6),
}
VOCAB = 8000
MAX_LEN = 256
PAD, SOS, EOS = 0, 1, 2
DROPOUT = 0.1


def sinusoid_table(n, d):
    pos = np.arange(n, dtype=np.float64)[:, None]
    i = np.arange(0, d, 2, dtype=np.float64)[None, :]
    angle = pos / np.power(10000.0, i / d)
    table = np.zeros((n, d), dtype=np.float32)
    table[:, 0::2], table[:, 1::2] = np.sin(angle), np.cos(angle)
    return table


class Attention:
    def __init__(self, d, h):
        self.h, self.q, self.k, self.v, self.o = h, *(nn.Linear(d, d) for _ in range(4))

    def __call__(self, x, mem, mask):
        b, t, d = x.shape
        split = lambda y: y.reshape(b, y.shape[1], self.h, d // self.h).transpose(1, 2)  # noqa: E731
        q, k, v = split(self.q(x)), split(self.k(mem)), split(self.v(mem))
        a = q.scaled_dot_product_attention(k, v, attn_mask=mask, dropout_p=DROPOUT)
        return self.o(a.transpose(1, 2).reshape(b, t, d))


class FeedForward:
    def __init__(self, d, ff):
        self.w1, self.w2 = nn.Linear(d, ff), nn.Linear(ff, d)

    def __call__(self, x):
        return self.w2(self.w1(x).relu().dropout(DROPOUT))


class EncoderLayer:
    def __init__(self, d, h, ff):
        self.attn, self.ff = Attention(d, h), FeedForward(d, ff)
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)

    def __call__(self, x, src_mask):
        y = self.ln1(x)
        x = x + self.attn(y, y, src_mask).dropout(DROPOUT)
        return x + self.ff(self.ln2(x)).dropout(DROPOUT)


class DecoderLayer:
    def __init__(self, d, h, ff):
        self.self_attn, self.cross_attn, self.ff = Attention(d, h), Attention(d, h), FeedForward(d, ff)
        self.ln1, self.ln2, self.ln3 = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)

    def __call__(self, x, mem, self_mask, cross_mask):
        y = self.ln1(x)
        x = x + self.self_attn(y, y, self_mask).dropout(DROPOUT)
        x = x + self.cross_attn(self.ln2(x), mem, cross_mask).dropout(DROPOUT)
        return x + self.ff(self.ln3(x)).dropout(DROPOUT)


class Seq2Seq:
    def __init__(self, d, h, ff, n_enc, n_dec):
        self.d = d
        self.src_embed, self.tgt_embed = nn.Embedding(VOCAB, d), nn.Embedding(VOCAB, d)
        self.pos = Tensor(sinusoid_table(MAX_LEN, d))  # a constant, not a parameter
        self.enc = [EncoderLayer(d, h, ff) for _ in range(n_enc)]
        self.dec = [DecoderLayer(d, h, ff) for _ in range(n_dec)]
        self.enc_norm, self.dec_norm = nn.LayerNorm(d), nn.LayerNorm(d)
        self.generator = nn.Linear(d, VOCAB)

    def embed(self, table, tok):
        return (table(tok) * math.sqrt(self.d) + self.pos[: tok.shape[1]]).dropout(DROPOUT)

    def __call__(self, src, tgt_in):
        t = tgt_in.shape[1]
        # boolean masks, True = attend (tinygrad's convention); padding keys hidden
        src_keys = (src != PAD).reshape(src.shape[0], 1, 1, src.shape[1])
        causal = Tensor.ones(t, t).tril().cast("bool").reshape(1, 1, t, t)
        tgt_keys = (tgt_in != PAD).reshape(tgt_in.shape[0], 1, 1, t)
        x = self.embed(self.src_embed, src)
        for layer in self.enc:
            x = layer(x, src_keys)
        mem = self.enc_norm(x)
        y = self.embed(self.tgt_embed, tgt_in)
        for layer in self.dec:
            y = layer(y, mem, causal * tgt_keys, src_keys)
        return self.generator(self.dec_norm(y))


def random_batch(rng, b, t):
    """bench_torch.py's full-length sentences: <sos> words <eos>, the target one longer."""
    src = np.concatenate([np.full((b, 1), SOS), rng.integers(4, VOCAB, (b, t - 2)),
                          np.full((b, 1), EOS)], 1)
    tgt = np.concatenate([np.full((b, 1), SOS), rng.integers(4, VOCAB, (b, t - 1)),
                          np.full((b, 1), EOS)], 1)
    return src.astype(np.int32), tgt.astype(np.int32)


def main():
    p = argparse.ArgumentParser(description="tinygrad baseline for clformer bench (training)")
    p.add_argument("--config", choices=list(CONFIGS), default="tiny")
    p.add_argument("--batch", type=int, default=32, help="sentences per batch (B)")
    p.add_argument("--len", type=int, default=32, help="tokens per sentence (T)")
    p.add_argument("--steps", type=int, default=5, help="timed steps")
    p.add_argument("--warmup", type=int, default=3,
                   help="untimed steps first (>= 2: TinyJit captures on the second)")
    args = p.parse_args()
    if not 3 <= args.len < MAX_LEN or args.batch < 1 or args.steps < 1 or args.warmup < 2:
        p.error(f"need 3 <= --len < {MAX_LEN}, --batch >= 1, --steps >= 1, --warmup >= 2")

    Tensor.manual_seed(0)
    model = Seq2Seq(*CONFIGS[args.config])
    params = [t for t in get_parameters(model) if t is not model.pos]
    opt = nn.optim.Adam(params, lr=1e-4, b1=0.9, b2=0.98, eps=1e-9)

    @TinyJit
    def step(src, tgt_in, labels):
        with Context(TRAINING=1):  # dropout and the optimizer on
            opt.zero_grad()
            logits = model(src, tgt_in)
            loss = logits.sparse_categorical_crossentropy(labels, ignore_index=PAD)
            loss.backward()
            # per-tensor sums first: one kernel over every gradient has more
            # arguments than PoCL links
            squares = [(t.grad * t.grad).sum().realize() for t in params]
            norm = Tensor.stack(*squares).sum().sqrt()
            scale = (1.0 / (norm + 1e-6)).minimum(1.0)
            for t in params:
                t.grad = t.grad * scale
            opt.step()
        return loss.realize()

    rng = np.random.default_rng(0)
    batches = [random_batch(rng, args.batch, args.len) for _ in range(args.warmup + args.steps)]

    def run(src, tgt):
        return step(Tensor(src), Tensor(tgt[:, :-1]), Tensor(tgt[:, 1:])).item()

    start = time.perf_counter()
    run(*batches[0])
    first_s = time.perf_counter() - start
    for b in batches[1:args.warmup]:
        run(*b)
    start = time.perf_counter()
    for b in batches[args.warmup:]:
        loss = run(*b)
    step_s = (time.perf_counter() - start) / args.steps
    if not math.isfinite(loss):
        print(f"error: the training loss is {loss}", file=sys.stderr)
        return 1
    import tinygrad
    print(json.dumps({
        "config": args.config, "batch": args.batch, "len": args.len, "device": Device.DEFAULT,
        "params": sum(int(np.prod(t.shape)) for t in params),
        "train_tokens_per_s": args.batch * args.len / step_s, "train_step_ms": 1e3 * step_s,
        "first_step_s": first_s, "last_loss": loss,
        "tinygrad_version": getattr(tinygrad, "__version__", "unknown"),
        "opencl_device": os.environ.get("DEV", "")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
