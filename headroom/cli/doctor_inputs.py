"""The doctor's input-loading step: every file, URL, hub and NVML read happens here, before
`headroom.doctor.diagnose` (which is pure) is called.

What cannot be read but is not the user's mistake (a hub that does not answer, a config
field no dialect gives, the memory of `--gpus 4xGPU`) goes into DoctorInputs.lacking and the
doctor carries on; what the user pointed at and is unreadable (a missing --log file, a
--model-config that is not JSON) is an InputError: exit 2 with the reason.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from headroom.doctor import DoctorInputs
from headroom.doctor.gpu_spec import read_gpus_option
from headroom.doctor.model_table import find_model, known_model_names
from headroom.probes.log_file import LogFileError, digest_file
from headroom.probes.model import ModelShape
from headroom.probes.model_hub import looks_like_repo_id
from headroom.probes.model_lookup import lookup_model
from headroom.vllm_cmd import VllmCommand, parse_command
from headroom.vllm_cmd.command import ENV_ASSIGNMENT, CommandLineError
from headroom.vllm_cmd.config_file import ConfigFileError, with_config_file


class InputError(ValueError):
    """Input the user gave that cannot be read; the message says which and why."""


def read_text(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc


def read_command(vllm_argv: list[str]) -> VllmCommand | None:
    """The command line after `--`, with its `--config FILE.yaml` expanded."""
    if not vllm_argv:
        return None
    if ENV_ASSIGNMENT.fullmatch(vllm_argv[0]):
        # `CUDA_VISIBLE_DEVICES=0,1 vllm serve ...` pasted from a shell: the doctor only
        # reads the line, so it is the same as `env CUDA_VISIBLE_DEVICES=0,1 vllm ...`;
        # before bare flags the assignments say nothing about the engine.
        i = 0
        while i < len(vllm_argv) and ENV_ASSIGNMENT.fullmatch(vllm_argv[i]):
            i += 1
        rest = vllm_argv[i:]
        vllm_argv = rest if rest and rest[0].startswith("-") else ["env", *vllm_argv]
    try:
        command = parse_command(vllm_argv)
    except CommandLineError as exc:
        # A value in another release's syntax (`--limit-mm-per-prompt image=3`) must not
        # cost the whole diagnosis: read the line leniently. A flag without its value or
        # an unknown launcher stays bad input.
        if " expects " not in str(exc):
            raise
        command = parse_command(vllm_argv, strict=False)
    try:
        return with_config_file(command)
    except ConfigFileError as exc:
        raise InputError(str(exc)) from exc


def read_metrics(sources: list[str], interval: float = 2.0) -> list:
    if not sources:
        return []
    from headroom.probes.metrics import MetricsProbe

    history = []
    urls = [s for s in sources if s.startswith(("http://", "https://"))]
    files = [s for s in sources if s not in urls]
    if files:
        probe = MetricsProbe("http://saved-metrics", window_s=3600)
        for i, path in enumerate(files):
            history.append(probe.ingest(read_text(path), now=float(i * 10)))
    for url in urls:

        async def scrape_a_few(url=url):
            async with MetricsProbe(url) as probe:
                out = []
                for i in range(3):
                    out.append(await probe.scrape())
                    if i < 2:
                        await asyncio.sleep(max(interval, 0.0))
                return out

        try:
            snaps = asyncio.run(scrape_a_few())
        except ValueError as exc:
            raise InputError(str(exc)) from exc
        history.extend(snaps)
    return history


def server_version(sources: list[str]) -> str | None:
    """GET /version of the first server URL; None when there is none or it does not answer."""
    for url in (s for s in sources if s.startswith(("http://", "https://"))):
        from headroom.probes.server_info import read_server_info

        try:
            # Bounded (size, one deadline, no off-host redirect) and escaped for the terminal.
            return asyncio.run(read_server_info(url, timeout_s=3.0)).version
        except Exception:  # an old server or a proxy without /version: fall back to the log
            return None
    return None


def model_from_option(
    name: str, env: Mapping[str, str] | None = None
) -> tuple[ModelShape | None, str | None]:
    """`--model-config X` (also `headroom plan MODEL`): a local directory or config.json, a
    name in the built-in table, or a Hub id (HF cache, then the Hub). Raises InputError for
    a path that is not a readable config and for a name that is none of these; a Hub that
    does not answer gives (None, why)."""
    path = Path(name).expanduser()
    if path.exists():
        found = lookup_model(str(path), env, hub=False)
        if found.shape is None:
            raise InputError(f"cannot read model config at {path}: {found.problem}")
        return found.shape, None
    table = find_model(name)
    if table is not None:
        return table, None
    if looks_like_repo_id(name):
        found = lookup_model(name, env)
        return found.shape, found.problem
    raise InputError(
        f"unknown model {name!r}: give a local model directory or config.json, a Hub id "
        f"(org/name), or one of: {', '.join(known_model_names())}"
    )


def model_for_name(
    name: str | None, env: Mapping[str, str] | None = None
) -> tuple[ModelShape | None, str | None]:
    """The model vLLM was started with (command line or log): None when the built-in table
    knows it (the doctor looks there itself), else local files, the HF cache, the Hub."""
    if not name or find_model(name) is not None:
        return None, None
    found = lookup_model(name, env)
    if found.shape is None and found.unreadable:
        return None, f"model config of {name}: {found.problem}"
    return found.shape, found.problem


def build_inputs(args, vllm_argv: list[str], env: Mapping[str, str] | None = None) -> DoctorInputs:
    """Read every input the arguments name; raises InputError for unreadable user input."""
    env = os.environ if env is None else env
    command = read_command(vllm_argv)
    lacking: list[str] = []
    log = None
    if args.log:
        try:
            log = digest_file(args.log)
        except LogFileError as exc:
            raise InputError(str(exc)) from exc
    topology = None
    if args.topo:
        from headroom.probes.topology import parse_topo_text

        topology = parse_topo_text(read_text(args.topo))
    if args.model_config:
        model, problem = model_from_option(args.model_config, env)
    else:
        name = getattr(command, "model", None)
        if not name and log is not None:
            try:
                name = getattr(log.facts(), "model", None)
            except Exception:  # a digest that cannot summarise: the doctor says so itself
                name = None
        model, problem = model_for_name(name, env)
    if problem:
        lacking.append(problem)
    gpu_spec, gpu_count = read_gpus_option(args.gpus) if args.gpus else (None, None)
    if args.gpus and gpu_spec is None:
        lacking.append(
            f"GPU memory unknown (--gpus {args.gpus} gives the count only; add :MEMORY_GIB, "
            f"e.g. {gpu_count}xGPU:24, to size memory)"
        )
    gpus = host = None
    if args.nvml:
        from headroom.probes.host import read_host
        from headroom.probes.nvml import NvmlProbe

        gpus = NvmlProbe().read()
        host = read_host()
    return DoctorInputs(
        command=command,
        log=log,
        metrics_history=tuple(read_metrics(args.metrics, args.interval)),
        gpus=gpus,
        gpu_spec=gpu_spec,
        topology=topology,
        model=model,
        host=host,
        nodes=max(args.nodes, 1),
        vllm_version=args.vllm_version or server_version(args.metrics),
        lacking=tuple(lacking),
        gpu_count=gpu_count if gpu_spec is None else None,
    )
