#!/usr/bin/env python3
"""clformer and Hugging Face transformers generating side by side, on the CPU.

One sequence, greedy, a 1-token prompt and N new tokens (no early stop), with a
Llama model of a clformer preset's shape (llama-small, smollm-135m; random
weights: speed does not depend on them): `clformer bench --task lm --config P
--batch 1 --len N+1 --json` (its generate_tokens_per_s: N tokens over the call,
the prompt's pass included) against transformers' LlamaForCausalLM.generate
(key/value cache on, as its users run it) timed the same way, alternating,
--rounds times in one sitting; prints one table and the median ratio. With
--precision bf16 both keep the weights in bf16: clformer's `--precision bf16`,
transformers' model cast with .to(torch.bfloat16).

  tools/hf-venv.sh --print-dir   # the pinned transformers venv (tools/install-deps.sh --with-hf)
  VENV/bin/python tools/reference/generate_side_by_side.py --config smollm-135m \\
      [--vocab 49152] [--new 63] [--rounds 3] [--precision fp32|bf16] [--clformer build/clformer]

transformers runs as its users run it: torch's default threads and BLAS, no
thread variables set by this script (the table says what torch uses). The
clformer device is CLFORMER_DEVICE's (its default: the first CPU device).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

try:
    import torch
    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM
except ImportError:
    sys.exit("generate_side_by_side: torch and transformers are missing; run it with the pinned "
             "venv's Python (tools/hf-venv.sh --print-dir; tools/install-deps.sh --with-hf)")

HERE = os.path.dirname(os.path.abspath(__file__))


def preset(name):
    with open(os.path.join(HERE, "presets.json")) as f:
        presets = json.load(f)
    p = presets.get(name)
    if not p or p.get("family") != "llama":
        sys.exit(f"generate_side_by_side: {name} is not a Llama preset; choose one of "
                 + ", ".join(k for k, v in presets.items() if v.get("family") == "llama"))
    return p


def hf_tokens_per_s(p, vocab, new, precision):
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=p["d_model"], intermediate_size=p["d_ff"],
                      num_hidden_layers=p["n_dec_layers"], num_attention_heads=p["n_heads"],
                      num_key_value_heads=p["n_kv_heads"], max_position_embeddings=p["context"],
                      tie_word_embeddings=True, pad_token_id=0)
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg).eval()
    if precision == "bf16":
        model = model.to(torch.bfloat16)
    ids = torch.tensor([[1]])
    args = dict(attention_mask=torch.ones_like(ids), do_sample=False)
    with torch.no_grad():
        model.generate(ids, max_new_tokens=2, min_new_tokens=2, **args)  # warm-up
        start = time.perf_counter()
        out = model.generate(ids, max_new_tokens=new, min_new_tokens=new, **args)
        seconds = time.perf_counter() - start
    return (out.shape[1] - 1) / seconds


def clformer_tokens_per_s(binary, name, vocab, new, precision):
    cmd = [binary, "bench", "--task", "lm", "--config", name, "--vocab", str(vocab), "--batch", "1",
           "--len", str(new + 1), "--steps", "1", "--warmup", "0", "--precision", precision,
           "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"clformer failed ({out.returncode}): {' '.join(cmd)}\n{out.stderr[-2000:]}")
    d = json.loads(out.stdout)
    return d["generate_tokens_per_s"], d["device"], d["gemm_provider"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default="smollm-135m", help="a Llama preset (smollm-135m)")
    ap.add_argument("--vocab", type=int, default=49152, help="vocabulary size (49152: SmolLM's)")
    ap.add_argument("--new", type=int, default=63, help="new tokens a run (63)")
    ap.add_argument("--rounds", type=int, default=3, help="alternations (3)")
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                    help="the weights' storage in both (fp32)")
    ap.add_argument("--clformer", default="build/clformer")
    a = ap.parse_args()
    if a.new < 1 or a.rounds < 1 or a.vocab < 5:
        sys.exit("generate_side_by_side: --new and --rounds must be at least 1, --vocab at least 5")
    if not os.access(a.clformer, os.X_OK):
        sys.exit(f"generate_side_by_side: {a.clformer} is not an executable clformer (tools/build.sh)")
    p = preset(a.config)
    print(f"{a.config} (vocab {a.vocab}), {a.precision}, batch 1, greedy, {a.new} new tokens; "
          f"transformers {transformers.__version__}, torch {torch.__version__} "
          f"({torch.get_num_threads()} intra-op thread(s), torch's default)")
    print("\n| round | clformer tokens/s | transformers tokens/s | ratio |")
    print("| --- | ---: | ---: | ---: |")
    ratios = []
    for r in range(1, a.rounds + 1):
        ours, device, gemm = clformer_tokens_per_s(a.clformer, a.config, a.vocab, a.new,
                                                   a.precision)
        theirs = hf_tokens_per_s(p, a.vocab, a.new, a.precision)
        ratios.append(ours / theirs)
        print(f"| {r} | {ours:,.1f} | {theirs:,.1f} | {ours / theirs:.2f}x |", flush=True)
    print(f"\nclformer on {device} (GEMM: {gemm}); median ratio {statistics.median(ratios):.2f}x")


if __name__ == "__main__":
    main()
