#!/usr/bin/env python3
"""Hugging Face side of clformer's Llama tests (transformers 4.36's LlamaForCausalLM).

  rope --out tests/data/llama
      rope_tables.json: for several rotary configurations (rope_theta 10,000
      and 500,000, "linear" and "dynamic" rope_scaling, dynamic past its
      max_position_embeddings) the fp32 inv_freq and cos/sin rows at chosen
      positions up to 4,100, exactly as transformers' LlamaRotaryEmbedding
      classes build them. tests/host/test_rope_table.c compares
      cf_rope_table (runtime/ops/ops_rope.c) with them.

  models --out tests/data/llama
      for each small random LlamaForCausalLM configuration below writes DIR/<name>/:
        model/              what save_pretrained writes: config.json and
                            model.safetensors (float32, Hugging Face's names:
                            model.embed_tokens.weight (V, D), per layer i
                            model.layers.i.input_layernorm.weight (D),
                            .self_attn.{q_proj (H*dh, D), k_proj and v_proj
                            (H_kv*dh, D), o_proj (D, H*dh)}.weight,
                            .post_attention_layernorm.weight (D),
                            .mlp.{gate_proj, up_proj (I, D), down_proj (D, I)}.weight,
                            model.norm.weight (D), and lm_head.weight (V, D) only
                            when the head is untied);
        golden.safetensors  computed by the model in float64 (its rotary
                            tables stay transformers' fp32 ones):
                              ids (STEPS+1, B, T+1) int32: batch k of step k is
                                ids[k]; inputs ids[k][:, :-1], labels ids[k][:, 1:];
                              logits (B, T, V) float32 of ids[STEPS]'s inputs at
                                the initial weights;
                              losses (STEPS,) float64: mean cross-entropy of the
                                batch before each of STEPS AdamW steps (OPTIM:
                                decay on rank-2 tensors only, global-norm clip);
                              grad.<name> float32 for every parameter: the
                                gradient of step 1's loss (ids[0]) before clipping
                                (tied: the one tensor, named as the embedding);
                              prompt (P,) int32 and generated (N,) int32: greedy
                                generate() from the initial weights on a fresh
                                model (KV cache, no stop at EOS: N tokens), within
                                max_position_embeddings.
      Shapes cover GQA ratios 1, 2 and n_heads (multi-query), tied and untied
      heads, rope_theta 10,000 and 500,000, linear rope_scaling, and dynamic
      rope_scaling with T past max_position_embeddings (so the NTK base is in
      force for logits and training: seq_len T for every forward).

  check-export DIR [--clformer BIN]
      loads a directory `clformer export --format hf-llama` wrote with
      LlamaForCausalLM.from_pretrained and fails on any missing, unexpected or
      mismatched key (a strict load); with --clformer BIN, also runs `BIN
      logits --model DIR` on 24 fixed ids and compares its logits with
      transformers' (float64 model) within 1e-4.

Run in a venv with transformers 4.36.x over Debian's torch 1.13:
  python3 -m venv --system-site-packages /tmp/venv-llama
  /tmp/venv-llama/bin/pip install transformers==4.36.2 tokenizers==0.15.2 sentencepiece
  /tmp/venv-llama/bin/python tools/reference/llama_reference.py rope --out tests/data/llama
  /tmp/venv-llama/bin/python tools/reference/llama_reference.py models --out tests/data/llama
Nothing in the C build needs Python: the generated files are committed.
"""

import argparse
import json
import os
import sys

import numpy as np
import torch
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.models.llama import modeling_llama as ml

sys.path.insert(0, os.path.dirname(__file__))
# clformer's optimizer, steps, loss and fixture files, as the GPT-2 fixtures have them
from gpt2_reference import (STEPS, clformer_logits, load_strictly, loss_of,  # noqa: E402
                            save_golden, save_model_dir, spread_weights, train_adamw)

# name: hidden, heads, kv heads, layers, intermediate, vocab, max positions,
#       rope_theta, rope_scaling, tied head, batch, window T, prompt, new tokens
MODELS = {
    "a_mha_untied": (32, 4, 4, 2, 48, 41, 32, 10000.0, None, False, 3, 13, 5, 10),
    "b_gqa2_tied_theta5e5": (48, 4, 2, 2, 64, 50, 64, 500000.0, None, True, 2, 21, 4, 12),
    "c_mqa_linear": (32, 4, 1, 1, 40, 37, 32, 10000.0, {"type": "linear", "factor": 2.0}, False,
                     2, 17, 4, 8),
    "d_tiny_dynamic_oclgrind": (16, 2, 1, 1, 24, 11, 8, 10000.0,
                                {"type": "dynamic", "factor": 2.0}, False, 2, 11, 3, 4),
}

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


def make_model(name, seed):
    d, h, kv, layers, inter, vocab, max_pos, theta, scaling, tied, *_ = MODELS[name]
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=d, intermediate_size=inter,
                      num_hidden_layers=layers, num_attention_heads=h, num_key_value_heads=kv,
                      max_position_embeddings=max_pos, rope_theta=theta, rope_scaling=scaling,
                      tie_word_embeddings=tied, rms_norm_eps=1e-5, bos_token_id=1,
                      eos_token_id=2, pad_token_id=None)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(cfg)
    # Llama's initialisation leaves RMSNorm weights 1
    spread_weights(model)
    return model


def write_model(name, out_dir, seed):
    *_, batch, window, prompt_len, new = MODELS[name]
    vocab = MODELS[name][5]
    model = make_model(name, seed)
    save_model_dir(model, out_dir)
    ids = np.random.default_rng(seed + 1).integers(0, vocab, size=(STEPS + 1, batch, window + 1),
                                                   dtype=np.int64)
    # generation first, from a fresh copy: dynamic scaling keeps state
    fresh = LlamaForCausalLM.from_pretrained(os.path.join(out_dir, "model")).double().eval()
    # Debian's torch 1.13 builds transformers' float64 masks in the default
    # dtype: make it float64 for the computations (the models are built)
    torch.set_default_dtype(torch.float64)
    prompt = torch.from_numpy(ids[STEPS, :1, :prompt_len])
    fresh.generation_config.eos_token_id = None  # N tokens, no stop at EOS
    with torch.no_grad():
        out = fresh.generate(prompt, max_new_tokens=new, do_sample=False, pad_token_id=0)
    generated = out[0, prompt_len:].numpy()
    assert prompt_len + new <= MODELS[name][6], "generation stays within max positions"

    m = model.double().eval()
    with torch.no_grad():
        _, logits = loss_of(m, ids[STEPS])
    losses, grads = train_adamw(m, ids, keep_first_grads=True)
    save_golden(out_dir, ids, logits, losses, prompt[0], generated, extra=grads)
    torch.set_default_dtype(torch.float32)
    print(f"{name}: {sum(p.numel() for p in model.parameters())} parameters, loss "
          f"{losses[0]:.6f} -> {losses[-1]:.6f}, generated {generated.tolist()}")


def check_export(directory, clformer=None):
    model = load_strictly(LlamaForCausalLM, directory, torch_dtype=torch.float32)
    if model is None:
        return 1
    if not clformer:
        return 0
    V = model.config.vocab_size
    T = min(24, model.config.max_position_embeddings)
    ids = [(7 * i + 3) % V for i in range(T)]
    got = clformer_logits(clformer, directory, ids)
    # float64 masks need float64 as torch 1.13's default dtype (as in write_model)
    torch.set_default_dtype(torch.float64)
    with torch.no_grad():
        want = model.double().eval()(torch.tensor([ids])).logits[0].numpy()
    worst = float(np.abs(got - want).max())
    ok = worst <= 1e-4
    print(f"clformer logits on {T} ids: max |clformer - transformers| {worst:.3g} "
          f"({'within' if ok else 'NOT within'} 1e-4)")
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("rope", help="rotary tables (rope_tables.json)")
    r.add_argument("--out", required=True)
    m = sub.add_parser("models", help="parity fixtures of LlamaForCausalLM configurations")
    m.add_argument("--out", required=True)
    c = sub.add_parser("check-export", help="a strict load of a clformer hf-llama export")
    c.add_argument("dir")
    c.add_argument("--clformer", help="also compare `clformer logits` with transformers' "
                   "(path of the clformer command)")
    args = ap.parse_args()
    if args.cmd == "check-export":
        torch.set_num_threads(1)
        return check_export(args.dir, args.clformer)
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(1)
    if args.cmd == "rope":
        write_rope(args.out)
    else:
        for i, name in enumerate(MODELS):
            write_model(name, os.path.join(args.out, name), 2000 + 10 * i)


if __name__ == "__main__":
    sys.exit(main())
