#!/usr/bin/python3
"""PyTorch side of clformer's parity tests (docs/MODEL.md).

Builds docs/MODEL.md's module tree on torch.nn.Transformer and
  generate --out tests/data/parity
      writes one fixture per configuration: a clformer checkpoint (model.safetensors)
      and what 10 training steps in float64 produce from it (fixture.safetensors);
      the format is described in tests/data/parity/README.md;
  check-checkpoint MODEL.safetensors
      loads a clformer checkpoint into the module tree with load_state_dict(strict=True)
      and prints OK or what does not match (exit status 1);
  autocast --out tests/data/parity [--dtype float16]
      trains a fixture's 10 steps under torch.autocast("cpu", dtype=torch.bfloat16) with
      float32 master weights and writes fixture_bf16.safetensors next to it; with
      --dtype float16, under torch.autocast("cuda", dtype=torch.float16) with a
      GradScaler on an NVIDIA GPU (PyTorch has no CPU fp16 autocast before 2.x), into
      fixture_fp16.safetensors;
  logits MODEL.safetensors (--src-ids/--tgt-ids | --batch FILE) [--out F] [--compare F]
      computes the logits of a checkpoint for a batch, so a test can compare clformer's
      logits with PyTorch's for the same file (exit status 1 when --compare fails);
  roundtrip --clformer BINARY
      the whole round trip: clformer trains a PyTorch-made checkpoint for a few steps
      (dropout on), PyTorch loads the result with load_state_dict(strict=True), and
      `clformer logits` and PyTorch must give the same logits for the same batch.

Run with Debian's PyTorch (/usr/bin/python3). Only torch and numpy are used; the
safetensors files are written and read here with struct + json. Nothing in the C build
depends on this script: its outputs are committed.
"""

import argparse
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

PAD, SOS, EOS, UNK = 0, 1, 2, 3
SPECIALS = ["<pad>", "<sos>", "<eos>", "<unk>"]
BETAS = (0.9, 0.98)
ADAM_EPS = 1e-9
STEPS = 10

# ----------------------------------------------------------------------------
# safetensors: 8-byte little-endian header length, a JSON header padded with
# spaces to a multiple of 8, then the tensors' bytes back to back.

_DTYPES = {"F64": "<f8", "F32": "<f4", "I64": "<i8", "I32": "<i4"}
_NAMES = {np.dtype(v): k for k, v in _DTYPES.items()}


def write_safetensors(path, tensors, metadata):
    """tensors: name -> numpy array (float64/float32/int64/int32); metadata: str -> str.
    Wider dtypes come first, so every tensor starts at a multiple of its element size
    (the spec forbids gaps between tensors); names in order within a dtype."""
    order = sorted(tensors, key=lambda n: (-tensors[n].dtype.itemsize, n))
    header = {"__metadata__": dict(metadata)}
    blobs, offset = [], 0
    for name in order:
        a = np.ascontiguousarray(tensors[name])
        code = _NAMES[a.dtype.newbyteorder("<") if a.dtype.byteorder == ">" else a.dtype]
        data = a.astype(_DTYPES[code], copy=False).tobytes()
        header[name] = {"dtype": code, "shape": list(a.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for data in blobs:
            f.write(data)


def read_safetensors(path):
    """Returns (name -> numpy array, metadata dict)."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{path}: too short for a safetensors file")
    (n,) = struct.unpack("<Q", raw[:8])
    if 8 + n > len(raw):
        raise ValueError(f"{path}: header length {n} runs past the end of the file")
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    metadata = header.pop("__metadata__", {}) or {}
    base, tensors = 8 + n, {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        data = raw[base + begin:base + end]
        if info["dtype"] in ("BF16", "F16"):
            # 16-bit weights (clformer export --dtype): read as float32, exactly;
            # bfloat16 is the top half of a float32's bits
            if info["dtype"] == "F16":
                a = np.frombuffer(data, dtype="<f2").astype(np.float32)
            else:
                a = (np.frombuffer(data, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        elif info["dtype"] in _DTYPES:
            a = np.frombuffer(data, dtype=_DTYPES[info["dtype"]])
        else:
            raise ValueError(f"{path}: tensor {name} has unsupported dtype {info['dtype']}")
        tensors[name] = a.reshape(info["shape"]).copy()
    return tensors, metadata


# ----------------------------------------------------------------------------
# The model (docs/MODEL.md): embeddings, positions, nn.Transformer, generator.

CONFIG_KEYS = ["d_model", "n_heads", "d_ff", "n_enc_layers", "n_dec_layers", "src_vocab",
               "tgt_vocab", "max_len", "norm_first", "activation", "positional", "dropout",
               "ln_eps", "label_smoothing", "share_tgt_embed"]


def sinusoid_table(max_len, d):
    """P[p, 2i] = sin(p / 10000^(2i/d)), P[p, 2i+1] = cos(same), in float64."""
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    two_i = torch.arange(0, d, 2, dtype=torch.float64)
    angle = pos / torch.pow(torch.tensor(10000.0, dtype=torch.float64), two_i / d)
    table = torch.zeros(max_len, d, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : d // 2])
    return table


class Seq2Seq(nn.Module):
    """The module tree whose state_dict() names are clformer's checkpoint names.
    Dropout is a constructor argument (not the config's) so that a reference run can
    train with dropout 0 in train mode, which keeps PyTorch off its fused eval path."""

    def __init__(self, cfg, dropout):
        super().__init__()
        d = cfg["d_model"]
        self.d_model = d
        self.src_embed = nn.Embedding(cfg["src_vocab"], d)
        self.tgt_embed = nn.Embedding(cfg["tgt_vocab"], d)
        if cfg["positional"] == "learned":
            self.pos_embed = nn.Embedding(cfg["max_len"], d)
        elif cfg["positional"] == "sinusoidal":
            self.pos_embed = None
            self.register_buffer("pos_table", sinusoid_table(cfg["max_len"], d), persistent=False)
        else:
            raise ValueError(f"positional must be 'sinusoidal' or 'learned', not {cfg['positional']!r}")
        if cfg["activation"] not in ("relu", "gelu"):
            raise ValueError(f"activation must be 'relu' or 'gelu', not {cfg['activation']!r}")
        self.transformer = nn.Transformer(
            d_model=d, nhead=cfg["n_heads"], num_encoder_layers=cfg["n_enc_layers"],
            num_decoder_layers=cfg["n_dec_layers"], dim_feedforward=cfg["d_ff"],
            dropout=dropout, activation=cfg["activation"], layer_norm_eps=cfg["ln_eps"],
            batch_first=True, norm_first=cfg["norm_first"])
        self.generator = nn.Linear(d, cfg["tgt_vocab"])
        if cfg["share_tgt_embed"]:
            self.generator.weight = self.tgt_embed.weight
        if cfg.get("share_all_embed", False):  # fairseq's --share-all-embeddings
            if cfg["src_vocab"] != cfg["tgt_vocab"] or not cfg["share_tgt_embed"]:
                raise ValueError("share_all_embed needs share_tgt_embed and src_vocab == tgt_vocab")
            self.src_embed.weight = self.tgt_embed.weight
        self.embed_dropout = nn.Dropout(dropout)

    def embed(self, table, tok):
        n = tok.shape[1]
        pos = self.pos_embed.weight[:n] if self.pos_embed is not None else self.pos_table[:n]
        x = table(tok) * math.sqrt(self.d_model) + pos.to(table.weight.dtype)
        return self.embed_dropout(x)

    def encode(self, src):
        return self.transformer.encoder(self.embed(self.src_embed, src),
                                        src_key_padding_mask=src == PAD)

    def decoder_states(self, memory, src, tgt_in):
        """The decoder stack's output [B, T, d] (after decoder.norm), before the generator."""
        t = tgt_in.shape[1]
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool, device=tgt_in.device), diagonal=1)  # True = hidden
        return self.transformer.decoder(self.embed(self.tgt_embed, tgt_in), memory,
                                        tgt_mask=causal, tgt_key_padding_mask=tgt_in == PAD,
                                        memory_key_padding_mask=src == PAD)

    def decode(self, memory, src, tgt_in):
        return self.generator(self.decoder_states(memory, src, tgt_in))

    def forward(self, src, tgt_in):
        """src [B, S], tgt_in [B, T] (int64) -> logits [B, T, tgt_vocab]."""
        return self.decode(self.encode(src), src, tgt_in)


def build_model(cfg, dtype):
    model = Seq2Seq(cfg, dropout=0.0).to(dtype)
    model.train()
    return model


def state_as_float32(model):
    """state_dict as float32 numpy arrays (tied weights appear under both names)."""
    return {k: v.detach().to(torch.float32).numpy().copy() for k, v in model.state_dict().items()}


def load_float32_state(model, state):
    sd = {k: torch.from_numpy(np.asarray(v, dtype=np.float32)).to(next(model.parameters()).dtype)
          for k, v in state.items()}
    model.load_state_dict(sd, strict=True)


def init_parameters(model, gen):
    """Xavier-uniform for every rank-2 parameter (docs/MODEL.md). Biases and LayerNorm
    parameters are drawn away from 0/1 (uniform +-0.1 around them), unlike docs/MODEL.md's
    initialisation, so that every parameter already shapes the step-1 logits and a C
    kernel that drops one of them fails the test."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 2:
                bound = math.sqrt(6.0 / (p.shape[0] + p.shape[1]))
                p.uniform_(-bound, bound, generator=gen)
            elif "norm" in name and name.endswith(".weight"):
                p.uniform_(0.9, 1.1, generator=gen)
            else:
                p.uniform_(-0.1, 0.1, generator=gen)


# ----------------------------------------------------------------------------
# Training reference.

def make_optimizer(model, opt):
    """Adam or AdamW; weight decay on rank-2 parameters only (a tied weight is one
    parameter, so it is decayed once)."""
    params = list(model.parameters())  # deduplicates tied weights
    decay = [p for p in params if p.dim() == 2]
    other = [p for p in params if p.dim() != 2]
    groups = [{"params": decay, "weight_decay": opt["weight_decay"]},
              {"params": other, "weight_decay": 0.0}]
    common = dict(lr=opt["lr"], betas=(opt["beta1"], opt["beta2"]), eps=opt["eps"], foreach=False)
    if opt["optimizer"] == "adamw":
        return torch.optim.AdamW(groups, **common)
    if opt["optimizer"] == "adam":
        if opt["weight_decay"] != 0.0:
            raise ValueError("docs/MODEL.md's weight decay is decoupled: use adamw for weight_decay > 0")
        return torch.optim.Adam(groups, **common)
    raise ValueError(f"optimizer must be adam or adamw, not {opt['optimizer']!r}")


def train_reference(cfg, opt, init_state, src, tgt, dtype, autocast=None, device="cpu"):
    """Trains len(src) steps from the float32 initial weights, computing in `dtype`.
    src [steps, B, S], tgt [steps, B, T+1] int arrays. Returns a dict of results.
    autocast=torch.bfloat16 runs the forward pass and the loss under
    torch.autocast(device, dtype=autocast) (dtype must then be float32: the master
    weights, their gradients and Adam's state stay float32); backward runs outside
    the autocast region, as PyTorch recommends. autocast=torch.float16 scales the
    loss with a GradScaler (PyTorch's defaults: 65536, halved on an overflow, which
    skips the step; clformer's fp16 rule) and clips the unscaled gradients."""
    if autocast is not None and dtype != torch.float32:
        raise ValueError("autocast needs float32 master weights")
    model = build_model(cfg, dtype)
    load_float32_state(model, init_state)
    model.to(device)
    optim = make_optimizer(model, opt)
    scaler = grad_scaler(device) if autocast == torch.float16 else None
    loss_fn = nn.CrossEntropyLoss(ignore_index=PAD, label_smoothing=cfg["label_smoothing"])
    # every name of every parameter: the state_dict holds parameters only (pos_table is
    # not persistent), and a tied one under each of its two or three names, which
    # named_parameters() would list once
    names = list(model.state_dict())
    clip = opt["clip"] if opt["clip"] > 0 else float("inf")  # inf: measure, never scale
    out = {"losses": [], "grad_norms": []}
    for step in range(len(src)):
        s = torch.from_numpy(src[step].astype(np.int64)).to(device)
        t = torch.from_numpy(tgt[step].astype(np.int64)).to(device)
        optim.zero_grad(set_to_none=True)
        with torch.autocast(device, dtype=autocast or torch.bfloat16, enabled=autocast is not None):
            logits = model(s, t[:, :-1])
            loss = loss_fn(logits.reshape(-1, logits.shape[-1]), t[:, 1:].reshape(-1))
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.unscale_(optim)
        else:
            loss.backward()
        if step == 0:
            out["logits"] = logits.detach().to(torch.float32).cpu().numpy()
            out["grads"] = {k: model.get_parameter(k).grad.detach().to(torch.float32).cpu().numpy().copy()
                            for k in names}
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        out["losses"].append(loss.item())
        out["grad_norms"].append(norm.item())
        if scaler is not None:
            scaler.step(optim)
            scaler.update()
        else:
            optim.step()
    model.to("cpu")
    out["final"] = state_as_float32(model)
    return out


def grad_scaler(device):
    """torch.amp.GradScaler (PyTorch 2.3 on), torch.cuda.amp.GradScaler before."""
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler(device, init_scale=65536.0, growth_interval=2000)
    return torch.cuda.amp.GradScaler(init_scale=65536.0, growth_interval=2000)


def greedy_decode(cfg, state, src_rows):
    """Greedy decoding with the float32 weights `state`, computed in float64: feed <sos>,
    append the argmax over all tgt_vocab logits (no token excluded), stop after <eos> or
    when the decoder input holds max_len tokens (so at most max_len - 1 generated ids)."""
    model = build_model(cfg, torch.float64)
    load_float32_state(model, state)
    max_len = cfg["max_len"]
    out = np.full((len(src_rows), max_len), -1, dtype=np.int32)
    margin = np.full((len(src_rows), max_len), -1.0, dtype=np.float64)
    with torch.no_grad():
        for r, row in enumerate(src_rows):
            src = torch.from_numpy(row.astype(np.int64))[None, :]
            memory = model.encode(src)
            ys = [SOS]
            for k in range(max_len - 1):
                states = model.decoder_states(memory, src, torch.tensor([ys], dtype=torch.int64))
                logits = model.generator(states[0, -1])
                top = torch.topk(logits, 2)
                nxt = int(torch.argmax(logits))
                out[r, k] = nxt
                margin[r, k] = (top.values[0] - top.values[1]).item()
                ys.append(nxt)
                if nxt == EOS:
                    break
    return out, margin


# ----------------------------------------------------------------------------
# Fixture configurations and data.

# Common tokens a real vocabulary holds, including ones a JSON writer must escape.
PUNCT = ['.', ',', '"', "'", '?', 'café', 'naïve', '\\']


def make_vocab(size, prefix, seed):
    words = [f"{prefix}{i}" for i in range(size)]
    rng = np.random.default_rng(seed)
    for p in PUNCT:  # scatter real-looking tokens among the made-up ones
        if size > 12:
            words[int(rng.integers(4, size))] = p
    vocab = SPECIALS + words[4:]
    # keep tokens unique (a punctuation token may have landed twice)
    seen, unique = set(), []
    for i, w in enumerate(vocab):
        unique.append(w if w not in seen else f"{prefix}{i}")
        seen.add(unique[-1])
    return unique


def model_config(**kw):
    cfg = dict(d_model=32, n_heads=4, d_ff=64, n_enc_layers=2, n_dec_layers=2, src_vocab=30,
               tgt_vocab=34, max_len=16, norm_first=True, activation="relu",
               positional="sinusoidal", dropout=0.0, ln_eps=1e-5, label_smoothing=0.0,
               share_tgt_embed=False)
    cfg.update(kw)
    out = {k: cfg[k] for k in CONFIG_KEYS}
    if cfg.get("share_all_embed"):  # written only when set, as clformer does
        out["share_all_embed"] = True
    return out


def opt_config(optimizer, lr, weight_decay, clip, label_smoothing):
    return {"steps": STEPS, "optimizer": optimizer, "lr": lr, "beta1": BETAS[0],
            "beta2": BETAS[1], "eps": ADAM_EPS, "weight_decay": weight_decay, "clip": clip,
            "label_smoothing": label_smoothing}


# name -> (model config, optimizer config, batch B, source width S, target width T+1, n greedy)
FIXTURES = {
    "a_prenorm_relu_sin": (
        model_config(d_model=32, n_heads=4, d_ff=48, src_vocab=30, tgt_vocab=34),
        opt_config("adam", 2e-3, 0.0, 1.0, 0.0), 4, 10, 11, 3),
    "b_postnorm_gelu_learned": (
        model_config(d_model=24, n_heads=3, d_ff=48, src_vocab=25, tgt_vocab=29,
                     norm_first=False, activation="gelu", positional="learned",
                     label_smoothing=0.1),
        opt_config("adam", 2e-3, 0.0, 1.0, 0.1), 5, 9, 11, 3),
    "c_prenorm_gelu_tied": (
        model_config(d_model=16, n_heads=2, d_ff=64, src_vocab=36, tgt_vocab=40,
                     activation="gelu", label_smoothing=0.1, share_tgt_embed=True),
        opt_config("adamw", 3e-3, 0.01, 0.5, 0.1), 3, 11, 10, 3),
    "d_postnorm_relu_learned": (
        model_config(d_model=16, n_heads=2, d_ff=48, src_vocab=20, tgt_vocab=22,
                     norm_first=False, positional="learned"),
        opt_config("adamw", 2e-3, 0.1, 0.0, 0.0), 4, 10, 11, 3),
    "e_tiny_oclgrind": (
        model_config(d_model=8, n_heads=2, d_ff=16, n_enc_layers=1, n_dec_layers=1,
                     src_vocab=12, tgt_vocab=12, max_len=8, activation="gelu",
                     positional="learned", label_smoothing=0.1),
        opt_config("adamw", 3e-3, 0.01, 1.0, 0.1), 2, 6, 6, 2),
    # one joint vocabulary, all three embeddings one tensor: its gradient sums the
    # source embedding's, the target embedding's and the generator's
    "f_prenorm_relu_shared_all": (
        model_config(d_model=16, n_heads=2, d_ff=48, src_vocab=32, tgt_vocab=32,
                     label_smoothing=0.1, share_tgt_embed=True, share_all_embed=True),
        opt_config("adamw", 3e-3, 0.01, 1.0, 0.1), 4, 10, 11, 3),
}


def sentence_pair(rng, src_words, tgt_words, cfg, src_map):
    """A source sentence of src_words tokens and a target of tgt_words tokens that
    depends on it (a made-up word-by-word translation), both as <sos> ... <eos>."""
    s = rng.integers(4, cfg["src_vocab"], size=src_words)
    t = [src_map[s[i % src_words]] for i in range(tgt_words)]
    return [SOS, *s.tolist(), EOS], [SOS, *t, EOS]


def make_batch(rng, cfg, b, s_width, t_width, src_map):
    """A right-padded batch [b, s_width], [b, t_width]. One row fills the source width and
    has a short target, another fills the target width and has a short source, so every
    batch has both full-width rows and padding on both sides; the rest is random."""
    src = np.zeros((b, s_width), dtype=np.int32)
    tgt = np.zeros((b, t_width), dtype=np.int32)
    full_src, full_tgt = rng.choice(b, size=2, replace=False)
    for r in range(b):
        ns = int(rng.integers(1, s_width - 1))       # words; +2 specials < s_width
        nt = int(rng.integers(1, t_width - 1))
        if r == full_src:
            ns, nt = s_width - 2, int(rng.integers(1, t_width - 2))
        if r == full_tgt:
            ns, nt = int(rng.integers(1, s_width - 2)), t_width - 2
        s, t = sentence_pair(rng, ns, nt, cfg, src_map)
        src[r, :len(s)] = s
        tgt[r, :len(t)] = t
    return src, tgt


def build_fixture(name, seed):
    cfg, opt, b, s_width, t_width, n_greedy = FIXTURES[name]
    gen = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    src_map = rng.integers(4, cfg["tgt_vocab"], size=cfg["src_vocab"])
    batches = [make_batch(rng, cfg, b, s_width, t_width, src_map) for _ in range(STEPS)]
    src = np.stack([x[0] for x in batches])
    tgt = np.stack([x[1] for x in batches])
    greedy_src = make_batch(rng, cfg, n_greedy, s_width, t_width, src_map)[0]

    init_model = build_model(cfg, torch.float32)
    init_parameters(init_model, gen)
    init_state = state_as_float32(init_model)

    ref = train_reference(cfg, opt, init_state, src, tgt, torch.float64)
    # The same run in float32 shows how far fp32 rounding alone moves the losses: a
    # configuration whose losses are this sensitive could not hold the C side to 1e-4.
    ref32 = train_reference(cfg, opt, init_state, src, tgt, torch.float32)
    drift = float(np.max(np.abs(np.array(ref["losses"]) - np.array(ref32["losses"]))))
    if drift > 2e-5:
        raise RuntimeError(f"{name}: float32 losses drift {drift:.2e} from float64")
    greedy_out, greedy_margin = greedy_decode(cfg, ref["final"], greedy_src)

    src_vocab = make_vocab(cfg["src_vocab"], "s", seed + 1)
    tgt_vocab = make_vocab(cfg["tgt_vocab"], "t", seed + 2)
    if cfg.get("share_all_embed"):
        src_vocab = tgt_vocab = make_vocab(cfg["tgt_vocab"], "w", seed + 2)
    model_meta = checkpoint_metadata(cfg, src_vocab, tgt_vocab)
    fixture = {"src": src, "tgt": tgt,
               "losses": np.array(ref["losses"], dtype=np.float64),
               "grad_norms": np.array(ref["grad_norms"], dtype=np.float64),
               "logits": ref["logits"],
               "greedy_src": greedy_src.astype(np.int32), "greedy_out": greedy_out,
               "greedy_margin": greedy_margin}
    for k, v in ref["grads"].items():
        fixture["grad." + k] = v
    for k, v in ref["final"].items():
        fixture["final." + k] = v
    fixture_meta = {"clformer.fixture": json.dumps(opt)}
    return init_state, model_meta, fixture, fixture_meta, ref, drift


def checkpoint_metadata(cfg, src_vocab, tgt_vocab):
    return {"clformer.format": "1",
            "clformer.config": json.dumps(cfg),
            "clformer.src_vocab": json.dumps(src_vocab, ensure_ascii=False),
            "clformer.tgt_vocab": json.dumps(tgt_vocab, ensure_ascii=False)}


def cmd_generate(args):
    torch.set_num_threads(1)  # one thread: the same float64 sums in the same order
    names = args.only or list(FIXTURES)
    for i, name in enumerate(FIXTURES):
        if name not in names:
            continue
        init_state, model_meta, fixture, fixture_meta, ref, drift = build_fixture(name, 1000 + i)
        d = os.path.join(args.out, name)
        os.makedirs(d, exist_ok=True)
        write_safetensors(os.path.join(d, "model.safetensors"), init_state, model_meta)
        write_safetensors(os.path.join(d, "fixture.safetensors"), fixture, fixture_meta)
        size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
        losses = " ".join(f"{x:.5f}" for x in ref["losses"])
        print(f"{name}: {size} bytes, fp32 drift {drift:.1e}, losses {losses}")
    return 0


# ----------------------------------------------------------------------------
# bfloat16: the same 10 steps under PyTorch's CPU autocast (tests/data/parity/README.md).

# The fixtures with a bf16 reference: two shapes of model (pre-norm ReLU with sinusoids,
# post-norm GELU with learned positions and label smoothing) and the simulator's tiny one.
AUTOCAST_FIXTURES = ["a_prenorm_relu_sin", "b_postnorm_gelu_learned", "e_tiny_oclgrind"]


def train_half_everywhere(cfg, opt, init_state, src, tgt, half=torch.bfloat16, device="cpu"):
    """The steps with every activation and activation gradient held in bfloat16 (`half`): a
    bfloat16 copy of the model, loaded each step from float32 master weights (rounded to
    nearest even), runs forward and backward; the loss is taken on its logits widened to
    float32; its weight gradients, widened, are clipped and applied by a float32 optimizer.
    half=torch.float16 does the same in float16, with the loss scaled by a fixed 65536
    (no step of these fixtures overflows at that scale; one that did would raise).
    Closer to clformer's rounding points than autocast (it also rounds LayerNorm outputs,
    residual sums and attention probabilities) but not the same: PyTorch's bfloat16 CPU
    kernels round some intermediates clformer keeps in fp32 (a linear layer's bias is added
    to a rounded product; weight gradients are rounded to bfloat16). Only for comparison."""
    master = build_model(cfg, torch.float32)
    load_float32_state(master, init_state)
    master.to(device)
    work = build_model(cfg, half).to(device)
    optim = make_optimizer(master, opt)
    scale = 65536.0 if half == torch.float16 else 1.0
    loss_fn = nn.CrossEntropyLoss(ignore_index=PAD, label_smoothing=cfg["label_smoothing"])
    clip = opt["clip"] if opt["clip"] > 0 else float("inf")
    pairs = list(zip(master.parameters(), work.parameters()))
    losses = []
    for step in range(len(src)):
        with torch.no_grad():
            for p, q in pairs:
                q.copy_(p)  # rounds to nearest even
        work.zero_grad(set_to_none=True)
        s = torch.from_numpy(src[step].astype(np.int64)).to(device)
        t = torch.from_numpy(tgt[step].astype(np.int64)).to(device)
        logits = work(s, t[:, :-1]).float()
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), t[:, 1:].reshape(-1))
        (loss * scale).backward()
        for p, q in pairs:
            p.grad = q.grad.float() / scale
            if not torch.isfinite(p.grad).all():
                raise RuntimeError(f"{half} everywhere: step {step + 1} overflowed at loss scale {scale}")
        torch.nn.utils.clip_grad_norm_(master.parameters(), clip)
        losses.append(loss.item())
        optim.step()
    return losses


def cmd_autocast(args):
    """For each fixture directory under args.out (made by `generate`), trains its 10 steps
    under torch.autocast("cpu", dtype=torch.bfloat16) and writes fixture_bf16.safetensors;
    with --dtype float16, under torch.autocast("cuda", dtype=torch.float16) and a
    GradScaler, into fixture_fp16.safetensors."""
    torch.set_num_threads(1)
    half, device, tag = torch.bfloat16, "cpu", "bf16"
    if args.dtype == "float16":
        if not torch.cuda.is_available():
            print("autocast --dtype float16 needs an NVIDIA GPU (torch.cuda): PyTorch has no CPU "
                  "float16 autocast in the versions this script targets", file=sys.stderr)
            return 1
        half, device, tag = torch.float16, "cuda", "fp16"
        # the same arithmetic on every run: no TF32, fp16 products summed in fp32
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    for name in args.only or AUTOCAST_FIXTURES:
        d = os.path.join(args.out, name)
        try:
            cfg, init_state, _ = load_checkpoint(os.path.join(d, "model.safetensors"))
            fx, meta = read_safetensors(os.path.join(d, "fixture.safetensors"))
        except (OSError, ValueError) as e:
            print(f"autocast: {e} (make the fixtures first: generate --out {args.out})", file=sys.stderr)
            return 1
        opt = json.loads(meta["clformer.fixture"])
        src, tgt = fx["src"], fx["tgt"]
        fp32 = train_reference(cfg, opt, init_state, src, tgt, torch.float32, device=device)
        bf16 = train_reference(cfg, opt, init_state, src, tgt, torch.float32, autocast=half, device=device)
        everywhere = train_half_everywhere(cfg, opt, init_state, src, tgt, half, device)
        out = {"losses": np.array(bf16["losses"], dtype=np.float64),
               "grad_norms": np.array(bf16["grad_norms"], dtype=np.float64),
               "losses_fp32": np.array(fp32["losses"], dtype=np.float64),
               f"losses_{tag}_everywhere": np.array(everywhere, dtype=np.float64)}
        info = {"torch": torch.__version__.split("+")[0], "autocast": device,
                "dtype": args.dtype, "steps": len(src), "threads": 1}
        if device == "cuda":
            info["gpu"] = torch.cuda.get_device_name(0)
        path = os.path.join(d, f"fixture_{tag}.safetensors")
        tmp = path + ".tmp"
        write_safetensors(tmp, out, {"clformer.autocast": json.dumps(info)})
        os.replace(tmp, path)
        def row(a):
            return " ".join(f"{x:+.1e}" for x in a)
        every = out[f"losses_{tag}_everywhere"]
        print(f"{name}: autocast {tag} losses {' '.join(f'{x:.5f}' for x in out['losses'])}")
        print(f"  {tag} - fp32            {row(out['losses'] - out['losses_fp32'])}"
              f"  (max {np.max(np.abs(out['losses'] - out['losses_fp32'])):.1e})")
        print(f"  everywhere - autocast  {row(every - out['losses'])}"
              f"  (max {np.max(np.abs(every - out['losses'])):.1e})")
    return 0


# ----------------------------------------------------------------------------
# Loading a clformer checkpoint.

def load_checkpoint(path):
    """Reads a clformer checkpoint; returns (config, model-state tensors, vocabs).
    Raises ValueError naming the problem. Optimizer state (optim.*) is set aside."""
    tensors, meta = read_safetensors(path)
    if meta.get("clformer.format") != "1":
        raise ValueError(f"metadata clformer.format is {meta.get('clformer.format')!r}, expected \"1\"")
    for key in ("clformer.config", "clformer.src_vocab", "clformer.tgt_vocab"):
        if key not in meta:
            raise ValueError(f"metadata {key} is missing")
    cfg = json.loads(meta["clformer.config"])
    missing = [k for k in CONFIG_KEYS if k not in cfg]
    if missing:
        raise ValueError(f"clformer.config lacks {', '.join(missing)}")
    vocabs = {}
    for side in ("src", "tgt"):
        v = json.loads(meta[f"clformer.{side}_vocab"])
        if len(v) != cfg[f"{side}_vocab"]:
            raise ValueError(f"clformer.{side}_vocab has {len(v)} tokens, config says {cfg[side + '_vocab']}")
        if v[:4] != SPECIALS:
            raise ValueError(f"clformer.{side}_vocab starts {v[:4]}, expected {SPECIALS}")
        vocabs[side] = v
    state = {k: v for k, v in tensors.items() if not k.startswith("optim.")}
    for k, v in state.items():
        if v.dtype != np.float32:
            raise ValueError(f"tensor {k} is {v.dtype}, checkpoints hold float32")
    return cfg, state, vocabs


def cmd_check_checkpoint(args):
    try:
        cfg, state, _ = load_checkpoint(args.model)
        model = build_model(cfg, torch.float32)
        if cfg["share_tgt_embed"]:
            a, b = state.get("generator.weight"), state.get("tgt_embed.weight")
            if a is not None and b is not None and not np.array_equal(a, b):
                raise ValueError("share_tgt_embed is true but generator.weight differs from tgt_embed.weight")
        if cfg.get("share_all_embed", False):
            a, b = state.get("src_embed.weight"), state.get("tgt_embed.weight")
            if a is not None and b is not None and not np.array_equal(a, b):
                raise ValueError("share_all_embed is true but src_embed.weight differs from tgt_embed.weight")
        expected = model.state_dict()
        for k, v in state.items():
            if k in expected and tuple(expected[k].shape) != v.shape:
                raise ValueError(f"{k} has shape {list(v.shape)}, the config implies {list(expected[k].shape)}")
        model.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()}, strict=True)
    except (OSError, ValueError, KeyError, RuntimeError) as e:
        print(f"MISMATCH: {e}")
        return 1
    n = sum(p.numel() for p in model.parameters())
    print(f"OK: {len(state)} tensors, {n} parameters (d_model {cfg['d_model']}, "
          f"{cfg['n_enc_layers']}+{cfg['n_dec_layers']} layers)")
    return 0


# ----------------------------------------------------------------------------
# Logits of a checkpoint, for the clformer <-> PyTorch round trip.

def parse_ids(text):
    return [int(x) for x in text.replace(",", " ").split()]


def cmd_logits(args):
    torch.set_num_threads(1)
    cfg, state, _ = load_checkpoint(args.model)
    if args.batch:
        batch, _ = read_safetensors(args.batch)
        src, tgt_in = batch["src"], batch["tgt_in"]
    else:
        if args.src_ids is None or args.tgt_ids is None:
            print("logits: give --batch FILE, or both --src-ids and --tgt-ids", file=sys.stderr)
            return 2
        src = np.array([parse_ids(args.src_ids)])
        tgt_in = np.array([parse_ids(args.tgt_ids)])
    src, tgt_in = src.astype(np.int64), tgt_in.astype(np.int64)
    if src.ndim != 2 or tgt_in.ndim != 2 or src.shape[0] != tgt_in.shape[0]:
        print(f"logits: src {list(src.shape)} and tgt_in {list(tgt_in.shape)} must be [B, S] and [B, T]", file=sys.stderr)
        return 2
    for name, a, vocab in (("src", src, cfg["src_vocab"]), ("tgt_in", tgt_in, cfg["tgt_vocab"])):
        if a.min() < 0 or a.max() >= vocab:
            print(f"logits: {name} ids must lie in [0, {vocab})", file=sys.stderr)
            return 2
        if (a[:, 0] == PAD).any():
            print(f"logits: every {name} row must start with a non-<pad> token (<sos>)", file=sys.stderr)
            return 2
        if a.shape[1] > cfg["max_len"]:
            print(f"logits: {name} is longer than max_len {cfg['max_len']}", file=sys.stderr)
            return 2
    model = build_model(cfg, torch.float64)
    load_float32_state(model, state)
    with torch.no_grad():
        logits = model(torch.from_numpy(src), torch.from_numpy(tgt_in)).numpy()
    if args.out:
        write_safetensors(args.out, {"src": src.astype(np.int32), "tgt_in": tgt_in.astype(np.int32),
                                     "logits": logits.astype(np.float32)}, {})
    if args.compare:
        theirs, _ = read_safetensors(args.compare)
        other = theirs.get("logits")
        if other is None or other.shape != logits.shape:
            print(json.dumps({"ok": False, "error": f"{args.compare} needs logits {list(logits.shape)}"}))
            return 1
        diff = float(np.max(np.abs(other.astype(np.float64) - logits)))
        tol = args.atol + args.rtol * float(np.max(np.abs(logits)))
        ok = bool(np.isfinite(other).all()) and diff <= tol
        print(json.dumps({"ok": ok, "max_abs_diff": diff, "tolerance": tol,
                          "shape": list(logits.shape)}))
        return 0 if ok else 1
    if not args.out:
        print(json.dumps({"shape": list(logits.shape), "logits": logits.tolist()}))
    return 0


def cmd_roundtrip(args):
    import subprocess
    import tempfile
    work = args.work or tempfile.mkdtemp(prefix="clformer-roundtrip-")
    os.makedirs(work, exist_ok=True)
    start = args.init
    cfg, _, vocabs = load_checkpoint(start)
    src_words, tgt_words = vocabs["src"][4:], vocabs["tgt"][4:]
    rng = np.random.default_rng(1)
    longest = min(cfg["max_len"] - 2, 10)

    def sentence(words):
        return " ".join(rng.choice(words, size=int(rng.integers(2, longest + 1))))

    pairs = [(sentence(src_words), sentence(tgt_words)) for _ in range(64)]
    paths = {k: os.path.join(work, k) for k in ("train.src", "train.tgt", "trained.safetensors",
                                                  "batch.safetensors", "clformer_logits.safetensors")}
    with open(paths["train.src"], "w") as f:
        f.write("\n".join(p[0] for p in pairs) + "\n")
    with open(paths["train.tgt"], "w") as f:
        f.write("\n".join(p[1] for p in pairs) + "\n")
    train = [args.clformer, "train", "--src", paths["train.src"], "--tgt", paths["train.tgt"],
             "--init", start, "--steps", "20", "--batch-size", "8", "--dropout", "0.1",
             "--bleu-sentences", "0", "--save", paths["trained.safetensors"]]
    print("$ " + " ".join(train), flush=True)
    subprocess.run(train, check=True, stdout=subprocess.DEVNULL)
    if cmd_check_checkpoint(argparse.Namespace(model=paths["trained.safetensors"])) != 0:
        return 1
    # a batch of 4 training sentences, right-padded, as the logits commands take it
    src_ix = {w: i for i, w in enumerate(vocabs["src"])}
    tgt_ix = {w: i for i, w in enumerate(vocabs["tgt"])}
    rows = pairs[:4]
    srcs = [[SOS] + [src_ix[w] for w in s.split()] + [EOS] for s, _ in rows]
    tgts = [[SOS] + [tgt_ix[w] for w in t.split()] for _, t in rows]
    S, T = max(map(len, srcs)), max(map(len, tgts))
    src = np.array([r + [PAD] * (S - len(r)) for r in srcs], dtype=np.int32)
    tgt_in = np.array([r + [PAD] * (T - len(r)) for r in tgts], dtype=np.int32)
    write_safetensors(paths["batch.safetensors"], {"src": src, "tgt_in": tgt_in}, {})
    logits = [args.clformer, "logits", "--model", paths["trained.safetensors"], "--batch",
              paths["batch.safetensors"], "--out", paths["clformer_logits.safetensors"]]
    print("$ " + " ".join(logits), flush=True)
    subprocess.run(logits, check=True)
    return cmd_logits(argparse.Namespace(model=paths["trained.safetensors"], batch=paths["batch.safetensors"],
                                         src_ids=None, tgt_ids=None, out=None,
                                         compare=paths["clformer_logits.safetensors"],
                                         atol=args.atol, rtol=args.rtol))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate", help="write the parity fixtures")
    g.add_argument("--out", required=True, help="directory, e.g. tests/data/parity")
    g.add_argument("--only", nargs="*", choices=list(FIXTURES), help="just these fixtures")
    ac = sub.add_parser("autocast", help="the fixtures' 10 steps under CPU autocast(bfloat16): fixture_bf16.safetensors "
                                         "(--dtype float16: CUDA autocast(float16), fixture_fp16.safetensors)")
    ac.add_argument("--dtype", choices=["bfloat16", "float16"], default="bfloat16")
    ac.add_argument("--out", required=True, help="the fixtures' directory, e.g. tests/data/parity")
    ac.add_argument("--only", nargs="*", choices=list(FIXTURES), help=f"these fixtures (default {' '.join(AUTOCAST_FIXTURES)})")
    c = sub.add_parser("check-checkpoint", help="load a clformer checkpoint strictly")
    c.add_argument("model")
    lg = sub.add_parser("logits", help="logits of a checkpoint (float64 from its float32 weights)")
    lg.add_argument("model")
    lg.add_argument("--src-ids", help="one source sentence, ids separated by spaces or commas")
    lg.add_argument("--tgt-ids", help="its decoder input (starting with <sos>=1)")
    lg.add_argument("--batch", help="safetensors with src I32 [B, S] and tgt_in I32 [B, T]")
    lg.add_argument("--out", help="write src, tgt_in and logits F32 [B, T, V] here")
    lg.add_argument("--compare", help="safetensors whose 'logits' are checked against PyTorch's")
    lg.add_argument("--atol", type=float, default=1e-5)
    lg.add_argument("--rtol", type=float, default=1e-4, help="relative to max |logit|")
    rt = sub.add_parser("roundtrip", help="clformer trains a checkpoint; PyTorch loads it strictly and compares logits")
    rt.add_argument("--clformer", required=True, help="the clformer binary (uses CLFORMER_DEVICE)")
    rt.add_argument("--init", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                                                   "data", "parity", "a_prenorm_relu_sin", "model.safetensors"),
                    help="the PyTorch-made checkpoint to start from")
    rt.add_argument("--work", help="directory for the files (default: a new temporary one)")
    rt.add_argument("--atol", type=float, default=1e-5)
    rt.add_argument("--rtol", type=float, default=1e-4, help="relative to max |logit|")
    args = p.parse_args(argv)
    return {"generate": cmd_generate, "autocast": cmd_autocast, "check-checkpoint": cmd_check_checkpoint,
            "logits": cmd_logits, "roundtrip": cmd_roundtrip}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
