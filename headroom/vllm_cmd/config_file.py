"""vLLM's `--config FILE.yaml`, expanded the way vLLM expands it.

Rules taken from vLLM's FlexibleArgumentParser (vllm/utils/argparse_utils.py,
`_pull_args_from_config` and `load_config_file`, vllm-project/vllm commit c836a6fe):
- only `.yaml` / `.yml` files; one `--config` per command line;
- the file is a flat mapping, read with `yaml.safe_load`; each key becomes `--KEY` (dashes
  or underscores both work: vLLM's parser treats them alike);
- `true` gives the bare flag, `false` gives nothing; a list gives `--KEY item item ...`
  (an empty list gives nothing); anything else `--KEY str(value)`;
- the file's flags go right after the sub-command (and after a positional MODEL), before
  the flags typed on the command line, so a typed flag wins over the file (argparse keeps the
  last value); `model:` in the file is used when no MODEL is typed.

`with_config_file` keeps the command exactly as typed (`--config FILE` stays, rendering
gives back the user's line) and attaches the file's flags as `VllmCommand.config_args`,
which get()/has()/engine_args() read with that precedence.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from headroom.vllm_cmd.command import CommandLineError, VllmCommand, parse_command
from headroom.vllm_cmd.scan import scan_tokens


class ConfigFileError(CommandLineError):
    """The --config file cannot be read or is not what vLLM accepts; the message says why."""


def config_flag_values(cmd: VllmCommand) -> list[str]:
    """The --config paths the typed tokens give (vLLM refuses more than one)."""
    return [
        str(occ.value)
        for occ in scan_tokens(cmd.tokens, strict=False)
        if occ.dest == "config" and occ.value is not None
    ]


def yaml_to_args(text: str, source: str = "config file") -> list[str]:
    """The flags vLLM's load_config_file makes of a YAML text."""
    import yaml  # type: ignore[import-untyped]  # PyYAML ships no type stubs

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigFileError(f"{source} is not valid YAML: {exc}") from exc
    if data is None:
        return []
    if not isinstance(data, dict):
        raise ConfigFileError(
            f"{source} must be a mapping of flag: value, not {type(data).__name__}"
        )
    args: list[str] = []
    for key, value in data.items():
        option = "--" + str(key)
        if isinstance(value, bool):
            if value:
                args.append(option)
        elif isinstance(value, list):
            if value:
                args.extend([option, *(str(item) for item in value)])
        else:
            args.extend([option, str(value)])
    return args


def load_config_args(path: str, cwd: str | Path | None = None) -> list[str]:
    """Read a --config file (relative paths from `cwd`, as the vLLM process would)."""
    extension = path.rsplit(".", 1)[-1]
    if extension not in ("yaml", "yml"):
        raise ConfigFileError(f"--config {path}: vLLM takes only .yaml/.yml files")
    full = Path(path).expanduser()
    if cwd is not None and not full.is_absolute():
        full = Path(cwd) / full
    try:
        text = full.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigFileError(f"cannot read --config {path}: {exc.strerror or exc}") from exc
    return yaml_to_args(text, f"--config {path}")


def with_config_file(cmd: VllmCommand, cwd: str | Path | None = None) -> VllmCommand:
    """The command with its --config file's flags attached (no-op without --config)."""
    paths = config_flag_values(cmd)
    if not paths:
        return cmd
    if len(paths) > 1:
        raise ConfigFileError("more than one --config file: vLLM accepts one")
    args = load_config_args(paths[0], cwd)
    try:
        scan_tokens(args, strict=True)
    except CommandLineError as exc:
        raise ConfigFileError(f"--config {paths[0]}: {exc}") from exc
    expanded = replace(cmd, config_args=tuple(args))
    model = cmd.model
    if model is None:
        file_model = expanded.get("model")
        model = str(file_model) if file_model else None
    return replace(expanded, model=model)


def with_config_file_if_readable(cmd: VllmCommand, cwd: str | Path | None = None) -> VllmCommand:
    """with_config_file, or the command as it is when its --config file cannot be read here
    (a server on another machine, a file since moved): Headroom then knows only the typed
    flags, and the line itself, which vLLM reads, is unchanged either way."""
    try:
        return with_config_file(cmd, cwd)
    except ConfigFileError:
        return cmd


def parse_command_with_config(argv: list[str] | str, cwd: str | Path | None = None) -> VllmCommand:
    """parse_command, then the --config file (when the line names one) read and attached."""
    return with_config_file(parse_command(argv), cwd)


def expanded_argv(cmd: VllmCommand) -> list[str]:
    """The flags vLLM ends up parsing (file's first, typed ones after; no --config)."""
    typed = [t for t in cmd.tokens]
    occurrences = [o for o in scan_tokens(typed, strict=False) if o.dest == "config"]
    for occ in sorted(occurrences, key=lambda o: o.start, reverse=True):
        del typed[occ.start : occ.end]
    return [*cmd.config_args, *typed]
