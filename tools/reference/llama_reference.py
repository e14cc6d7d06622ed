#!/usr/bin/env python3
"""Hugging Face side of clformer's Llama tests (transformers 4.36's LlamaForCausalLM).

  rope --out tests/data/llama
      rope_tables.json: for several rotary configurations (rope_theta 10,000
      and 500,000, "linear" and "dynamic" rope_scaling, dynamic past its
      max_position_embeddings) the fp32 inv_freq and cos/sin rows at chosen
      positions up to 4,100, exactly as transformers' LlamaRotaryEmbedding
      classes build them. tests/host/test_rope_table.c compares
      cf_rope_table (runtime/ops/ops_rope.c) with them.

Run in a venv with transformers 4.36.x over Debian's torch 1.13:
  python3 -m venv --system-site-packages /tmp/venv-llama
  /tmp/venv-llama/bin/pip install transformers==4.36.2 tokenizers==0.15.2 sentencepiece
  /tmp/venv-llama/bin/python tools/reference/llama_reference.py rope --out tests/data/llama
Nothing in the C build needs Python: the generated files are committed.
"""

import argparse
import json
import os

import torch
from transformers.models.llama import modeling_llama as ml

# name, head size, rope_theta, scaling (None, "linear", "dynamic"), factor,
# max_position_embeddings, the sequence length the layer is run on, positions
ROPE_CASES = [
    ("theta1e4", 16, 10000.0, None, None, 64, 64, list(range(0, 64, 7)) + [63]),
    ("theta5e5_long", 64, 500000.0, None, None, 8192, 4100, [0, 1, 2, 100, 1000, 2047, 4095, 4099]),
    ("linear4", 32, 10000.0, "linear", 4.0, 2048, 2048, [0, 1, 5, 333, 2047]),
    ("dynamic2_within", 16, 10000.0, "dynamic", 2.0, 32, 32, [0, 3, 31]),
    ("dynamic2_past", 16, 10000.0, "dynamic", 2.0, 32, 100, [0, 3, 31, 32, 99]),
    ("dynamic3_odd_half", 10, 500000.0, "dynamic", 3.0, 16, 4100, [0, 15, 16, 4099]),
]


def rope_module(dh, theta, scaling, factor, max_pos):
    if scaling is None:
        return ml.LlamaRotaryEmbedding(dh, max_position_embeddings=max_pos, base=theta)
    cls = {"linear": ml.LlamaLinearScalingRotaryEmbedding,
           "dynamic": ml.LlamaDynamicNTKScalingRotaryEmbedding}[scaling]
    return cls(dh, max_position_embeddings=max_pos, base=theta, scaling_factor=factor)


def write_rope(out):
    cases = []
    for name, dh, theta, scaling, factor, max_pos, seq_len, positions in ROPE_CASES:
        rope = rope_module(dh, theta, scaling, factor, max_pos)
        x = torch.zeros(1, 1, seq_len, dh)
        cos, sin = rope(x, seq_len=seq_len)
        half = dh // 2
        cases.append({
            "name": name, "head_size": dh, "rope_theta": theta,
            "scaling": scaling or "none", "factor": factor or 0.0,
            "max_position_embeddings": max_pos, "seq_len": seq_len,
            "inv_freq": rope.inv_freq.tolist(),
            "positions": positions,
            # transformers' rows hold the half twice (cat(freqs, freqs)); one copy
            "cos": [cos[p, :half].tolist() for p in positions],
            "sin": [sin[p, :half].tolist() for p in positions],
        })
        assert torch.equal(cos[:, :half], cos[:, half:])
    path = os.path.join(out, "rope_tables.json")
    with open(path, "w") as f:
        json.dump({"transformers": __import__("transformers").__version__, "cases": cases}, f,
                  indent=1)
    print(f"wrote {path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("rope", help="rotary tables (rope_tables.json)")
    r.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.cmd == "rope":
        write_rope(args.out)


if __name__ == "__main__":
    main()
