"""The settings a launcher's own command line gives, and vLLM engine args made of them.

Launchers spell settings in one of three ways: argparse/HfArgumentParser/click options
(`--num-gpus 3`, `--vllm_maxlen=2048`, `--enforce_eager`, `--no_x`), Hydra/OmegaConf
overrides (`actor_rollout_ref.rollout.tensor_model_parallel_size=2`, `+a.b=c`, `++a=b`),
and YAML pasted as text (`vllm_maxlen: 2048`). `read_settings` reads all three into
(name, value) pairs, names with underscores; `engine_value` gives a value the type vLLM's
own parser gives that engine arg (the flag table), or says why it cannot.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from headroom.vllm_cmd.flags import FLAGS_BY_OPTION, FlagSpec, lookup_dest, lookup_option
from headroom.vllm_cmd.scan import CommandLineError, format_value, looks_like_flag, scan_tokens

_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}
_KEY = re.compile(r"[+~]{0,2}([A-Za-z_][\w.\-]*)")
_YAML_PUNCTUATION = "[]{},'\""


@dataclass(frozen=True)
class Setting:
    """One setting as the line gives it: `name` with underscores (dots kept), the raw value
    (True for a bare option), `typed` as written, and the tokens it took."""

    name: str
    value: str | bool
    typed: str
    start: int
    end: int


def normal_name(text: str) -> str:
    return text.lstrip("-+~").replace("-", "_")


def read_settings(tokens: Sequence[str], is_bool: Callable[[str], bool]) -> list[Setting]:
    """Every setting the tokens give, in order (a later one wins when read into a dict).

    `is_bool(name)` says which options take no value, so `--enforce_eager --x 1` reads
    both; an option the caller does not know takes the next token unless it is an option.
    """
    out: list[Setting] = []
    i, n = 0, len(tokens)
    while i < n:
        token = tokens[i]
        if looks_like_flag(token) and len(token) > 1 and token != "--":
            option, eq, inline = token.partition("=")
            name = normal_name(option)
            if not name:
                i += 1
                continue
            if eq:
                out.append(Setting(name, inline, option, i, i + 1))
                i += 1
            elif is_bool(name):
                following = tokens[i + 1].lower() if i + 1 < n else ""
                if following in _TRUE | _FALSE:  # HfArgumentParser: `--x true`
                    out.append(Setting(name, following in _TRUE, option, i, i + 2))
                    i += 2
                else:
                    out.append(Setting(name, True, option, i, i + 1))
                    i += 1
            elif i + 1 < n and not looks_like_flag(tokens[i + 1]):
                out.append(Setting(name, tokens[i + 1], option, i, i + 2))
                i += 2
            else:
                out.append(Setting(name, True, option, i, i + 1))
                i += 1
            continue
        key, eq, value = token.partition("=")
        match = _KEY.fullmatch(key) if eq else None
        if match is not None:
            out.append(Setting(normal_name(match.group(1)), value, key, i, i + 1))
        elif token.endswith(":") and i + 1 < n and _KEY.fullmatch(token[:-1].strip("-'\"")):
            # `vllm_maxlen: 2048` pasted from a YAML file (a key with no value is a section)
            following = tokens[i + 1]
            if not following.endswith(":"):
                out.append(Setting(normal_name(token[:-1].strip("-'\"")), following,
                                   token[:-1], i, i + 2))  # fmt: skip
                i += 2
                continue
        i += 1
    return out


def yaml_scalar(raw: str | bool) -> str | bool:
    """A value as YAML/OmegaConf writes it, quotes and list punctuation taken away."""
    if isinstance(raw, bool):
        return raw
    text = raw.strip().strip(_YAML_PUNCTUATION).strip()
    return text


def as_bool(raw: str | bool) -> bool | None:
    if isinstance(raw, bool):
        return raw
    low = str(yaml_scalar(raw)).lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    return None


def as_int(raw: str | bool) -> int | None:
    if isinstance(raw, bool):
        return None
    text = str(yaml_scalar(raw)).replace("_", "")
    if re.fullmatch(r"-?\d{1,18}", text):
        return int(text)
    if re.fullmatch(r"-?\d{1,18}\.0*", text):
        return int(float(text))
    return None


def as_json_object(raw: str | bool) -> dict | None:
    """A JSON (or Python-literal-like) mapping; None when it is not one."""
    if isinstance(raw, bool) or len(raw) > 1 << 16:
        return None
    text = raw.strip()
    for candidate in (text, text.replace("'", '"')):
        try:
            value = json.loads(candidate)
        except (ValueError, RecursionError):
            continue
        return value if isinstance(value, dict) else None
    return None


def vllm_spec(option_text: str, *, exact: bool) -> FlagSpec | None:
    """vLLM's flag for an option as typed; with `exact`, only its own spelling (dashes or
    underscores), never an abbreviation, so a launcher's `--max_len` is not read as vLLM's
    `--max-loras`-like prefix."""
    if not option_text.startswith("--"):
        return FLAGS_BY_OPTION.get(option_text) if not exact else None
    long = "--" + option_text[2:].replace("_", "-")
    spec = FLAGS_BY_OPTION.get(long)
    if spec is None and long.startswith("--no-"):
        spec = FLAGS_BY_OPTION.get("--" + long[5:])
        spec = spec if spec is not None and spec.kind == "bool" else None
    if spec is None and not exact:
        spec = lookup_option(option_text)
    return spec


def engine_value(dest: str, raw: object) -> tuple[object, str | None]:
    """(value as vLLM types it, None) or (None, why not) for one engine arg."""
    spec = lookup_dest(dest)
    if spec is None:
        return None, f"{dest} is not a vLLM engine arg"
    if spec.kind in ("bool", "flag"):
        value = raw if isinstance(raw, bool) else as_bool(str(raw))
        if value is None:
            return None, f"{dest}: {str(raw)[:40]!r} is not true or false"
        return value, None
    if isinstance(raw, bool):
        return None, f"{dest} takes a value, not on/off"
    if isinstance(raw, dict | list) or isinstance(raw, int | float):
        text = format_value(raw)
    else:
        text = str(yaml_scalar(str(raw)))
    if not text or text.lower() in ("null", "none", "~"):
        return None, f"{dest} is null (the launcher leaves it to vLLM)"
    try:
        occurrences = scan_tokens([spec.option, text], strict=True)
    except CommandLineError as exc:
        return None, str(exc)
    if not occurrences or occurrences[0].dest != spec.dest:
        return None, f"{dest}: {text[:40]!r} cannot be read"
    return occurrences[0].value, None


def engine_tokens(args: dict[str, object]) -> list[str]:
    """vLLM flag tokens that set these (already typed) engine args; `model` excluded."""
    tokens: list[str] = []
    for dest, value in args.items():
        spec = lookup_dest(dest)
        if spec is None or dest == "model":
            continue
        if spec.kind in ("bool", "flag"):
            if value is True:
                tokens.append(spec.option)
            elif spec.kind == "bool":
                tokens.append("--no-" + spec.option[2:])
            continue
        if spec.nargs == "+" and isinstance(value, list):
            tokens.extend([spec.option, *(format_value(v) for v in value)] if value else [])
        else:
            tokens.extend([spec.option, format_value(value)])
    return tokens
