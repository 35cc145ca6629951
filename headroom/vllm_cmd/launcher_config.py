"""The configuration file a launcher's line names, read as settings below the typed ones.

- LLaMA-Factory: `llamafactory-cli api FILE.yaml [key=value ...]` (or .json): a flat
  mapping, the typed `key=value` overrides merged over it (src/llamafactory/hparams/
  parser.py read_args: OmegaConf.merge(file, OmegaConf.from_cli(argv[2:]))).
- EasyR1: `config=FILE.yaml` among its OmegaConf overrides (verl/trainer/main.py: the file
  merged over PPOConfig's defaults, the typed overrides over both): nested sections.
- verl: Hydra's `--config-path DIR --config-name NAME` (NAME.yaml in DIR): nested.
- TRL: `--config FILE.yaml` (TrlParser): flat.
A file that cannot be read here (the line came from another machine) is said in the notes:
the launcher's defaults are then not assumed, since the file may set them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping

from headroom.vllm_cmd.launcher_args import Setting, normal_name
from headroom.vllm_cmd.launcher_tables import (
    EASYR1,
    LLAMA_FACTORY,
    LLAMA_FACTORY_INFER,
    TRL_SERVE,
    TRL_TRAINER,
    VERL,
    Launcher,
)

ReadFile = Callable[[str], "str | None"]
_MAX_SETTINGS = 4096


def config_path(launcher: Launcher, args: list[str]) -> str | None:
    """The configuration file the arguments name, if any."""
    if launcher in (LLAMA_FACTORY, LLAMA_FACTORY_INFER):
        first = args[0] if args else ""
        return first if first.endswith((".yaml", ".yml", ".json")) else None
    if launcher is EASYR1:
        return next((a.split("=", 1)[1] for a in args if a.startswith("config=")), None)
    if launcher is VERL:
        directory = _option(args, ("--config-path", "-cp"))
        name = _option(args, ("--config-name", "-cn"))
        if name is None:
            return None
        name = name if name.endswith((".yaml", ".yml")) else name + ".yaml"
        return os.path.join(directory, name) if directory else name
    if launcher in (TRL_TRAINER, TRL_SERVE):
        return _option(args, ("--config",))
    return None


def _option(args: list[str], names: tuple[str, ...]) -> str | None:
    for i, arg in enumerate(args):
        option, eq, value = arg.partition("=")
        if option in names:
            if eq:
                return value
            return args[i + 1] if i + 1 < len(args) else None
    return None


def config_settings(
    launcher: Launcher, args: list[str], read_file: ReadFile | None
) -> tuple[list[Setting], list[str], bool]:
    """(the file's settings, notes, whether a file is named)."""
    path = config_path(launcher, args)
    if path is None:
        return [], [], False
    text = read_file(path) if read_file is not None else None
    if text is None:
        return [], [f"{path} not read here: its settings are not known"], True
    data = _load(text, path)
    if not isinstance(data, Mapping):
        return [], [f"{path} is not a mapping of settings: not read"], True
    keep_whole = {name for name, (_, how) in launcher.settings.items() if how == "engine_args"}
    settings: list[Setting] = []
    for key, value in _flatten(data, "", keep_whole):
        if len(settings) >= _MAX_SETTINGS:
            break
        settings.append(Setting(normal_name(key), _text(value), f"{key} ({os.path.basename(path)})",
                                -1, -1))  # fmt: skip
    return settings, [], True


def _load(text: str, path: str) -> object:
    if path.endswith(".json"):
        try:
            return json.loads(text)
        except ValueError:
            return None
    import yaml  # type: ignore[import-untyped]  # PyYAML ships no type stubs

    try:
        return yaml.safe_load(text)
    except (yaml.YAMLError, ValueError, RecursionError):
        return None


def _flatten(data: Mapping, prefix: str, keep_whole: set[str]):
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and name not in keep_whole:
            yield from _flatten(value, name + ".", keep_whole)
        else:
            yield name, value


def _text(value: object) -> str | bool:
    if isinstance(value, bool):
        return value
    if value is None:
        return "null"
    if isinstance(value, Mapping | list):
        try:
            return json.dumps(value)
        except (TypeError, ValueError):
            return ""
    return str(value)
