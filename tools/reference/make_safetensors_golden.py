#!/usr/bin/env python3
"""Writes the golden safetensors files under tests/data/safetensors/.

They prove that tests/host/test_safetensors.c accepts headers written by
Hugging Face's own library (its tensor order, padding and JSON style). The C
test checks the values below, so change both together. Needs:
    pip install safetensors numpy
Usage: python3 tools/reference/make_safetensors_golden.py [output-dir]
"""
import os
import sys

import numpy as np
from safetensors.numpy import save_file


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(__file__), "..", "..", "tests", "data", "safetensors")
    os.makedirs(out, exist_ok=True)

    # Several dtypes; values are arange() so the C test can recompute them.
    mixed = {
        "layer.weight": np.arange(6, dtype=np.float32).reshape(2, 3) * 0.5,
        "layer.bias": np.arange(3, dtype=np.float64) - 1.0,
        "ids": np.arange(4, dtype=np.int32) - 2,
        "steps": np.arange(4, dtype=np.int64).reshape(2, 2) * 1000000000000,
        "bytes": np.arange(5, dtype=np.uint8) + 250,
        "half": np.arange(3, dtype=np.float16) + 0.5,
        "scalar": np.array(2.25, dtype=np.float32),
        "empty": np.zeros((0, 3), dtype=np.float32),
    }
    save_file(mixed, os.path.join(out, "python_mixed.safetensors"),
              metadata={"format": "np", "note": "h\u00e9llo \"quoted\" \u2713"})

    # A single tensor and no metadata: the smallest real-world file.
    save_file({"w": np.arange(8, dtype=np.float32)},
              os.path.join(out, "python_plain.safetensors"))


if __name__ == "__main__":
    main()
