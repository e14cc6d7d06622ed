#!/usr/bin/env python3
"""16-bit golden data for clformer's bf16/fp16 tests (tests/data/half/).

  generate [--out tests/data/half]
      casts.safetensors   "src" F32: edge values (ties, the largest finite values and
                          the ties above them, subnormals, signed zeros, infinities)
                          and random values; "bf16"/"f16": PyTorch's src.to(bfloat16 /
                          float16); "bf16_as_f32"/"f16_as_f32": those converted back
                          with .float(). test_half compares clformer's conversions.
      gpt2_bf16/, gpt2_fp16/, gpt2_f32_of_bf16/, gpt2_f32_of_fp16/, gpt2_f64/
                          one small random GPT2LMHeadModel, save_pretrained after
                          .to(bfloat16), .to(float16), .to(bfloat16).float() and
                          .to(float16).float() (the values clformer must read from the
                          16-bit ones, exactly), and .double() (a dtype clformer
                          refuses). test_half_files loads them.
  check-export DIR
      loads a `clformer export --format hf-gpt2 --dtype bf16|fp16` directory with
      GPT2LMHeadModel.from_pretrained(torch_dtype="auto"): no missing or unexpected
      key, every parameter of the file's dtype and equal to the file's tensor.

Run in the venv of tools/reference/gpt2_reference.py (transformers 4.36.2 over
Debian's torch 1.13). Nothing in the C build needs Python: the output is committed.
"""

import argparse
import math
import os
import struct
import sys

import torch
from safetensors.torch import load_file, save_file


def f32_of_bits(u):
    return struct.unpack("<f", struct.pack("<I", u))[0]


def edge_values():
    bits = [
        0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x3F800000, 0xBF800000,
        0x7F7FFFFF, 0xFF7FFFFF, 0x00800000, 0x00000001, 0x807FFFFF, 0x007FFFFF,
        # bf16: ties to even, just beside, the tie above the largest, subnormal ties
        0x3F808000, 0x3F818000, 0x3F808001, 0x3F807FFF, 0x7F7F8000, 0x7F7F7FFF,
        0x00008000, 0x00018000, 0x007FC000,
        # fp16: 65504, just below 65520, 65520, smallest normal and subnormal, ties
        0x477FE000, 0x477FEFFF, 0x477FF000, 0x38800000, 0x387FF000, 0x33800000,
        0x33000000, 0xB3000000, 0x33000001, 0x33C00000, 0x34200000, 0x3F801000, 0x3F803000,
    ]
    return [f32_of_bits(b) for b in bits]


def make_casts(out):
    g = torch.Generator().manual_seed(19)
    edges = torch.tensor(edge_values(), dtype=torch.float32)
    spread = torch.randn(400, generator=g) * torch.exp2(torch.randint(-30, 20, (400,), generator=g).float())
    bits = torch.randint(-(2**31), 2**31 - 1, (400,), generator=g, dtype=torch.int64)
    raw = bits.to(torch.int32).view(torch.float32)
    raw = torch.where(torch.isnan(raw), torch.full_like(raw, float("nan")), raw)
    src = torch.cat([edges, spread.float(), raw]).contiguous()
    tensors = {
        "src": src,
        "bf16": src.to(torch.bfloat16),
        "f16": src.to(torch.float16),
        "bf16_as_f32": src.to(torch.bfloat16).float(),
        "f16_as_f32": src.to(torch.float16).float(),
    }
    save_file(tensors, os.path.join(out, "casts.safetensors"), metadata={"format": "pt"})


def make_gpt2(out):
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(vocab_size=11, n_positions=8, n_embd=8, n_layer=1, n_head=2,
                     activation_function="gelu_new", resid_pdrop=0.0, embd_pdrop=0.0,
                     attn_pdrop=0.0, layer_norm_epsilon=1e-5, bos_token_id=0, eos_token_id=0)
    torch.manual_seed(7)
    model = GPT2LMHeadModel(cfg)
    with torch.no_grad():
        for p in model.parameters():  # values off the initial 0/1 and of varied size
            p.add_(0.3 * torch.randn_like(p))
    variants = {
        "gpt2_bf16": lambda m: m.to(torch.bfloat16),
        "gpt2_fp16": lambda m: m.to(torch.float16),
        "gpt2_f32_of_bf16": lambda m: m.to(torch.bfloat16).float(),
        "gpt2_f32_of_fp16": lambda m: m.to(torch.float16).float(),
        "gpt2_f64": lambda m: m.double(),
    }
    for name, convert in variants.items():
        m = GPT2LMHeadModel(cfg)
        m.load_state_dict(model.state_dict())
        convert(m).save_pretrained(os.path.join(out, name), safe_serialization=True)


def check_export(directory):
    from transformers import GPT2LMHeadModel

    stored = load_file(os.path.join(directory, "model.safetensors"))
    dtypes = {t.dtype for t in stored.values()}
    model, info = GPT2LMHeadModel.from_pretrained(directory, torch_dtype="auto",
                                                  output_loading_info=True)
    bad = [k for k in ("missing_keys", "unexpected_keys", "mismatched_keys") if info[k]]
    if bad:
        sys.exit(f"{directory}: {bad}: {[info[k] for k in bad]}")
    params = dict(model.named_parameters())
    for name, t in stored.items():
        p = params[name].detach()
        if p.dtype != t.dtype or not torch.equal(p, t):
            sys.exit(f"{directory}: {name}: loaded {p.dtype} differs from the file's {t.dtype}")
    print(f"{directory}: transformers loaded {len(stored)} tensors as {sorted(map(str, dtypes))}, "
          f"each equal to the file; model dtype {model.dtype}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate")
    g.add_argument("--out", default="tests/data/half")
    c = sub.add_parser("check-export")
    c.add_argument("dir")
    a = ap.parse_args()
    if a.cmd == "generate":
        os.makedirs(a.out, exist_ok=True)
        make_casts(a.out)
        make_gpt2(a.out)
    else:
        check_export(a.dir)


if __name__ == "__main__":
    main()
