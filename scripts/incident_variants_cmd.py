"""The command-line variants of scripts/incident_ablation.py (see incident_variants.py):
the same engine args as a thread may type them (another launcher, a container, Python's
LLM(...), `--flag=value`, underscores, a local model path, the line pasted above the log).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable

from incident_variants import _bench, _with


def _command_tokens(incident: dict) -> list[str] | None:
    try:
        return shlex.split(incident["command"]) if incident.get("command") else None
    except ValueError:
        return None


def no_model(incident: dict) -> dict | None:
    """The model left out of the command line (the thread names it nowhere else)."""
    tokens = _command_tokens(incident)
    if not tokens:
        return None
    from headroom.vllm_cmd.command import CommandLineError, parse_command

    try:
        cmd = parse_command(tokens, strict=False)
    except CommandLineError:
        return None
    if cmd.model is None:
        return None
    out, skip = [], False
    for k, tok in enumerate(tokens):
        if skip:
            skip = False
            continue
        if tok == "--model" and k + 1 < len(tokens):
            skip = True
            continue
        if tok.startswith("--model=") or (tok == cmd.model and k and tokens[k - 1] == "serve"):
            continue  # (the same name as another flag's value, --served-model-name, stays)
        out.append(tok)
    return _with(incident, command=shlex.join(out), model=None)


def flag_variant(form: str) -> Callable[[dict], dict | None]:
    """Each known valued flag re-spelled: `--flag=value` or `--flag_with_underscores`."""

    def variant(incident: dict) -> dict | None:
        tokens = _command_tokens(incident)
        if not tokens:
            return None
        from headroom.vllm_cmd.flags import lookup_option

        out, changed, k = [], False, 0
        while k < len(tokens):
            tok = tokens[k]
            spec = lookup_option(tok) if tok.startswith("--") and "=" not in tok else None
            if spec is not None and tok.startswith("--"):
                if form == "eq" and spec.kind == "value" and k + 1 < len(tokens):
                    out.append(f"{tok}={tokens[k + 1]}")
                    k, changed = k + 2, True
                    continue
                if form == "underscore" and "-" in tok[2:]:
                    out.append("--" + tok[2:].replace("-", "_"))
                    k, changed = k + 1, True
                    continue
            out.append(tok)
            k += 1
        return _with(incident, command=shlex.join(out)) if changed else None

    return variant


def llm_call(incident: dict) -> dict | None:
    """The command line as Python: `LLM(model=..., tensor_parallel_size=2, ...)`."""
    parsed = _parsed_vllm_line(incident)
    if parsed is None:
        return None  # no line, or another tool's: its own flags are not vLLM's keyword args
    env, cmd = parsed
    args = cmd.engine_args()
    if not args:
        return None
    kwargs = ", ".join(f"{k}={v!r}" for k, v in args.items())
    call = f"from vllm import LLM; llm = LLM({kwargs})"
    return _with(incident, command=shlex.join([*env, "python", "-c", call]))


def command_in_log(incident: dict) -> dict | None:
    """The command line pasted above the error (a shell prompt's `$ `), not given after --."""
    tokens = _command_tokens(incident)
    if not tokens or _bench().title_only(incident):
        return None  # an issue's title is not where a command line is pasted
    if tokens[0].startswith("-"):
        tokens = ["vllm", "serve", *tokens]  # the flags a thread quoted, as the line typed
    elif not (tokens[0] in ("vllm", "python", "python3") or "=" in tokens[0]):
        return None  # another tool's line
    log = "$ " + shlex.join(tokens) + "\n" + incident["log"]
    return _with(incident, command=None, log=log)


def model_local_path(incident: dict) -> dict | None:
    """The Hub id a thread typed, as the local directory others serve it from
    (`Qwen/Qwen2.5-7B-Instruct` -> `/data/models/Qwen2.5-7B-Instruct`)."""
    tokens = _command_tokens(incident)
    if not tokens:
        return None
    out, changed = [], False
    for k, tok in enumerate(tokens):
        before = tokens[k - 1] if k else ""
        if re.fullmatch(r"[\w.\-]+/[\w.\-]+", tok) and (before == "--model" or before == "serve"):
            out.append("/data/models/" + tok.split("/")[1])
            changed = True
        else:
            out.append(tok)
    return _with(incident, command=shlex.join(out)) if changed else None


def _launch_parts(incident: dict) -> tuple[list[str], str, list[str]] | None:
    """(environment, model, flags) of a vLLM line (`vllm serve M ...`, the API server's
    `--model M`, bare flags with --model), or None for another tool's line."""
    parsed = _parsed_vllm_line(incident)
    if parsed is None or parsed[1].model is None:
        return None
    env, cmd = parsed
    return env, str(cmd.model), cmd.flag_tokens()


def as_api_server(incident: dict) -> dict | None:
    """The same engine args behind the older launcher: python -m vllm.entrypoints.openai.api_server."""
    parts = _launch_parts(incident)
    if parts is None:
        return None
    env, model, flags = parts
    argv = [*env, "python", "-m", "vllm.entrypoints.openai.api_server", "--model", model, *flags]
    return _with(incident, command=shlex.join(argv))


def as_docker(incident: dict) -> dict | None:
    """The same engine args after the vllm/vllm-openai image (its entrypoint is the server)."""
    parts = _launch_parts(incident)
    if parts is None:
        return None
    env, model, flags = parts
    env_flags = [x for e in env for x in ("-e", e)]
    argv = ["docker", "run", "--runtime", "nvidia", "--gpus", "all", *env_flags, "-p",
            "8000:8000", "--ipc=host", "vllm/vllm-openai:latest", "--model", model, *flags]  # fmt: skip
    return _with(incident, command=shlex.join(argv))


def _vllm_line(incident: dict):
    """The parsed command when it is vLLM's own line (or bare flags), else None."""
    tokens = _command_tokens(incident)
    if not tokens:
        return None
    from headroom.vllm_cmd.command import CommandLineError, parse_command

    try:
        cmd = parse_command(
            [t for t in tokens if not re.match(r"^[A-Z_][A-Z0-9_]*=", t)], strict=False
        )
    except CommandLineError:
        return None
    if cmd.launcher and "vllm" not in " ".join(cmd.launcher):
        return None  # another tool's line: its defaults are its own
    return cmd


def defaults_spelled(incident: dict) -> dict | None:
    """vLLM's defaults typed out where the line leaves them: `--tensor-parallel-size 1`,
    and the release's gpu_memory_utilization when the release is said. The values in force
    are the same, so the answer must be."""
    cmd = _vllm_line(incident)
    if cmd is None:
        return None
    from headroom.doctor.versions import default_utilization, parse_version

    added: list[str] = []
    if not cmd.has("tensor_parallel_size"):
        added += ["--tensor-parallel-size", "1"]
    version = parse_version(str(incident.get("vllm_version") or ""))
    if version is not None and not cmd.has("gpu_memory_utilization"):
        added += ["--gpu-memory-utilization", f"{default_utilization(version):g}"]
    if not added:
        return None
    return _with(incident, command=incident["command"] + " " + shlex.join(added))


def defaults_dropped(incident: dict) -> dict | None:
    """The flags that only repeat vLLM's default taken off (`-tp 1`, `--pipeline-parallel-size
    1`, the release's gpu_memory_utilization when the release is said)."""
    cmd = _vllm_line(incident)
    tokens = _command_tokens(incident)
    if cmd is None or not tokens:
        return None
    from headroom.doctor.versions import default_utilization, parse_version
    from headroom.vllm_cmd.flags import lookup_option

    version = parse_version(str(incident.get("vllm_version") or ""))
    defaults = {"tensor_parallel_size": 1, "pipeline_parallel_size": 1}
    if version is not None:
        defaults["gpu_memory_utilization"] = default_utilization(version)
    out, k, changed = [], 0, False
    while k < len(tokens):
        option, _, glued = tokens[k].partition("=")
        spec = lookup_option(option) if option.startswith("-") else None
        value = glued or (tokens[k + 1] if k + 1 < len(tokens) else "")
        if spec is not None and spec.dest in defaults:
            try:
                same = float(value) == float(defaults[spec.dest])
            except ValueError:
                same = False
            if same:
                k, changed = k + (1 if glued else 2), True
                continue
        out.append(tokens[k])
        k += 1
    return _with(incident, command=shlex.join(out)) if changed else None


def _parsed_vllm_line(incident: dict):
    """(environment assignments, parsed command) of the incident's line when it is vLLM's
    own (any vLLM launcher), else None."""
    tokens = _command_tokens(incident)
    if not tokens:
        return None
    from headroom.vllm_cmd.command import CommandLineError, parse_command

    env = [t for t in tokens if re.match(r"^[A-Z_][A-Z0-9_]*=", t)]
    try:
        cmd = parse_command([t for t in tokens if t not in env], strict=False)
    except CommandLineError:
        return None
    if cmd.launcher and "vllm" not in " ".join(cmd.launcher):
        return None
    return env, cmd
