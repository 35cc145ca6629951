"""How vLLM is started: launcher templates with {model}, {flags} and {python}.

Real installs differ (`vllm serve`, `python -m vllm.entrypoints.openai.api_server` for the CPU
build whose `vllm` script fails, a container, the simulator), so the argv is built from a
template. A template is split like a shell would split it (shlex, no shell ever runs it);
`{flags}` must be a token of its own and expands to every vLLM flag token, `{model}` to the
model (dropped when there is none), `{python}` to the configured interpreter.

Config file (TOML, see paths.config_path()):

    [serve]
    launcher = "api_server"            # a name below or a template
    python = "/opt/vllm/bin/python"    # what {python} means (default: Headroom's own)

    [launchers]
    docker = "docker run --rm --gpus all -p 8000:8000 vllm/vllm-openai:latest --model {model} {flags}"
"""

from __future__ import annotations

import shlex
import sys
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from headroom.supervisor.paths import config_path

LAUNCHERS: dict[str, str] = {
    "vllm": "vllm serve {model} {flags}",
    "api_server": "{python} -m vllm.entrypoints.openai.api_server --model {model} {flags}",
    "sim": "{python} -m headroom.simulator serve {model} {flags}",
}


class LauncherError(ValueError):
    """A launcher name or template that cannot be used, with the reason."""


@dataclass(frozen=True)
class LauncherConfig:
    """What the config file says about launching (all optional)."""

    launcher: str | None = None
    python: str | None = None
    launchers: Mapping[str, str] = field(default_factory=dict)


def load_config(path: Path | None = None) -> LauncherConfig:
    """Read the [serve] and [launchers] tables; a missing file is an empty config."""
    path = path or config_path()
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return LauncherConfig()
    except OSError as exc:
        raise LauncherError(f"cannot read config file {path}: {exc.strerror}") from exc
    try:
        data = tomllib.loads(raw.decode("utf-8", errors="replace"))
    except tomllib.TOMLDecodeError as exc:
        raise LauncherError(f"config file {path} is not valid TOML: {exc}") from exc
    serve = data.get("serve", {})
    launchers = data.get("launchers", {})
    if not isinstance(serve, dict) or not isinstance(launchers, dict):
        raise LauncherError(f"config file {path}: [serve] and [launchers] must be tables")
    bad = [k for k, v in launchers.items() if not isinstance(v, str)]
    if bad:
        raise LauncherError(f"config file {path}: launcher(s) {bad} must be template strings")
    unknown = sorted(set(serve) - {"launcher", "python"})
    if unknown:
        raise LauncherError(f"config file {path}: unknown key(s) in [serve]: {unknown}")
    return LauncherConfig(
        launcher=_opt_str(serve.get("launcher"), path, "serve.launcher"),
        python=_opt_str(serve.get("python"), path, "serve.python"),
        launchers=dict(launchers),
    )


def _opt_str(value: object, path: Path, key: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise LauncherError(f"config file {path}: {key} must be a string")


def resolve_template(name_or_template: str, config: LauncherConfig | None = None) -> str:
    """A launcher name (built-in or from the config) or a template given literally."""
    config = config or LauncherConfig()
    if name_or_template in config.launchers:
        return config.launchers[name_or_template]
    if name_or_template in LAUNCHERS:
        return LAUNCHERS[name_or_template]
    if "{flags}" in name_or_template or "{model}" in name_or_template:
        return name_or_template
    known = sorted(set(LAUNCHERS) | set(config.launchers))
    raise LauncherError(
        f"unknown launcher {name_or_template!r}: use one of {', '.join(known)} "
        "or a template containing {model} and {flags}"
    )


def flag_tokens(command) -> list[str]:
    """The flag tokens of a VllmCommand without `--model M`: the launcher template places
    the model."""
    tokens = getattr(command, "flag_tokens", None)
    return list(tokens()) if callable(tokens) else list(command.tokens)


def build_argv(
    template: str,
    model: str | None,
    flags: Sequence[str],
    *,
    python: str | None = None,
) -> list[str]:
    """Expand a template into an argv list; never goes through a shell."""
    try:
        parts = shlex.split(template)
    except ValueError as exc:
        raise LauncherError(f"launcher template {template!r} cannot be split: {exc}") from exc
    if not parts:
        raise LauncherError("launcher template is empty")
    if "{flags}" not in parts:
        raise LauncherError(f"launcher template {template!r} needs {{flags}} as a word of its own")
    argv: list[str] = []
    for part in parts:
        if part == "{flags}":
            argv.extend(flags)
        elif part == "{model}":
            if model is not None:
                argv.append(model)
            elif argv and argv[-1] == "--model":
                argv.pop()  # "--model {model}" with no model: drop both
        else:
            argv.append(
                part.replace("{python}", python or sys.executable).replace("{model}", model or "")
            )
    return argv


def describe(template: str) -> str:
    """The launcher's name if it is a built-in one, else the template itself."""
    for name, known in LAUNCHERS.items():
        if known == template:
            return name
    return template
