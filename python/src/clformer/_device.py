"""Devices: listing them, opening one (a clformer context), and the rules for
using it from Python threads.

A context is used by one thread at a time (docs/API.md "Threads"), so every
object made on a Device calls into the library holding the device's lock:
calls on one device from several threads run one after another, calls on
different devices at the same time. Long calls run in a worker thread while
the calling thread waits (long_call), so that Ctrl-C raises KeyboardInterrupt
in the caller at once and the library is asked to stop where it can.
"""
from __future__ import annotations

import ctypes
import os
import signal
import threading
from contextlib import contextmanager
from ctypes import byref, c_size_t, c_void_p
from dataclasses import dataclass
from typing import Callable, Dict, Iterator, List, Optional, Union

from ._lib import DeviceInfo, check, encode, error, last_error, lib


@dataclass(frozen=True)
class DeviceDescription:
    """One OpenCL device as clformer sees it (`clformer devices`)."""

    selector: str        #: "P:D", the index pair CLFORMER_DEVICE takes
    name: str
    platform: str
    vendor: str
    type: str            #: "gpu", "cpu", "accelerator" or "other"
    compute_units: int
    global_mem_bytes: int
    max_alloc_bytes: int
    fp16: bool
    fp64: bool
    simulator: bool      #: e.g. Oclgrind: chosen only when named
    driver_version: str
    chosen: bool         #: the device CLFORMER_DEVICE (or the default rule) selects


def _text(field: bytes) -> str:
    return field.decode("utf-8", "replace")


def _describe(d: DeviceInfo, chosen: bool) -> DeviceDescription:
    return DeviceDescription(
        selector=_text(d.selector), name=_text(d.name), platform=_text(d.platform),
        vendor=_text(d.vendor), type=_text(lib.clformer_device_type_name(d.type)),
        compute_units=d.compute_units, global_mem_bytes=d.global_mem_bytes,
        max_alloc_bytes=d.max_alloc_bytes, fp16=d.fp16, fp64=d.fp64, simulator=d.simulator,
        driver_version=_text(d.driver_version), chosen=chosen)


def devices() -> List[DeviceDescription]:
    """Every OpenCL device of every platform; `chosen` marks the one that
    $CLFORMER_DEVICE (or, unset, the default rule: the best GPU, else an
    accelerator, else a CPU) selects."""
    array = ctypes.POINTER(DeviceInfo)()
    count = c_size_t()
    check(lib.clformer_list_devices(byref(array), byref(count)))
    try:
        index = c_size_t(count.value)
        selector = os.environ.get("CLFORMER_DEVICE")
        if count.value and lib.clformer_select_device(array, count, encode(selector),
                                                      byref(index)) != 0:
            index = c_size_t(count.value)  # a selector that matches nothing: none chosen
        return [_describe(array[i], i == index.value) for i in range(count.value)]
    finally:
        lib.clformer_free(array)


class Device:
    """An opened device: a clformer context with its queue and compiled kernels.

    `selector` takes CLFORMER_DEVICE's grammar ("P:D", "gpu", "cpu",
    "pocl:pthread", "intel:cpu", "oclgrind", ...); None uses $CLFORMER_DEVICE,
    else the default rule. The context's other settings come from the
    environment as for the command (CLFORMER_CACHE_DIR, CLFORMER_GEMM, ...).
    Models made on a device keep it open; close() (or the end of a `with`
    block) releases it once nothing uses it any more.
    """

    def __init__(self, selector: Optional[str] = None):
        self._lock = threading.Lock()
        self._owner: Optional[int] = None
        # frees asked for by the garbage collector, which must never wait for
        # the lock (it may run while this thread holds it): done at next use
        self._to_free: List[Callable[[], None]] = []
        ctx = c_void_p()
        check(lib.clformer_context_create(encode(selector), byref(ctx)))
        self._ctx: Optional[int] = ctx.value
        info = lib.clformer_context_device(ctx).contents
        self.description = _describe(info, True)

    @property
    def name(self) -> str:
        return self.description.name

    def __repr__(self) -> str:
        return f"Device({self.description.selector!r}: {self.name})"

    @contextmanager
    def use(self) -> Iterator[int]:
        """Holds the device for one call (or one streaming generation) and
        gives the context handle."""
        me = threading.get_ident()
        if self._owner == me:
            raise RuntimeError("this thread is already using the device: a streaming generate "
                               "on it is still open (iterate it to the end or close() it)")
        with self._lock:
            if self._ctx is None:
                raise ValueError("the device was closed")
            self._owner = me
            try:
                self._free_pending()
                yield self._ctx
            finally:
                self._owner = None

    def _free_pending(self) -> None:
        while self._to_free:
            self._to_free.pop()()

    def free_later(self, free: Callable[[], None]) -> None:
        """Frees a handle now if the device is free, else at its next use
        (for __del__, which must not wait)."""
        self._to_free.append(free)
        if self._lock.acquire(blocking=False):
            try:
                self._free_pending()
            finally:
                self._lock.release()

    def close(self) -> None:
        """Releases the context (models on it must be closed first)."""
        with self._lock:
            self._free_pending()
            if self._ctx is not None:
                lib.clformer_context_free(self._ctx)
                self._ctx = None

    def __enter__(self) -> "Device":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_opened: Dict[Optional[str], Device] = {}
_opened_lock = threading.Lock()


def resolve(device: Union[Device, str, None]) -> Device:
    """A Device as given, or the process's one Device for a selector (None:
    $CLFORMER_DEVICE), opened on first use and kept open."""
    if isinstance(device, Device):
        return device
    key = device if device is not None else os.environ.get("CLFORMER_DEVICE")
    with _opened_lock:
        if key not in _opened:
            _opened[key] = Device(key)
        return _opened[key]


@contextmanager
def deferred_interrupts(on_interrupt: Optional[Callable[[], None]] = None) -> Iterator[bool]:
    """Inside the block, Ctrl-C calls on_interrupt (once) instead of raising
    wherever the main thread happens to be; KeyboardInterrupt is raised when
    the block ends. Gives whether it is in force: only in the main thread with
    Python's default handler (a program's own handler is left alone)."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield False
        return
    came: List[int] = []

    def note(signum: int, frame: object) -> None:
        if not came and on_interrupt is not None:
            on_interrupt()
        came.append(signum)

    previous = signal.signal(signal.SIGINT, note)
    try:
        yield True
    finally:
        signal.signal(signal.SIGINT, previous)
    if came:
        raise KeyboardInterrupt


def wait_for(done: threading.Event) -> None:
    """Waits in short sleeps, so that signal handlers run meanwhile."""
    while not done.wait(0.05):
        pass


def long_call(call: Callable[[], int], stop: Optional[Callable[[], None]] = None) -> None:
    """Runs a long library call in a worker thread while this thread waits.

    Ctrl-C then reaches Python at once: `stop` (if given) asks the library to
    stop, the call is waited for (the context must not be left in use), and
    KeyboardInterrupt is raised. A failed status raises its exception with
    the message of the worker thread, where the call ran. Where Ctrl-C cannot
    be deferred (outside the main thread, or under a program's own SIGINT
    handler), the call runs on this thread.
    """
    outcome: Dict[str, object] = {}
    done = threading.Event()

    def work() -> None:
        try:
            status = call()
            outcome["status"] = status
            outcome["message"] = last_error() if status else ""
        except BaseException as e:  # a Python error in the call's arguments: raised below
            outcome["exception"] = e
        finally:
            done.set()

    with deferred_interrupts(stop) as deferred:
        if deferred:
            threading.Thread(target=work, name="clformer-call", daemon=True).start()
            wait_for(done)
        else:
            work()
    if "exception" in outcome:
        raise outcome["exception"]  # type: ignore[misc]
    status = int(outcome["status"])  # type: ignore[arg-type]
    if status != 0:
        raise error(status, str(outcome.get("message", "")))
