"""The one place Headroom calls NVML: every pynvml call goes through `NvmlCaller.call`.

NVML fails per field, per GPU, and the failures mean different things:

* NotSupported / NoPermission / FunctionNotFound: this field does not exist here (GeForce
  cards have no ECC, MIG hides utilisation, an old driver lacks a symbol). The field is None,
  the call is remembered per GPU so it is not retried on every sample, and its name is listed
  once in `unsupported`.
* GpuIsLost: the GPU fell off the bus. That GPU is marked lost for this sample and nothing else
  is asked of it, but the other GPUs carry on.
* Anything else (Unknown, Timeout, a bindings mismatch, a stand-in raising TypeError) is treated
  like a missing value for that one field: a monitor must never die because one reading failed.

`load_nvml_module()` picks the module: pynvml, or the simulator's stand-in when
HEADROOM_NVML_STANDIN names a state file (the demo runs on machines without GPUs).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import Any

# NVML return codes (pynvml.py, nvidia-ml-py 13.615.71). Compared by value so a stand-in
# module only needs NVMLError subclasses carrying `.value`.
NOT_SUPPORTED = 3
NO_PERMISSION = 4
INVALID_ARGUMENT = 2
NOT_FOUND = 6
DRIVER_NOT_LOADED = 9
LIBRARY_NOT_FOUND = 12
FUNCTION_NOT_FOUND = 13
GPU_IS_LOST = 15
LIB_RM_VERSION_MISMATCH = 18

# Codes meaning "this field does not exist on this GPU / driver": cache and stop asking.
_ABSENT_CODES = {NOT_SUPPORTED, NO_PERMISSION, FUNCTION_NOT_FOUND, INVALID_ARGUMENT, NOT_FOUND}

_INIT_REASONS = {
    LIBRARY_NOT_FOUND: "NVML library not found (is the NVIDIA driver installed?)",
    DRIVER_NOT_LOADED: "NVIDIA driver not loaded",
    NO_PERMISSION: "no permission to open the NVIDIA devices",
    LIB_RM_VERSION_MISMATCH: "NVML library and kernel driver versions differ (reboot or reload the driver)",
    FUNCTION_NOT_FOUND: "the NVML library is too old for nvidia-ml-py",
}

STANDIN_ENV = "HEADROOM_NVML_STANDIN"


def load_nvml_module() -> Any:
    """Return a pynvml-like module: the simulator's stand-in if HEADROOM_NVML_STANDIN is set.

    Raises ImportError when neither is importable; `NvmlProbe` turns that into
    `available=False` with a reason.
    """
    state_path = os.environ.get(STANDIN_ENV)
    if state_path:
        # The one place a non-simulator module imports the simulator (docs/ARCHITECTURE.md).
        standin = importlib.import_module("headroom.simulator.nvml_standin")
        standin.bind(state_path)
        return standin
    return importlib.import_module("pynvml")


def error_code(exc: BaseException) -> int | None:
    """The NVML return code carried by an NVMLError (None for other exceptions)."""
    value = getattr(exc, "value", None)
    return value if isinstance(value, int) else None


def init_failure_reason(exc: BaseException) -> str:
    """A one-line, human reason for why nvmlInit() failed."""
    code = error_code(exc)
    if code in _INIT_REASONS:
        return _INIT_REASONS[code]
    if isinstance(exc, ImportError):
        return "nvidia-ml-py (pynvml) is not importable"
    text = str(exc).strip() or type(exc).__name__
    return f"NVML could not start: {text}"


class GpuLost(Exception):
    """Raised inside a per-GPU read once that GPU answered GpuIsLost."""


def to_str(value: Any) -> str | None:
    """Old bindings return bytes for strings; decode them, keep None as None."""
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


class NvmlCaller:
    """Calls pynvml functions by name and turns their failures into None.

    `absent` remembers (gpu, function, args) that said NotSupported so a later sample does
    not pay for them again; `unsupported` lists each such function name once, in order.
    """

    def __init__(self, nvml: Any) -> None:
        self.nvml = nvml
        self.unsupported: list[str] = []
        self.last_absent = False
        self._absent: set[tuple[int | None, int | None, str, tuple]] = set()
        # The function names in `_absent`: most calls skip building a key (a hot path: a
        # sample of an 8-GPU node makes a few hundred calls).
        self._absent_names: set[str] = set()

    def _note_unsupported(self, name: str) -> None:
        if name not in self.unsupported:
            self.unsupported.append(name)

    def call(
        self,
        name: str,
        *args: Any,
        gpu: int | None = None,
        peer: int | None = None,
        quiet: bool = False,
        **kwargs: Any,
    ) -> Any:
        """Call `nvml.<name>(*args)`; None when the call fails. GpuIsLost raises GpuLost.

        `gpu` is the NVML index the call concerns (None for system-wide calls) and `peer` the
        second GPU of pairwise calls; with the scalar arguments they key the NotSupported cache.
        `quiet` caches a NotSupported answer without listing it (a fallback may still work).
        `last_absent` tells afterwards whether a None meant "not supported here".
        """
        self.last_absent = True
        if name in self._absent_names and _key(name, args, gpu, peer, kwargs) in self._absent:
            return None
        func: Callable[..., Any] | None = getattr(self.nvml, name, None)
        if func is None:
            self._remember_absent(_key(name, args, gpu, peer, kwargs))
            if not quiet:
                self._note_unsupported(name)
            return None
        try:
            return func(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - every NVML failure must stay per field
            code = error_code(exc)
            if code == GPU_IS_LOST:
                raise GpuLost(name) from exc
            if code in _ABSENT_CODES:
                self._remember_absent(_key(name, args, gpu, peer, kwargs))
                if not quiet and code != INVALID_ARGUMENT and code != NOT_FOUND:
                    self._note_unsupported(name)
                return None
            self.last_absent = False
            return None

    def first_of(self, calls: list[tuple[str, tuple, dict]], gpu: int | None = None) -> Any:
        """The first of several equivalent calls that answers (newer API first, then older).

        Only when every alternative is unsupported is the first name listed in `unsupported`,
        so a driver that lacks memory-info v2 but answers v1 is not reported as lacking memory.
        """
        all_absent = True
        for name, args, kwargs in calls:
            value = self.call(name, *args, gpu=gpu, quiet=True, **kwargs)
            if value is not None:
                return value
            all_absent = all_absent and self.last_absent
        if all_absent and calls:
            self._note_unsupported(calls[0][0])
        return None

    def forget_gpu(self, gpu: int) -> None:
        """Drop the NotSupported cache of one GPU (after it came back from being lost)."""
        self._absent = {key for key in self._absent if gpu not in (key[0], key[1])}
        self._absent_names = {key[2] for key in self._absent}

    def _remember_absent(self, key: tuple[int | None, int | None, str, tuple]) -> None:
        self._absent.add(key)
        self._absent_names.add(key[2])


def _key(
    name: str, args: tuple, gpu: int | None, peer: int | None, kwargs: dict[str, Any]
) -> tuple[int | None, int | None, str, tuple]:
    """The NotSupported cache key of one call.

    kwargs are part of it: memory info v2 may be NotSupported where v1 works.
    """
    extra = _hashable(tuple(sorted(kwargs.items()))) if kwargs else ()
    return (gpu, peer, name, _hashable(args) + extra)


_SCALARS = (int, str, float)  # bool is an int


def _hashable(args: tuple) -> tuple:
    """Handles are opaque objects; the cache key uses only plain scalar arguments."""
    kept = []
    for a in args:  # a plain loop: this runs for most calls of every sample
        if isinstance(a, _SCALARS) or (
            isinstance(a, tuple) and all(isinstance(x, int | str) for x in a)
        ):
            kept.append(a)
    return tuple(kept)
