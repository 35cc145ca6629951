"""Reading vLLM command-line tokens: which token is which flag, with what typed value.

Used by headroom.vllm_cmd (import from there). Follows vLLM's FlexibleArgumentParser:
`--flag value`, `--flag=value`, underscores, short forms, `-O3`, booleans and their
negations, dotted JSON keys, human-readable integers. Unknown flags are kept.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from headroom.probes.untrusted_json import loads_bounded
from headroom.vllm_cmd.flags import FlagSpec, lookup_dest, lookup_option


class CommandLineError(ValueError):
    """A vLLM command line that cannot be read or changed; the message says why."""


# ---------------------------------------------------------------------------------------
# Values


_HUMAN_INT = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


_MAX_INT_CHARS = 24
_MAX_INT = 2**63 - 1  # what vLLM's own int64 fields can hold
_MAX_JSON_BYTES = 1 << 20  # a flag's JSON (--quantization-config...) is a few hundred bytes


def _in_range(value: int, text: object) -> int:
    if abs(value) > _MAX_INT:
        raise CommandLineError(f"{str(text)[:24]!r} is out of range (more than 2**63)")
    return value


def _json(raw: str, option: str = "the value") -> object:
    """A flag's JSON value, bounded in size, nesting and numbers (UntrustedJsonError)."""
    return loads_bounded(raw, max_bytes=_MAX_JSON_BYTES, what=f"{option}'s JSON")


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError("not a finite number")
    return value


def parse_human_int(text: str) -> int:
    """vLLM's human_readable_int: `16k` = 16000, `10G` = 10 GiB, `10g` = 10**10, `1.5k` = 1500.

    Binary suffixes (upper case) take whole numbers only, as in vLLM.
    """
    value = str(text).strip()
    if len(value) > _MAX_INT_CHARS:  # int() of 400 digits works, float() of it overflows
        raise CommandLineError(f"{value[:24]}...: a number of {len(value)} digits is out of range")
    match = _HUMAN_INT.fullmatch(value)
    if match:
        number, suffix = match.groups()
        if suffix in _DECIMAL:
            return _in_range(int(float(number) * _DECIMAL[suffix]), text)
        if "." in number:
            raise CommandLineError(
                f"{text!r}: decimals are not allowed with the binary suffix {suffix} "
                f"(did you mean {number}{suffix.lower()}?)"
            )
        return _in_range(int(number) * _BINARY[suffix], text)
    try:
        return _in_range(int(value), text)
    except CommandLineError:
        raise
    except ValueError:
        raise CommandLineError(
            f"{text!r} is not a whole number (vLLM accepts e.g. 4096, 16k, 10G)"
        ) from None


def _convert(spec_type: str, raw: str, option: str) -> object:
    """Turn one raw value into the type vLLM's parser would give it."""
    try:
        if spec_type == "int":
            if len(raw.strip()) > _MAX_INT_CHARS:
                raise ValueError(f"{len(raw.strip())} digits is out of range")
            return _in_range(int(raw), raw)
        if spec_type == "float":
            return _finite(float(raw))
        if spec_type == "hint":
            return parse_human_int(raw)
        if spec_type == "hint_auto":
            if raw.strip() == "-1" or raw.strip().lower() == "auto":
                return -1
            return parse_human_int(raw)
        if spec_type == "json":
            return _json(raw, option)
        if spec_type == "json_or_str":
            try:
                return _json(raw, option)
            except ValueError:
                return raw
        if spec_type == "bool":
            return _parse_bool(raw)
    except (ValueError, TypeError) as exc:
        kind = {"hint": "a whole number", "hint_auto": "a whole number or auto"}.get(
            spec_type, "an integer" if spec_type == "int" else spec_type
        )
        if spec_type == "json":
            kind = "JSON"
        shown = raw if len(raw) <= 80 else raw[:60] + f"... ({len(raw):,} characters)"
        why = str(exc) if len(str(exc)) <= 200 else str(exc)[:160] + "..."
        raise CommandLineError(f"{option} expects {kind}, got {shown!r} ({why})") from None
    return raw


def _parse_bool(raw: str) -> bool:
    low = raw.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"not a boolean: {raw!r}")


def format_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


# ---------------------------------------------------------------------------------------
# Reading the tokens


@dataclass(frozen=True)
class Occurrence:
    """One flag as it appears in the tokens: tokens[start:end] belong to it."""

    start: int
    end: int
    dest: str
    option: str  # the option as typed, before any "=" (e.g. "-tp", "--max_model_len")
    spec: FlagSpec | None  # None: a flag this table does not know
    form: str  # "sep" (--x v), "eq" (--x=v), "bare" (--x), "dotted", "O" (-O3)
    raw: tuple[str, ...]  # the raw value(s); empty for bare flags
    value: object  # the typed value (True/False for booleans)


def looks_like_flag(token: str) -> bool:
    # argparse treats "-1" and "-0.5" as values, not options.
    if not token.startswith("-") or token == "-":
        return False
    return not re.fullmatch(r"-\d+(\.\d*)?|-\.\d+", token)


def _bool_option(option: str) -> tuple[FlagSpec | None, bool]:
    """Resolve `--x`, `--no-x`, `--disable-x`, `--no-enable-x` to (spec, value)."""
    spec = lookup_option(option)
    if spec is not None:
        return spec, True
    long = "--" + option[2:].replace("_", "-") if option.startswith("--") else option
    if long.startswith("--no-"):
        spec = lookup_option("--" + long[5:])
        if spec is not None and spec.kind == "bool":
            return spec, False
    if long.startswith("--disable-"):
        spec = lookup_option("--enable-" + long[10:])
        if spec is not None and spec.kind == "bool":
            return spec, False
    return None, True


# Booleans that vLLM's StoreBoolean action read with an optional word (nargs="?",
# const="True"; "true"/"false" in any case) before they became --x/--no-x: in 0.6.3's
# engine/arg_utils.py `--enable-chunked-prefill False` turns chunked prefill OFF, and RL
# frameworks still write it so. Gone from the 0.9.2 parser.
STORE_BOOLEAN_DESTS = frozenset(
    {"enable_chunked_prefill", "multi_step_stream_outputs", "disable_logprobs_during_spec_decoding"}
)


def scan_tokens(tokens: Sequence[str], *, strict: bool) -> list[Occurrence]:
    """Find every flag in `tokens`; strict mode raises CommandLineError on bad values."""
    found: list[Occurrence] = []
    i, n = 0, len(tokens)
    while i < n:
        token = tokens[i]
        if token == "--":  # everything after is positional; keep it, read nothing
            break
        if not looks_like_flag(token):
            i += 1  # a stray positional (e.g. a value of an unknown flag we skipped)
            continue
        # -O3, -O=3, -Odecode, -O 3: FlexibleArgumentParser's shorthand for the level.
        if token.startswith("-O") and not token.startswith("--"):
            spec = lookup_dest("optimization_level")
            if token == "-O":
                if i + 1 < n and tokens[i + 1] in ("0", "1", "2", "3"):
                    found.append(
                        Occurrence(i, i + 2, "optimization_level", "-O", spec, "sep",
                                    (tokens[i + 1],), tokens[i + 1])
                    )  # fmt: skip
                    i += 2
                    continue
            else:
                level = token[3:] if token[2] == "=" else token[2:]
                form = "eq" if token[2] == "=" else "O"
                found.append(
                    Occurrence(i, i + 1, "optimization_level", "-O", spec, form, (level,), level)
                )
                i += 1
                continue
        option, eq, inline = token.partition("=")
        if "." in option:
            found.append(_dotted(tokens, i, option, eq, inline, strict))
            i = found[-1].end
            continue
        spec, positive = _bool_option(option)
        if spec is None or spec.kind not in ("bool", "flag"):
            spec = lookup_option(option)
        if spec is None:
            occ = _unknown(tokens, i, option, eq, inline)
        elif spec.kind in ("bool", "flag"):
            if eq:  # argparse rejects "--x=..." for booleans; read it leniently
                try:
                    value = _parse_bool(inline) == positive
                except ValueError:
                    if strict:
                        raise CommandLineError(
                            f"{option} takes no value (got {inline!r})"
                        ) from None
                    value = positive
                occ = Occurrence(i, i + 1, spec.dest, option, spec, "eq", (inline,), value)
            elif (
                spec.dest in STORE_BOOLEAN_DESTS
                and i + 1 < n
                and tokens[i + 1].lower() in ("true", "false")
            ):
                # the older releases' `--enable-chunked-prefill false` (see STORE_BOOLEAN_DESTS)
                word = tokens[i + 1]
                value = (word.lower() == "true") == positive
                occ = Occurrence(i, i + 2, spec.dest, option, spec, "sep", (word,), value)
            else:
                occ = Occurrence(i, i + 1, spec.dest, option, spec, "bare", (), positive)
        else:
            occ = _valued(tokens, i, option, spec, eq, inline, strict)
        found.append(occ)
        i = occ.end
    return found


def _valued(
    tokens: Sequence[str], i: int, option: str, spec: FlagSpec, eq: str, inline: str, strict: bool
) -> Occurrence:
    if eq:
        raw: tuple[str, ...] = (inline,)
        end, form = i + 1, "eq"
    else:
        j = i + 1
        while j < len(tokens) and not looks_like_flag(tokens[j]) and tokens[j] != "--":
            j += 1
            if spec.nargs != "+":
                break
        raw = tuple(tokens[i + 1 : j])
        end, form = j, "sep"
        if not raw and spec.nargs != "?":
            if strict:
                raise CommandLineError(f"{option} needs a value")
            return Occurrence(i, end, spec.dest, option, spec, "bare", (), None)
    if not raw:
        value: object = None
    elif spec.nargs == "+":
        value = [_typed(spec, r, option, strict) for r in raw]
    else:
        value = _typed(spec, raw[0], option, strict)
    return Occurrence(i, end, spec.dest, option, spec, form, raw, value)


def _typed(spec: FlagSpec, raw: str, option: str, strict: bool) -> object:
    try:
        return _convert(spec.type, raw, option)
    except CommandLineError:
        if strict:
            raise
        return raw


def _unknown(tokens: Sequence[str], i: int, option: str, eq: str, inline: str) -> Occurrence:
    """A flag the table does not know: keep it; a following non-flag token is its value."""
    dest = option.lstrip("-").replace("-", "_")
    if eq:
        return Occurrence(i, i + 1, dest, option, None, "eq", (inline,), _guess(inline))
    if i + 1 < len(tokens) and not looks_like_flag(tokens[i + 1]) and tokens[i + 1] != "--":
        raw = tokens[i + 1]
        return Occurrence(i, i + 2, dest, option, None, "sep", (raw,), _guess(raw))
    if option.startswith("--no-"):
        return Occurrence(i, i + 1, option[5:].replace("-", "_"), option, None, "bare", (), False)
    return Occurrence(i, i + 1, dest, option, None, "bare", (), True)


def _guess(raw: str) -> object:
    """Best-effort type for the value of an unknown flag: int, float, JSON, else the string."""
    if len(raw) <= _MAX_INT_CHARS:
        for cast in (int, float):
            try:
                value = cast(raw)
            except ValueError:
                continue
            if isinstance(value, float) and not math.isfinite(value):
                break  # "inf", "1e400": keep the text
            return value
    if raw[:1] in "{[":
        try:
            return _json(raw)
        except ValueError:
            pass
    return raw


def _dotted(
    tokens: Sequence[str], i: int, option: str, eq: str, inline: str, strict: bool
) -> Occurrence:
    """`--compilation-config.level 3` sets one key of a JSON-valued flag.

    As in vLLM's FlexibleArgumentParser: the value is the next token (whatever it looks
    like), read as JSON, else as a human-readable int, else as a string; `key+ a,b` makes a
    list; all dotted keys of one flag merge into one object that replaces a full JSON value.
    """
    base, _, path = option.partition(".")
    spec = lookup_option(base)
    dest = spec.dest if spec is not None else base.lstrip("-").replace("-", "_")
    if eq:
        raw, end, form = inline, i + 1, "dotted:eq"
    elif i + 1 < len(tokens):
        raw, end, form = tokens[i + 1], i + 2, "dotted:sep"
    else:
        if strict:
            raise CommandLineError(f"{option} needs a value")
        raw, end, form = "", i + 1, "dotted:bare"
    value: object
    if path.endswith("+"):
        value = raw.split(",")
    else:
        try:
            value = _json(raw, base)
        except ValueError:
            try:
                value = parse_human_int(raw)
            except CommandLineError:
                value = raw
    for key in reversed([k for k in path.rstrip("+").split(".") if k]):
        value = {key: value}
    return Occurrence(i, end, dest, option, spec, form, (raw,), value)


def merge_json(into: dict, update: Mapping) -> dict:
    out = dict(into)
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge_json(dict(out[key]), value)
        else:
            out[key] = value
    return out
