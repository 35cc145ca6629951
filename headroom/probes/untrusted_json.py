"""Reading JSON Headroom did not write itself (or that anyone could have edited): bounded.

    data = load_json_file(path, max_bytes=16 << 20)        # UntrustedJsonError on anything odd
    data = loads_bounded(text, max_bytes=1 << 20)
    value = typed(data.get("max_model_len"), "int?")       # None when absent or the wrong type

`json.loads` raises RecursionError on ~1000 levels of nesting, gives ints of any length (whose
arithmetic later raises OverflowError, or whose str() raises ValueError past 4300 digits),
and `Infinity`/`NaN`. Here: at most `max_depth` levels (checked before parsing, on the
bracket characters outside strings), integers of more than 18 digits and non-finite numbers
read as null (unknown), every failure is an UntrustedJsonError (a ValueError) with a clear
message, and a file is read only up to `max_bytes`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

MAX_DEPTH = 64  # config.json nests ~4 levels, a journal line ~5
MAX_INT_DIGITS = 18  # below 2**63: anything longer is no count Headroom knows of
_STRING_RE = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS_RE = re.compile(rb"[\[\]{}]")


class UntrustedJsonError(ValueError):
    """A file or text that is not JSON Headroom can use; `str()` says why."""


def loads_bounded(
    data: str | bytes, *, max_bytes: int, max_depth: int = MAX_DEPTH, what: str = "JSON"
) -> object:
    raw = data.encode("utf-8", errors="replace") if isinstance(data, str) else bytes(data)
    if len(raw) > max_bytes:
        raise UntrustedJsonError(f"{what} is {len(raw):,} bytes, over the {max_bytes:,} limit")
    depth = nesting_depth(raw)
    if depth > max_depth:
        raise UntrustedJsonError(f"{what} nests {depth} levels deep (limit {max_depth})")
    try:
        return json.loads(
            raw,
            parse_int=_bounded_int,
            parse_float=_finite_float,
            parse_constant=lambda _name: None,
        )
    except RecursionError:  # the depth check makes this unreachable; kept as a backstop
        raise UntrustedJsonError(f"{what} nests too deep") from None
    except ValueError as error:  # JSONDecodeError, UnicodeDecodeError
        raise UntrustedJsonError(f"{what} is not valid JSON: {error}") from None


def load_json_file(path: str | Path, *, max_bytes: int, max_depth: int = MAX_DEPTH) -> object:
    """Parse a JSON file of at most `max_bytes`; OSError when it cannot be read."""
    with open(path, "rb") as fh:
        raw = fh.read(max_bytes + 1)
    return loads_bounded(raw, max_bytes=max_bytes, max_depth=max_depth, what=str(path))


def nesting_depth(raw: bytes) -> int:
    """Deepest bracket nesting outside strings (linear, in C-speed regex passes)."""
    stripped = _STRING_RE.sub(b'""', raw) if b'"' in raw else raw
    depth = deepest = 0
    for bracket in _BRACKETS_RE.findall(stripped):
        if bracket in (b"[", b"{"):
            depth += 1
            if depth > deepest:
                deepest = depth
        else:
            depth -= 1
    return deepest


def _bounded_int(text: str) -> int | None:
    digits = len(text) - (text[0] == "-")
    return int(text) if digits <= MAX_INT_DIGITS else None


def _finite_float(text: str) -> float | None:
    value = float(text)
    return value if math.isfinite(value) else None


# --- typed access ----------------------------------------------------------------------

_MISSING = object()


def typed(value: object, kind: str, default: object = None) -> object:
    """`value` when it has the type `kind` names, else `default`.

    Kinds: str, int, float (an int is accepted as a float; bools are neither), bool, list,
    dict, list[str], list[dict], dict[str,str]; a trailing `?` also accepts None.
    """
    if kind.endswith("?"):
        if value is None:
            return None
        kind = kind[:-1]
    return value if _is(value, kind) else default


def _is(value: object, kind: str) -> bool:
    if kind == "str":
        return isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "float":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "list":
        return isinstance(value, list)
    if kind == "dict":
        return isinstance(value, dict)
    if kind == "list[str]":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if kind == "list[dict]":
        return isinstance(value, list) and all(isinstance(v, dict) for v in value)
    if kind == "dict[str,str]":
        return isinstance(value, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        )
    raise ValueError(f"unknown kind {kind!r}")


def typed_fields(
    data: Mapping[str, object], kinds: Mapping[str, str], defaults: Mapping[str, object]
) -> tuple[dict[str, Any], list[str]]:
    """The fields of `data` named in `kinds`, each checked; a wrong type takes its default.

    Returns (fields, problems): a field with no default and the wrong type is left out (the
    caller's constructor then says what is missing) and named in problems.
    """
    out: dict[str, Any] = {}
    problems: list[str] = []
    for name, kind in kinds.items():
        if name not in data:
            continue
        value = typed(data[name], kind, _MISSING)
        if value is _MISSING:
            problems.append(f"{name} is not {kind.rstrip('?')}")
            if name in defaults:
                out[name] = defaults[name]
            continue
        out[name] = value
    return out, problems
