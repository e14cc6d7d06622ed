#!/usr/bin/env python3
"""Hugging Face side of clformer's GPT-2 parity tests (tests/data/gpt2/README.md).

  generate --out tests/data/gpt2
      for each small random GPT-2 configuration writes DIR/<name>/:
        model/           what GPT2LMHeadModel.save_pretrained writes (model.safetensors
                         in Hugging Face's names, Conv1D [in, out] weights, config.json),
                         which clformer reads as it reads any such directory;
        golden.safetensors  token ids, transformers' logits (float64 model, stored as
                         float32), the losses of 10 AdamW steps (float64), and greedy
                         generate() output for a prompt.
  check-export DIR [--text FILE]
      loads a directory `clformer export --format hf-gpt2` wrote with
      GPT2LMHeadModel.from_pretrained, fails on any missing or unexpected key and,
      with --text, prints transformers' loss on the text in the windows
      `clformer eval --text` uses, to set beside clformer's. Tokens: with
      DIR/vocab.json + merges.txt (a --tokenizer gpt2-bpe model) transformers'
      GPT2TokenizerFast on those files, else DIR/clformer_vocab.json's
      characters and bytes. With --clformer BIN, also runs `BIN logits` on the
      text's first window and compares its logits with transformers' (1e-4).

Run in a venv with transformers 4.36.x over Debian's torch 1.13 (made from
Debian's /usr/bin/python3, whose site packages hold python3-torch; another
python3 first on PATH has no torch; docs/guides/pytorch.md):
  /usr/bin/python3 -m venv --system-site-packages ~/.venvs/clformer-hf
  ~/.venvs/clformer-hf/bin/pip install transformers==4.36.2 tokenizers
  ~/.venvs/clformer-hf/bin/python tools/reference/gpt2_reference.py check-export DIR
Nothing in the C build needs Python: the generated files are committed.
"""

import argparse
import json
import os
import sys

import numpy as np
import torch
from safetensors.numpy import save_file
from transformers import GPT2Config, GPT2LMHeadModel

STEPS = 10
# the optimizer both sides use: AdamW with decay on rank-2 tensors, clipping
OPTIM = {"lr": 3e-3, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "weight_decay": 0.1, "clip": 1.0}

# name: (n_embd, n_head, n_layer, n_positions, vocab, n_inner, batch, window, prompt, new)
CONFIGS = {
    "a_small": (32, 4, 2, 16, 37, None, 3, 13, 5, 10),
    "b_inner": (24, 3, 3, 24, 50, 40, 2, 21, 4, 16),
    "c_tiny_oclgrind": (8, 2, 1, 8, 11, None, 2, 7, 3, 4),
}


def make_model(name, seed):
    d, h, layers, positions, vocab, inner, *_ = CONFIGS[name]
    cfg = GPT2Config(vocab_size=vocab, n_positions=positions, n_embd=d, n_layer=layers,
                     n_head=h, n_inner=inner, activation_function="gelu_new",
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                     layer_norm_epsilon=1e-5, bos_token_id=0, eos_token_id=0)
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(cfg)
    # GPT-2's initialisation leaves biases 0 and LayerNorms 1/0
    spread_weights(model)
    return model


def spread_weights(model):
    """Moves vectors (biases, norm weights) off the values initialisation
    gives them, so that one mapped wrongly shows, and scales matrices to std
    0.1, so that logits are far from uniform."""
    with torch.no_grad():
        for _, p in model.named_parameters():
            if p.dim() == 1:
                p.add_(0.1 * torch.randn_like(p))
            else:
                p.mul_(5.0)


def save_model_dir(model, out_dir):
    """out_dir/model/: what save_pretrained writes, but generation_config.json
    (not needed to load the model, and not read by clformer)."""
    path = os.path.join(out_dir, "model")
    os.makedirs(path, exist_ok=True)
    model.save_pretrained(path, safe_serialization=True)
    gen_cfg = os.path.join(path, "generation_config.json")
    if os.path.exists(gen_cfg):
        os.remove(gen_cfg)


def batches(name, seed):
    *_, batch, window, _, _ = CONFIGS[name]
    vocab = CONFIGS[name][4]
    g = np.random.default_rng(seed)
    return g.integers(0, vocab, size=(STEPS + 1, batch, window), dtype=np.int64)


def loss_of(model, ids):
    logits = model(torch.from_numpy(ids[:, :-1])).logits
    v = logits.shape[-1]
    return torch.nn.functional.cross_entropy(logits.reshape(-1, v),
                                             torch.from_numpy(ids[:, 1:]).reshape(-1)), logits


def train_adamw(m, ids, keep_first_grads=False):
    """STEPS AdamW steps of float64 model m on batches ids[k] (OPTIM: decay on
    rank-2 tensors only, global-norm clip): each step's loss before its
    update, and with keep_first_grads every parameter's gradient of the first
    loss before clipping, as float32 tensors "grad.<name>"."""
    decay = [p for p in m.parameters() if p.dim() >= 2]
    rest = [p for p in m.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": OPTIM["weight_decay"]},
                             {"params": rest, "weight_decay": 0.0}], lr=OPTIM["lr"],
                            betas=(OPTIM["beta1"], OPTIM["beta2"]), eps=OPTIM["eps"])
    m.train()
    losses, grads = [], {}
    for k in range(STEPS):
        opt.zero_grad()
        loss, _ = loss_of(m, ids[k])
        loss.backward()
        if k == 0 and keep_first_grads:
            grads = {"grad." + n: p.grad.numpy().astype(np.float32)
                     for n, p in m.named_parameters()}
        torch.nn.utils.clip_grad_norm_(m.parameters(), OPTIM["clip"])
        opt.step()
        losses.append(loss.item())
    return losses, grads


def save_golden(out_dir, ids, logits, losses, prompt, generated, extra=None):
    """out_dir/golden.safetensors: the tensors every fixture has (and
    `extra`), the optimizer's settings and the steps as metadata."""
    save_file({"ids": ids.astype(np.int32),
               "logits": logits.numpy().astype(np.float32),
               "losses": np.array(losses, dtype=np.float64),
               "prompt": prompt.numpy().astype(np.int32),
               "generated": generated.astype(np.int32)} | (extra or {}),
              os.path.join(out_dir, "golden.safetensors"),
              metadata={k: repr(v) for k, v in OPTIM.items()} | {"steps": str(STEPS)})


def generate_one(name, out_dir, seed):
    model = make_model(name, seed)
    save_model_dir(model, out_dir)
    ids = batches(name, seed + 1)
    m = model.double().eval()
    with torch.no_grad():
        _, logits = loss_of(m, ids[STEPS])
        *_, prompt_len, new = CONFIGS[name]
        prompt = torch.from_numpy(ids[STEPS, :1, :prompt_len])
        out = m.generate(prompt, max_new_tokens=new, do_sample=False, pad_token_id=0)
    generated = out[0, prompt_len:].numpy()
    # 10 AdamW steps in float64, decay on rank-2 tensors (wte, wpe, matrices)
    losses, _ = train_adamw(m, ids)
    save_golden(out_dir, ids, logits, losses, prompt[0], generated)
    print(f"{name}: loss {losses[0]:.6f} -> {losses[-1]:.6f}, generated {generated.tolist()}")


def encode(vocab, text):
    """clformer's character/byte rule: a character that is a token is that id,
    else each of its UTF-8 bytes as <0xNN>, else <unk> (3)."""
    index = {t: i for i, t in enumerate(vocab)}
    ids = []
    for ch in text:
        raw = ch.encode("utf-8")
        spelled = (len(raw) == 1 and (raw[0] < 0x21 or raw[0] >= 0x7F)) or ch.isspace()
        if not spelled and ch in index:
            ids.append(index[ch])
            continue
        for b in raw:
            ids.append(index.get(f"<0x{b:02X}>", 3))
    return ids


def clformer_logits(clformer, directory, ids):
    """The logits `clformer logits` (the command at path `clformer`) gives
    for the ids under the model in `directory`: [len(ids), vocab]."""
    import subprocess
    import tempfile
    from safetensors.numpy import load_file
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "logits.safetensors")
        subprocess.run([clformer, "logits", "--model", directory, "--ids",
                        " ".join(map(str, ids)), "--out", out], check=True)
        return load_file(out)["logits"][0]


def check_logits(directory, ids, model, clformer):
    """`clformer logits` on the text's first window against transformers'
    logits of the same ids (float64 model): within 1e-4, test_gpt2_parity's bound."""
    got = clformer_logits(clformer, directory, ids)
    with torch.no_grad():
        want = model(torch.tensor([ids])).logits[0].numpy()
    worst = float(np.abs(got - want).max())
    ok = worst <= 1e-4
    print(f"clformer logits on the first {len(ids)} tokens: max |clformer - transformers| "
          f"{worst:.3g} ({'within' if ok else 'NOT within'} 1e-4)")
    return ok


def load_strictly(cls, directory, **kwargs):
    """cls.from_pretrained(directory), or None (said so) where a key is
    missing, unexpected or mismatched."""
    model, info = cls.from_pretrained(directory, output_loading_info=True, **kwargs)
    problems = {k: v for k, v in info.items() if v}
    if problems:
        print(f"not a strict load: {problems}")
        return None
    print(f"{directory}: {cls.__name__} loads it strictly "
          f"({sum(p.numel() for p in model.parameters())} parameters)")
    return model


def check_export(directory, text_path, clformer=None):
    model = load_strictly(GPT2LMHeadModel, directory)
    if model is None:
        return 1
    if text_path:
        with open(text_path, encoding="utf-8") as f:
            text = f.read()
        if os.path.exists(os.path.join(directory, "merges.txt")):
            from transformers import GPT2TokenizerFast
            ids = GPT2TokenizerFast.from_pretrained(directory)(text)["input_ids"]
            print(f"{text_path}: GPT2TokenizerFast gives {len(ids)} tokens")
        else:
            with open(os.path.join(directory, "clformer_vocab.json"), encoding="utf-8") as f:
                ids = encode(json.load(f), text)
        T = model.config.n_positions
        total, count, at = 0.0, 0, 0
        m = model.double().eval()
        if clformer and not check_logits(directory, ids[:T], m, clformer):
            return 1
        with torch.no_grad():
            while at + 1 < len(ids):
                window = ids[at:at + T + 1]
                x = torch.tensor([window])
                logits = m(x[:, :-1]).logits[0]
                total += torch.nn.functional.cross_entropy(logits, x[0, 1:], reduction="sum").item()
                count += len(window) - 1
                at += len(window) - 1
        print(f"{text_path}: transformers loss {total / count:.4f} ({count} tokens scored)")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate")
    g.add_argument("--out", required=True)
    c = sub.add_parser("check-export")
    c.add_argument("dir")
    c.add_argument("--text")
    c.add_argument("--clformer", help="with --text: also compare `clformer logits` on the "
                   "text's first window with transformers' (path of the clformer command)")
    a = p.parse_args()
    torch.set_num_threads(1)
    if a.cmd == "generate":
        for i, name in enumerate(CONFIGS):
            generate_one(name, os.path.join(a.out, name), 1000 + 10 * i)
        return 0
    return check_export(a.dir, a.text, a.clformer)


if __name__ == "__main__":
    sys.exit(main())
