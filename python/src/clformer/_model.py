"""A model on a device: loading, saving, its config and its parameters as
numpy arrays under PyTorch's names. LanguageModel and Translator add what
each kind of model does."""
from __future__ import annotations

import json
import os
from ctypes import byref, c_char_p, c_int, c_int64, c_void_p
from typing import Dict, Mapping, Optional, Union

import numpy as np

from . import _lib
from ._device import Device, long_call, resolve
from ._lib import check, encode, lib

PathLike = Union[str, "os.PathLike[str]"]


def _path(path: PathLike) -> bytes:
    return os.fsencode(path)


def precision_code(precision: str) -> int:
    code = c_int()
    check(lib.clformer_precision_parse(encode(precision), byref(code)))
    return code.value


class Model:
    """A model on a device (a handle of the C library). Use `clformer.load`,
    which gives a LanguageModel or a Translator by what the file holds."""

    def __init__(self, handle: int, device: Device, precision: str = "fp32",
                 owned: bool = True):
        self._handle: Optional[int] = handle
        self._session: Optional[int] = None
        self._owned = owned
        self.device = device
        self.precision = precision
        self._precision = precision_code(precision)

    @classmethod
    def _load(cls, path: PathLike, device: Union[Device, str, None], precision: str):
        dev = resolve(device)
        handle = c_void_p()
        with dev.use() as ctx:
            try:
                long_call(lambda: lib.clformer_model_load(ctx, _path(path), byref(handle)))
            except KeyboardInterrupt:  # the load finished first: nobody will use it
                if handle.value:
                    lib.clformer_model_free(handle)
                raise
        return handle.value, dev

    # --- lifetime -----------------------------------------------------------

    @property
    def handle(self) -> int:
        if self._handle is None:
            raise ValueError("the model was closed")
        return self._handle

    def _session_handle(self, ctx: int) -> int:
        """The model's session (activations, caches), made on first use; call
        it holding the device."""
        if self._session is None:
            session = c_void_p()
            check(lib.clformer_session_create(self.handle, byref(session)))
            status = lib.clformer_session_set_precision(session, self._precision)
            if status != 0:
                err = _lib.error(status)
                lib.clformer_session_free(session)
                raise err
            self._session = session.value
        return self._session

    def _free(self) -> None:
        """Frees the session and (if the model is its own) the model; call it
        holding the device."""
        session, handle = self._session, self._handle
        self._session = self._handle = None
        if session is not None:
            lib.clformer_session_free(session)
        if handle is not None and self._owned:
            lib.clformer_model_free(handle)

    def close(self) -> None:
        """Releases the model's device memory (also done when it is collected)."""
        if self._handle is not None:
            with self.device.use():
                self._free()

    def __del__(self) -> None:
        if getattr(self, "_handle", None) is not None:
            self.device.free_later(self._free)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- what it is -----------------------------------------------------------

    @property
    def config(self) -> Dict[str, object]:
        """The model's config as a checkpoint stores it (docs/MODEL.md)."""
        config = lib.clformer_model_config(self.handle)
        return json.loads(_lib.take_string(lib.clformer_config_to_json(config)))

    @property
    def parameter_count(self) -> int:
        return int(lib.clformer_model_parameter_count(self.handle))

    @property
    def step(self) -> int:
        """Optimizer steps the model has taken."""
        return int(lib.clformer_model_step(self.handle))

    def save(self, path: PathLike, training_state: bool = False) -> None:
        """Writes a checkpoint (atomically); with training_state, Adam's
        moments and the step too, so that training can resume from it."""
        with self.device.use():
            long_call(lambda: lib.clformer_model_save(self.handle, _path(path), training_state))

    # --- parameters -----------------------------------------------------------

    def _tensors(self):
        """(name, shape) of every tensor, in the order of a checkpoint."""
        name, ndim, shape = c_char_p(), c_int(), (c_int64 * 2)()
        for i in range(lib.clformer_model_tensor_count(self.handle)):
            check(lib.clformer_model_tensor_info(self.handle, i, byref(name), byref(ndim), shape))
            yield name.value.decode(), tuple(shape[:ndim.value])

    def state_dict(self) -> Dict[str, np.ndarray]:
        """Every parameter as a float32 array under PyTorch's state_dict name
        (a tied generator.weight too), copied from the device:
        `torch_model.load_state_dict({k: torch.from_numpy(v) ...})` takes it."""
        out: Dict[str, np.ndarray] = {}
        with self.device.use():
            for name, shape in self._tensors():
                array = np.empty(shape, dtype=np.float32)
                check(lib.clformer_model_read_tensor(self.handle, name.encode(), False,
                                                     array.ctypes.data, array.size))
                out[name] = array
        return out

    def load_state_dict(self, state: Mapping[str, object], strict: bool = True) -> None:
        """Writes parameters (arrays or anything np.asarray takes, such as CPU
        torch tensors) into the model by name; optimizer state is left as it
        is. strict: the names must be exactly the model's."""
        with self.device.use():
            shapes = dict(self._tensors())
            if strict:
                missing = [k for k in shapes if k not in state]
                unexpected = [k for k in state if k not in shapes]
                if missing or unexpected:
                    raise KeyError(f"state dict does not match the model: missing {missing}, "
                                   f"unexpected {unexpected}")
            for name, value in state.items():
                if name not in shapes:
                    continue
                array = np.ascontiguousarray(np.asarray(value, dtype=np.float32))
                if array.shape != shapes[name]:
                    raise ValueError(f"'{name}' has shape {array.shape}; the model's is "
                                     f"{shapes[name]}")
                check(lib.clformer_model_write_tensor(self.handle, name.encode(),
                                                      array.ctypes.data, array.size))
