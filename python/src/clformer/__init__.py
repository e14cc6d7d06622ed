"""clformer from Python: train and run Transformers on any OpenCL device.

A thin layer over the C library (include/clformer.h) through ctypes: the
library does the work, this package turns its handles into objects, its
statuses into exceptions and its buffers into numpy arrays. docs/PYTHON.md
is the guide.

    import clformer
    clformer.devices()                                  # what OpenCL offers
    lm = clformer.load("lm.safetensors")                # or a Hugging Face GPT-2 directory
    print(lm.generate("ROMEO:", max_tokens=100, seed=1))
"""
from __future__ import annotations

from typing import List, Union

from ._device import Device, DeviceDescription, devices
from ._lib import lib as _c
from ._model import Model, PathLike
from .errors import (BuildError, CLBlastError, ClformerError, DivergedError, FileError,
                     FormatError, InvalidArgumentError, NoDeviceError, OpenCLError,
                     OutOfMemoryError, StoppedError)
from .lm import LanguageModel, Score, Token
from .train import Result, Step, Trainer, Validation
from .translate import BleuScore, Translator, bleu

__version__: str = _c.clformer_version().decode()


def load(path: PathLike, device: Union[Device, str, None] = None,
         precision: str = "fp32") -> Model:
    """Loads a checkpoint, or a Hugging Face GPT-2 directory (config.json +
    model.safetensors), onto a device (a Device, a CLFORMER_DEVICE selector,
    or None for $CLFORMER_DEVICE's choice). Returns a LanguageModel for a
    decoder-only model, a Translator for an encoder-decoder one. precision
    ("fp32", "bf16", "fp16") is the storage precision of its passes, as the
    command's --precision."""
    handle, dev = Model._load(path, device, precision)
    lm = _c.clformer_model_config(handle).contents.n_enc_layers == 0
    return (LanguageModel if lm else Translator)(handle, dev, precision)


def presets(lm: bool = False) -> List[str]:
    """The model presets: translation ("tiny", "small", "base") or, with lm,
    language models ("gpt-mini", "gpt-char", "gpt2")."""
    names = _c.clformer_config_lm_presets() if lm else _c.clformer_config_presets()
    out = []
    i = 0
    while names[i]:
        out.append(names[i].decode())
        i += 1
    return out


__all__ = [
    "BleuScore", "BuildError", "CLBlastError", "ClformerError", "Device", "DeviceDescription",
    "DivergedError", "FileError", "FormatError", "InvalidArgumentError", "LanguageModel",
    "Model", "NoDeviceError", "OpenCLError", "OutOfMemoryError", "Result", "Score", "Step",
    "StoppedError", "Token", "Trainer", "Translator", "Validation", "bleu", "devices", "load",
    "presets",
]
