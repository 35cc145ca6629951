"""The vLLM command line, in one place: parse, query, change and render it back.

A command line is kept as the tokens the user typed. Parsing only *reads* them (which
token is which flag, what its value is); changing a knob rewrites the few tokens of that
knob and leaves every other token exactly as it was, so `render(parse_command(x)) == x`
and a restart dialog can show a small, honest flag diff.

Forms understood: `vllm serve MODEL [flags]`, `vllm serve --model M`,
`python[3[.X]] [-u ...] -m vllm.entrypoints.openai.api_server --model M`,
`python -m vllm.entrypoints.cli.main serve MODEL`, `python -m headroom.simulator serve MODEL`,
and flags alone. Flag spellings follow vLLM's FlexibleArgumentParser: `--flag value`,
`--flag=value`, `--flag_with_underscores`, short forms (`-tp 2`), `-O3`, booleans
(`--x` / `--no-x`, `--enable-x` / `--disable-x` / `--no-enable-x`), JSON values and dotted
JSON keys (`--compilation-config.level 3`). Unknown flags are kept verbatim.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from headroom.cmdline_flags import FlagSpec, lookup_dest, lookup_option

__all__ = [
    "REMOVE",
    "CommandLineError",
    "FlagChange",
    "VllmCommand",
    "apply_changes",
    "diff_flags",
    "parse_command",
    "parse_human_int",
    "redact_argv",
    "redact_env",
    "render",
]


class _Remove:
    def __repr__(self) -> str:
        return "REMOVE"


REMOVE: object = _Remove()
"""Sentinel for apply_changes: `{"enforce_eager": REMOVE}` drops every token of that knob."""


class CommandLineError(ValueError):
    """A vLLM command line that cannot be read or changed; the message says why."""


# ---------------------------------------------------------------------------------------
# Values


_HUMAN_INT = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def parse_human_int(text: str) -> int:
    """vLLM's human_readable_int: `16k` = 16000, `10G` = 10 GiB, `10g` = 10**10, `1.5k` = 1500.

    Binary suffixes (upper case) take whole numbers only, as in vLLM.
    """
    value = str(text).strip()
    match = _HUMAN_INT.fullmatch(value)
    if match:
        number, suffix = match.groups()
        if suffix in _DECIMAL:
            return int(float(number) * _DECIMAL[suffix])
        if "." in number:
            raise CommandLineError(
                f"{text!r}: decimals are not allowed with the binary suffix {suffix} "
                f"(did you mean {number}{suffix.lower()}?)"
            )
        return int(number) * _BINARY[suffix]
    try:
        return int(value)
    except ValueError:
        raise CommandLineError(
            f"{text!r} is not a whole number (vLLM accepts e.g. 4096, 16k, 10G)"
        ) from None


def _convert(spec_type: str, raw: str, option: str) -> object:
    """Turn one raw value into the type vLLM's parser would give it."""
    try:
        if spec_type == "int":
            return int(raw)
        if spec_type == "float":
            return float(raw)
        if spec_type == "hint":
            return parse_human_int(raw)
        if spec_type == "hint_auto":
            if raw.strip() == "-1" or raw.strip().lower() == "auto":
                return -1
            return parse_human_int(raw)
        if spec_type == "json":
            return json.loads(raw)
        if spec_type == "json_or_str":
            try:
                return json.loads(raw)
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
        raise CommandLineError(f"{option} expects {kind}, got {raw!r} ({exc})") from None
    return raw


def _parse_bool(raw: str) -> bool:
    low = raw.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"not a boolean: {raw!r}")


def _format_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


# ---------------------------------------------------------------------------------------
# Reading the tokens


@dataclass(frozen=True)
class _Occurrence:
    """One flag as it appears in the tokens: tokens[start:end] belong to it."""

    start: int
    end: int
    dest: str
    option: str  # the option as typed, before any "=" (e.g. "-tp", "--max_model_len")
    spec: FlagSpec | None  # None: a flag this table does not know
    form: str  # "sep" (--x v), "eq" (--x=v), "bare" (--x), "dotted", "O" (-O3)
    raw: tuple[str, ...]  # the raw value(s); empty for bare flags
    value: object  # the typed value (True/False for booleans)


def _looks_like_flag(token: str) -> bool:
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


def _scan(tokens: Sequence[str], *, strict: bool) -> list[_Occurrence]:
    """Find every flag in `tokens`; strict mode raises CommandLineError on bad values."""
    found: list[_Occurrence] = []
    i, n = 0, len(tokens)
    while i < n:
        token = tokens[i]
        if token == "--":  # everything after is positional; keep it, read nothing
            break
        if not _looks_like_flag(token):
            i += 1  # a stray positional (e.g. a value of an unknown flag we skipped)
            continue
        # -O3, -O=3, -Odecode, -O 3: FlexibleArgumentParser's shorthand for the level.
        if token.startswith("-O") and not token.startswith("--"):
            spec = lookup_dest("optimization_level")
            if token == "-O":
                if i + 1 < n and tokens[i + 1] in ("0", "1", "2", "3"):
                    found.append(
                        _Occurrence(i, i + 2, "optimization_level", "-O", spec, "sep",
                                    (tokens[i + 1],), tokens[i + 1])
                    )  # fmt: skip
                    i += 2
                    continue
            else:
                level = token[3:] if token[2] == "=" else token[2:]
                form = "eq" if token[2] == "=" else "O"
                found.append(
                    _Occurrence(i, i + 1, "optimization_level", "-O", spec, form, (level,), level)
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
                occ = _Occurrence(i, i + 1, spec.dest, option, spec, "eq", (inline,), value)
            else:
                occ = _Occurrence(i, i + 1, spec.dest, option, spec, "bare", (), positive)
        else:
            occ = _valued(tokens, i, option, spec, eq, inline, strict)
        found.append(occ)
        i = occ.end
    return found


def _valued(
    tokens: Sequence[str], i: int, option: str, spec: FlagSpec, eq: str, inline: str, strict: bool
) -> _Occurrence:
    if eq:
        raw: tuple[str, ...] = (inline,)
        end, form = i + 1, "eq"
    else:
        j = i + 1
        while j < len(tokens) and not _looks_like_flag(tokens[j]) and tokens[j] != "--":
            j += 1
            if spec.nargs != "+":
                break
        raw = tuple(tokens[i + 1 : j])
        end, form = j, "sep"
        if not raw and spec.nargs != "?":
            if strict:
                raise CommandLineError(f"{option} needs a value")
            return _Occurrence(i, end, spec.dest, option, spec, "bare", (), None)
    if not raw:
        value: object = None
    elif spec.nargs == "+":
        value = [_typed(spec, r, option, strict) for r in raw]
    else:
        value = _typed(spec, raw[0], option, strict)
    return _Occurrence(i, end, spec.dest, option, spec, form, raw, value)


def _typed(spec: FlagSpec, raw: str, option: str, strict: bool) -> object:
    try:
        return _convert(spec.type, raw, option)
    except CommandLineError:
        if strict:
            raise
        return raw


def _unknown(tokens: Sequence[str], i: int, option: str, eq: str, inline: str) -> _Occurrence:
    """A flag the table does not know: keep it; a following non-flag token is its value."""
    dest = option.lstrip("-").replace("-", "_")
    if eq:
        return _Occurrence(i, i + 1, dest, option, None, "eq", (inline,), _guess(inline))
    if i + 1 < len(tokens) and not _looks_like_flag(tokens[i + 1]) and tokens[i + 1] != "--":
        raw = tokens[i + 1]
        return _Occurrence(i, i + 2, dest, option, None, "sep", (raw,), _guess(raw))
    if option.startswith("--no-"):
        return _Occurrence(i, i + 1, option[5:].replace("-", "_"), option, None, "bare", (), False)
    return _Occurrence(i, i + 1, dest, option, None, "bare", (), True)


def _guess(raw: str) -> object:
    """Best-effort type for the value of an unknown flag: int, float, JSON, else the string."""
    for cast in (int, float):
        try:
            return cast(raw)
        except ValueError:
            pass
    if raw[:1] in "{[":
        try:
            return json.loads(raw)
        except ValueError:
            pass
    return raw


def _dotted(
    tokens: Sequence[str], i: int, option: str, eq: str, inline: str, strict: bool
) -> _Occurrence:
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
            value = json.loads(raw)
        except ValueError:
            try:
                value = parse_human_int(raw)
            except CommandLineError:
                value = raw
    for key in reversed([k for k in path.rstrip("+").split(".") if k]):
        value = {key: value}
    return _Occurrence(i, end, dest, option, spec, form, (raw,), value)


def _merge(into: dict, update: Mapping) -> dict:
    out = dict(into)
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _merge(dict(out[key]), value)
        else:
            out[key] = value
    return out


# ---------------------------------------------------------------------------------------
# The command


@dataclass(frozen=True)
class VllmCommand:
    """A vLLM command line: how it is launched, the model, and every flag token as typed.

    `model` is the positional MODEL or the value of `--model`; when it came from `--model`,
    the `--model M` tokens stay in `tokens` (where the user put them), so rendering gives
    back the same line. `flag_tokens()` gives the tokens without `--model`, for launch
    templates that place the model themselves.
    """

    launcher: tuple[str, ...]
    model: str | None
    tokens: tuple[str, ...]

    @cached_property
    def _occurrences(self) -> list[_Occurrence]:
        return _scan(self.tokens, strict=False)

    @cached_property
    def _values(self) -> dict[str, object]:
        values: dict[str, object] = {}
        dotted: dict[str, dict] = {}
        for occ in self._occurrences:
            if occ.form.startswith("dotted"):
                if isinstance(occ.value, Mapping):
                    dotted[occ.dest] = _merge(dotted.get(occ.dest, {}), occ.value)
            elif occ.spec is not None and occ.spec.kind == "append":
                old = values.get(occ.dest)
                values[occ.dest] = [*(old if isinstance(old, list) else []), occ.value]
            else:
                values[occ.dest] = occ.value  # repeated flags: the last one wins, as in argparse
        # vLLM turns dotted keys into one JSON value placed after every other flag.
        for dest, merged in dotted.items():
            values.pop(dest, None)
            values[dest] = merged
        if self.model is not None:
            values["model"] = self.model
        return values

    def get(self, name: str, default: object = None) -> object:
        """The typed value of an engine arg (`"tensor_parallel_size"`), or `default`."""
        return self._values.get(_dest_name(name), default)

    def has(self, name: str) -> bool:
        """Whether the command line sets this engine arg (in any spelling)."""
        return _dest_name(name) in self._values

    def engine_args(self) -> dict[str, object]:
        """Every engine arg the command line sets, with typed values (includes `model`)."""
        return dict(self._values)

    def flag_tokens(self) -> list[str]:
        """The flag tokens without `--model M` (for templates that place the model)."""
        skip: set[int] = set()
        for occ in self._occurrences:
            if occ.dest == "model":
                skip.update(range(occ.start, occ.end))
        return [t for k, t in enumerate(self.tokens) if k not in skip]

    @property
    def model_is_positional(self) -> bool:
        return self.model is not None and not any(o.dest == "model" for o in self._occurrences)


def _dest_name(name: str) -> str:
    spec = lookup_dest(name)
    if spec is None:
        spec = lookup_option("--" + name.replace("_", "-"))
    return spec.dest if spec is not None else name.replace("-", "_")


_PYTHON = re.compile(r"python(\d+(\.\d+)?)?(\.exe)?$")
# Python's own options that take a value (so `-m` can be found after them).
_PYTHON_VALUE_OPTIONS = {"-W", "-X"}


def _split_launcher(argv: list[str]) -> tuple[tuple[str, ...], list[str]]:
    if not argv or _looks_like_flag(argv[0]):
        return (), argv
    program = os.path.basename(argv[0])
    if program == "env":  # `env NAME=VALUE ... vllm serve ...`: runnable without a shell
        i = 1
        while i < len(argv) and _ENV_ASSIGNMENT.fullmatch(argv[i]):
            i += 1
        if i == len(argv) or argv[i].startswith("-"):
            raise CommandLineError(
                "`env` options are not supported; use `env NAME=VALUE ... vllm serve ...`"
            )
        inner, rest = _split_launcher(argv[i:])
        if not inner:
            raise CommandLineError(
                f"`env ...` must be followed by a vLLM launcher, got {argv[i]!r}"
            )
        return (*argv[:i], *inner), rest
    if _ENV_ASSIGNMENT.fullmatch(argv[0]):
        raise CommandLineError(
            f"{argv[0].split('=', 1)[0]}=... before the command needs a shell; "
            "write `env NAME=VALUE vllm serve ...` or set the variable in the environment"
        )
    if program == "vllm":
        if len(argv) < 2 or argv[1] != "serve":
            raise CommandLineError(
                f"only `vllm serve` can be supervised, got `{' '.join(argv[:2])}`"
            )
        return tuple(argv[:2]), argv[2:]
    if program == "serve":
        return (argv[0],), argv[1:]
    if _PYTHON.fullmatch(program):
        i = 1
        while i < len(argv) and argv[i] != "-m":
            if not argv[i].startswith("-"):
                raise CommandLineError(
                    f"`{' '.join(argv[: i + 1])}`: expected `python -m vllm.entrypoints...`"
                )
            i += 2 if argv[i] in _PYTHON_VALUE_OPTIONS else 1
        if i + 1 >= len(argv):
            raise CommandLineError("`python` without `-m MODULE`: not a vLLM server command")
        end = i + 2
        if end < len(argv) and argv[end] == "serve":
            end += 1  # python -m vllm.entrypoints.cli.main serve / -m headroom.simulator serve
        return tuple(argv[:end]), argv[end:]
    raise CommandLineError(
        f"not a vLLM command line: {argv[0]!r} (expected `vllm serve MODEL ...`, "
        "`python -m vllm.entrypoints.openai.api_server --model M ...` or flags only; "
        "wrap containers with a launcher template)"
    )


def parse_command(argv: Sequence[str] | str) -> VllmCommand:
    """Read a vLLM command line (a list of tokens, or one string split like a shell).

    Raises CommandLineError on lines vLLM itself would refuse for their form: a flag that
    needs a value without one, a value of the wrong type, an unknown launcher.
    """
    if isinstance(argv, str):
        try:
            argv = shlex.split(argv)
        except ValueError as exc:
            raise CommandLineError(f"cannot split the command line: {exc}") from None
    argv = [str(a) for a in argv]
    launcher, rest = _split_launcher(argv)
    occurrences = _scan(rest, strict=True)
    model = None
    for occ in occurrences:
        if occ.dest == "model" and occ.raw:
            model = occ.raw[0]  # the last --model wins
    if model is None and launcher and rest and not _looks_like_flag(rest[0]) and rest[0] != "--":
        # Positional MODEL (when --model is also given, vLLM uses --model; the stray
        # positional then stays among the tokens so the line renders back unchanged).
        model, rest = rest[0], rest[1:]
    return VllmCommand(launcher=launcher, model=model, tokens=tuple(rest))


def render(cmd: VllmCommand) -> list[str]:
    """The argv list for this command (launcher, positional model, flags as typed)."""
    model = [cmd.model] if cmd.model_is_positional else []
    return [*cmd.launcher, *model, *cmd.tokens]


# ---------------------------------------------------------------------------------------
# Changing knobs


def _bool_tokens(spec: FlagSpec | None, name: str, value: bool, current: str | None) -> list[str]:
    """Tokens that set a boolean knob; [] when absence already means `value`.

    `current` is the user's own spelling of "off" when the line already says off."""
    option = spec.option if spec is not None else "--" + name.replace("_", "-")
    if value:
        return [option]
    if spec is not None and spec.kind == "flag":
        return []  # store_true: off = absent
    if spec is not None and spec.default is False:
        return []  # off is the default: removing the flag is the cleanest change
    if current is not None:
        return [current]  # keep the user's own spelling of "off"
    return ["--no-" + option[2:]]


def _value_tokens(option: str, value: object, form: str, nargs: str | None) -> list[str]:
    if nargs == "+" and isinstance(value, list | tuple):
        items = [_format_value(v) for v in value]
        return [f"{option}={items[0]}"] if form == "eq" and len(items) == 1 else [option, *items]
    text = _format_value(value)
    return [f"{option}={text}"] if form == "eq" else [option, text]


def apply_changes(cmd: VllmCommand, changes: Mapping[str, object]) -> VllmCommand:
    """Set or remove knobs by engine-arg name; every other token stays exactly as it was.

    A knob already present is changed where it stands, in the user's spelling; a new one is
    appended at the end. `REMOVE` (or None) drops it. Booleans: True writes `--x`, False
    removes the flag when off is vLLM's default, else writes `--no-x`.
    """
    tokens = list(cmd.tokens)
    model = cmd.model
    for raw_name, value in changes.items():
        name = _dest_name(raw_name)
        occurrences = [o for o in _scan(tokens, strict=False) if o.dest == name]
        if name == "model" and not occurrences and value is not REMOVE and value is not None:
            model = str(value)
            continue
        spec = lookup_dest(name)
        last = occurrences[-1] if occurrences else None
        if value is REMOVE or value is None:
            new: list[str] = []
        elif isinstance(value, bool) and (spec is None or spec.kind in ("bool", "flag")):
            off = (
                last.option
                if last is not None and last.value is False and last.form == "bare"
                else None
            )
            new = _bool_tokens(spec, name, value, off)
        else:
            if spec is not None and spec.kind in ("bool", "flag"):
                raise CommandLineError(f"{spec.option} is on/off; give True or False")
            if last is not None and not last.form.startswith("dotted") and last.form != "bare":
                option, form = last.option, last.form
            else:
                option = spec.option if spec else "--" + name.replace("_", "-")
                form = "sep"
            if option == "-O" and form == "O":
                new = [f"-O{_format_value(value)}"]
            else:
                new = _value_tokens(option, value, form, spec.nargs if spec else None)
        if name == "model":
            model = None if (value is REMOVE or value is None) else str(value)
        # Replace the last occurrence in place; earlier ones were dead anyway (last wins).
        at = last.start if last is not None else len(tokens)
        for occ in sorted(occurrences, key=lambda o: o.start, reverse=True):
            del tokens[occ.start : occ.end]
            if occ.start < at:
                at -= occ.end - occ.start
        tokens[at:at] = new
    return VllmCommand(launcher=cmd.launcher, model=model, tokens=tuple(tokens))


@dataclass(frozen=True)
class FlagChange:
    """One knob's change between two command lines; None = absent."""

    name: str
    old: object | None
    new: object | None


def diff_flags(old: VllmCommand, new: VllmCommand) -> list[FlagChange]:
    """The knobs that differ, in the order they appear (old line first, then new ones)."""
    before, after = old.engine_args(), new.engine_args()
    names = list(dict.fromkeys([*before, *after]))
    return [
        FlagChange(name, before.get(name), after.get(name))
        for name in names
        if before.get(name) != after.get(name)
    ]


# ---------------------------------------------------------------------------------------
# Secrets


_SECRET_FLAGS = {"api_key", "hf_token"}
_SECRET_ENV = re.compile(
    r"(^|_)(TOKEN|API_KEY|KEY|SECRET|PASSWORD|PASSWD)($|_)|SECRET|PASSWORD|^AUTHORIZATION$",
    re.IGNORECASE,
)
_NOT_SECRET_ENV = {"SSH_AUTH_SOCK", "KEYTIMEOUT"}
_ENV_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", re.DOTALL)
_BEARER = re.compile(r"(?i)(authorization:\s*(?:bearer\s+)?|bearer\s+)\S+")
STARS = "***"


def _is_secret_env(name: str) -> bool:
    return name.upper() not in _NOT_SECRET_ENV and bool(_SECRET_ENV.search(name))


def _is_secret_flag(option: str) -> bool:
    name = option.lstrip("-").replace("-", "_").lower()
    return name in _SECRET_FLAGS or name.endswith(("_api_key", "_token", "_secret", "password"))


def redact_argv(argv: Sequence[str]) -> list[str]:
    """A copy of argv with secrets replaced by "***": every value of --api-key (it takes one
    or more), --hf-token and other *-token/*-secret flags, `NAME=value` environment
    assignments with secret names, and bearer tokens."""
    out: list[str] = []
    hide_left = 0  # how many more following value tokens to hide
    for token in map(str, argv):
        if hide_left and not _looks_like_flag(token):
            out.append(STARS)
            hide_left -= 1
            continue
        hide_left = 0
        option, eq, _ = token.partition("=")
        if token.startswith("-") and _is_secret_flag(option):
            if eq:
                out.append(f"{option}={STARS}")
            else:
                out.append(token)
                spec = lookup_option(option)
                hide_left = len(argv) if spec is not None and spec.nargs == "+" else 1
            continue
        match = _ENV_ASSIGNMENT.fullmatch(token)
        if match and _is_secret_env(match.group(1)):
            out.append(f"{match.group(1)}={STARS}")
            continue
        out.append(_BEARER.sub(lambda m: m.group(1) + STARS, token))
    return out


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of env with HF_TOKEN, *_TOKEN, *_API_KEY, *_KEY, *SECRET*, passwords -> "***"."""
    return {k: (STARS if _is_secret_env(k) else v) for k, v in env.items()}
