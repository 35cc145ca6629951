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

import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from headroom.vllm_cmd.flags import FlagSpec, lookup_dest, lookup_option
from headroom.vllm_cmd.scan import (
    CommandLineError,
    Occurrence,
    format_value,
    looks_like_flag,
    merge_json,
    parse_human_int,
    scan_tokens,
)
from headroom.vllm_cmd.secrets import ENV_ASSIGNMENT, STARS, redact_argv, redact_env

__all__ = [
    "REMOVE",
    "STARS",
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
    # The flags of the `--config FILE.yaml` the line names, as vLLM expands them
    # (vllm_cmd.config_file). They count for get()/has()/engine_args() with vLLM's
    # precedence (a flag typed on the command line wins) but are never rendered: the line
    # keeps the user's own `--config FILE` reference.
    config_args: tuple[str, ...] = ()

    @cached_property
    def _occurrences(self) -> list[Occurrence]:
        return scan_tokens(self.tokens, strict=False)

    @cached_property
    def _config_occurrences(self) -> list[Occurrence]:
        return scan_tokens(self.config_args, strict=False) if self.config_args else []

    @cached_property
    def _values(self) -> dict[str, object]:
        values: dict[str, object] = {}
        dotted: dict[str, dict] = {}
        # The file's flags first: vLLM inserts them before the typed ones, so typed flags win.
        for occ in [*self._config_occurrences, *self._occurrences]:
            if occ.form.startswith("dotted"):
                if isinstance(occ.value, Mapping):
                    dotted[occ.dest] = merge_json(dotted.get(occ.dest, {}), occ.value)
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

    def get_int(self, name: str, default: int) -> int:
        """A whole-number engine arg (`"port"`, `"tensor_parallel_size"`), or `default`.
        Raises TypeError/ValueError, like int(), when the value is not a number."""
        value = self.get(name, default)
        if isinstance(value, int | float | str):
            return int(value)
        raise TypeError(f"--{name.replace('_', '-')} is not a number: {value!r}")

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
        if self.model is None or any(o.dest == "model" for o in self._occurrences):
            return False
        # `model:` in a --config file is the file's, not a typed MODEL (vLLM's rule: a typed
        # MODEL wins over the file's)
        from_file = [o.value for o in self._config_occurrences if o.dest == "model"]
        return not from_file or from_file[-1] != self.model


def _dest_name(name: str) -> str:
    spec = lookup_dest(name)
    if spec is None:
        spec = lookup_option("--" + name.replace("_", "-"))
    return spec.dest if spec is not None else name.replace("-", "_")


PYTHON_PROGRAM = re.compile(r"python(\d+(\.\d+)?)?(\.exe)?$")
# Python's own options that take a value (so `-m` can be found after them).
_PYTHON_VALUE_OPTIONS = {"-W", "-X"}


def _split_launcher(argv: list[str]) -> tuple[tuple[str, ...], list[str]]:
    if not argv or looks_like_flag(argv[0]):
        return (), argv
    program = os.path.basename(argv[0])
    if program == "env":  # `env NAME=VALUE ... vllm serve ...`: runnable without a shell
        i = 1
        while i < len(argv) and ENV_ASSIGNMENT.fullmatch(argv[i]):
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
    if ENV_ASSIGNMENT.fullmatch(argv[0]):
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
    if PYTHON_PROGRAM.fullmatch(program):
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


def parse_command(argv: Sequence[str] | str, *, strict: bool = True) -> VllmCommand:
    """Read a vLLM command line (a list of tokens, or one string split like a shell).

    Raises CommandLineError on lines vLLM itself would refuse for their form: a flag that
    needs a value without one, a value of the wrong type, an unknown launcher. With
    strict=False a value of the wrong type is kept as typed (a line pasted from an older
    release, e.g. `--limit-mm-per-prompt image=3`, is still read for its other flags).
    """
    if isinstance(argv, str):
        try:
            argv = shlex.split(argv)
        except ValueError as exc:
            raise CommandLineError(f"cannot split the command line: {exc}") from None
    argv = [str(a) for a in argv]
    launcher, rest = _split_launcher(argv)
    occurrences = scan_tokens(rest, strict=strict)
    model = None
    for occ in occurrences:
        if occ.dest == "model" and occ.raw:
            model = occ.raw[0]  # the last --model wins
    if model is None and launcher and rest and not looks_like_flag(rest[0]) and rest[0] != "--":
        # Positional MODEL (when --model is also given, vLLM uses --model; the stray
        # positional then stays among the tokens so the line renders back unchanged).
        model, rest = rest[0], rest[1:]
    return VllmCommand(launcher=launcher, model=model, tokens=tuple(rest))


def render(cmd: VllmCommand) -> list[str]:
    """The argv list for this command (launcher, positional model, flags as typed)."""
    model = [cmd.model] if cmd.model is not None and cmd.model_is_positional else []
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
        items = [format_value(v) for v in value]
        return [f"{option}={items[0]}"] if form == "eq" and len(items) == 1 else [option, *items]
    text = format_value(value)
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
        occurrences = [o for o in scan_tokens(tokens, strict=False) if o.dest == name]
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
            if last is not None and last.form == "sep":
                # the user's `--x true|false` (an older release's StoreBoolean): keep that form
                new = [last.option, "true" if value else "false"]
            else:
                new = _bool_tokens(spec, name, value, off)
            in_file = any(o.dest == name and o.value is True for o in cmd._config_occurrences)
            if not new and not value and in_file and spec is not None and spec.kind == "bool":
                new = ["--no-" + spec.option[2:]]  # the YAML turns it on; only --no-x undoes that
        else:
            if spec is not None and spec.kind in ("bool", "flag"):
                raise CommandLineError(f"{spec.option} is on/off; give True or False")
            if last is not None and not last.form.startswith("dotted") and last.form != "bare":
                option, form = last.option, last.form
            else:
                option = spec.option if spec else "--" + name.replace("_", "-")
                form = "sep"
            if option == "-O" and form == "O":
                new = [f"-O{format_value(value)}"]
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
    return VllmCommand(
        launcher=cmd.launcher, model=model, tokens=tuple(tokens), config_args=cmd.config_args
    )


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
