"""Trains a character-level language model and samples from it.

    tools/get-data.sh tinyshakespeare data/tinyshakespeare   # or give any UTF-8 text file
    pip install ./python                                     # once, into a venv
    python examples/python/char_lm.py [TEXT] [--steps N] [--tokens N]

The model is the gpt-mini preset (nanoGPT's CPU run: 4 layers of 128, context 64)
trained with clformer's defaults for language models (AdamW, cosine schedule, batches
of 12); without TEXT it trains on tinyshakespeare's train.txt and validates on val.txt.
The device is CLFORMER_DEVICE's choice (`clformer devices` lists them). Ctrl-C stops
training after the current step, keeping the checkpoint.
"""
import argparse
import os
import time

import clformer

DEFAULT = "data/tinyshakespeare"
parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("text", nargs="?", help=f"a UTF-8 text file (default: {DEFAULT}'s)")
parser.add_argument("--steps", type=int, default=200, help="optimizer steps (default 200)")
parser.add_argument("--save", help="the checkpoint to write (default: char_lm.safetensors, "
                    "or char_lm-2.safetensors ... where earlier runs left one)")
parser.add_argument("--tokens", type=int, default=300, help="tokens to sample (default 300)")
args = parser.parse_args()
data = dict(text=args.text) if args.text else \
    dict(text=f"{DEFAULT}/train.txt", val_text=f"{DEFAULT}/val.txt")
if not os.path.exists(data["text"]):
    parser.error(f"no {data['text']}: run tools/get-data.sh tinyshakespeare {DEFAULT}, "
                 "or give a text file")

if not args.save:  # as the command's default names: never over an earlier run's file
    args.save = next(name for name in (f"char_lm{'' if i == 1 else f'-{i}'}.safetensors"
                                       for i in range(1, 10000)) if not os.path.exists(name))

start = time.monotonic()
print("device:", next(d.name for d in clformer.devices() if d.chosen))
with clformer.Trainer(task="lm", config="gpt-mini", steps=args.steps, save=args.save,
                      eval_every=max(args.steps // 2, 1), **data) as trainer:
    for step in trainer:
        if step.step % 25 == 0:
            print(f"step {step.step:4d}  loss {step.loss:.3f}  {step.tokens_per_s:5.0f} tokens/s")
        if step.validation:
            print(f"           validation loss {step.validation.loss:.3f}")
    print(f"{trainer.result.steps} steps in {trainer.result.seconds:.0f} s, saved to",
          trainer.result.saved_to)

    model = trainer.model  # later: clformer.load(args.save)
    print("--- a sample (temperature 0.8, top-k 40) ---")
    for token in model.stream("\n", max_tokens=args.tokens, temperature=0.8, top_k=40, seed=1):
        print(token.text, end="", flush=True)
    print("\n---")
print(f"{time.monotonic() - start:.0f} s in all")
