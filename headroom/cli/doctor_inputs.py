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
from dataclasses import replace
from pathlib import Path

from headroom.doctor import DoctorInputs
from headroom.doctor.gpu_spec import GpuSpecError, parse_gpu_spec, read_gpus_option, resolve_nodes
from headroom.doctor.model_table import find_model, known_model_names
from headroom.probes.log_file import LogFileError, digest_file
from headroom.probes.model import ModelShape
from headroom.probes.model_hub import looks_like_repo_id
from headroom.probes.model_lookup import lookup_model
from headroom.probes.ray_cluster import RayCluster, RayClusterProbe
from headroom.probes.ray_status import parse_ray_status
from headroom.vllm_cmd import VllmCommand, parse_command
from headroom.vllm_cmd.command import ENV_ASSIGNMENT, PYTHON_PROGRAM, CommandLineError
from headroom.vllm_cmd.config_file import (
    ConfigFileError,
    with_config_file,
    with_config_file_if_readable,
)
from headroom.vllm_cmd.launchers import LaunchReading, read_launch_line
from headroom.vllm_cmd.pasted_command import command_in_text
from headroom.vllm_cmd.shell_line import split_pasted


class InputError(ValueError):
    """Input the user gave that cannot be read; the message says which and why."""


def read_text(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc


def read_command(
    vllm_argv: list[str], gpus: int | None = None
) -> tuple[VllmCommand | None, str | None, LaunchReading | None]:
    """The command line after `--`, with its `--config FILE.yaml` expanded, a note when the
    line was read as something else's (a launcher's flags read as vLLM's engine args, a
    container's command, a script that takes vLLM's engine args), and that reading."""
    if not vllm_argv:
        return None, None, None
    reading = read_launch_line(vllm_argv, gpus=gpus, read_file=_read_named_file)
    if reading is not None and not reading.translated:
        vllm_argv = list(reading.argv)  # vLLM's own line, the shell's words around it taken away
    elif reading is not None:
        try:
            command, _ = _read_vllm_line(list(reading.argv))
        except CommandLineError:
            pass  # the line as typed says more than the reading (its own error)
        else:
            # a --config inside a container or on another machine is not this one's to read
            return with_config_file_if_readable(command), reading.note(), reading
    command, note = _read_vllm_line(vllm_argv)
    try:
        return with_config_file(command), note, None
    except ConfigFileError as exc:
        raise InputError(str(exc)) from exc


def _read_named_file(path: str) -> str | None:
    """A launcher's configuration file the line names, when it is here (a line pasted from
    another machine names files this one has not: the reading says so)."""
    try:
        full = Path(path).expanduser()
        if not full.is_file() or full.stat().st_size > 1 << 20:
            return None
        return full.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _read_vllm_line(vllm_argv: list[str]) -> tuple[VllmCommand, str | None]:
    if ENV_ASSIGNMENT.fullmatch(vllm_argv[0]):
        # `CUDA_VISIBLE_DEVICES=0,1 vllm serve ...` pasted from a shell: the doctor only
        # reads the line, so it is the same as `env CUDA_VISIBLE_DEVICES=0,1 vllm ...`;
        # before bare flags the assignments say nothing about the engine.
        i = 0
        while i < len(vllm_argv) and ENV_ASSIGNMENT.fullmatch(vllm_argv[i]):
            i += 1
        rest = vllm_argv[i:]
        vllm_argv = rest if rest and rest[0].startswith("-") else ["env", *vllm_argv]
    note = None
    try:
        command = parse_command(vllm_argv)
    except CommandLineError as exc:
        # A value in another release's syntax (`--limit-mm-per-prompt image=3`) must not
        # cost the whole diagnosis: read the line leniently. A flag without its value stays
        # bad input; a script of the user's that takes vLLM's engine args (vLLM's own
        # benchmarks and most evaluation scripts do) is read for those args.
        script = script_engine_flags(vllm_argv)
        if " expects " in str(exc):
            command = parse_command(vllm_argv, strict=False)
        elif script is not None:
            program, flags = script
            command = parse_command(flags, strict=False)
            note = (
                f"the command runs `{program}`, not a vLLM server: its flags were read as "
                "vLLM engine args (a flag of the script's own is ignored)"
            )
        else:
            raise
    return command, note


def script_engine_flags(argv: list[str]) -> tuple[str, list[str]] | None:
    """(program, flags) for `[env A=B] python3 [-u] SCRIPT.py FLAGS` or `PROGRAM ... FLAGS`;
    None for vLLM's own launchers and when no flag follows (nothing to read)."""
    i = 1 if argv and argv[0] == "env" else 0
    while i < len(argv) and ENV_ASSIGNMENT.fullmatch(argv[i]):
        i += 1
    argv = argv[i:]
    if not argv:
        return None
    program = os.path.basename(argv[0])
    if program in ("vllm", "serve"):
        return None  # vLLM's own launcher: its errors are the user's to fix
    if PYTHON_PROGRAM.fullmatch(program):
        j = 1
        while j < len(argv) and argv[j].startswith("-") and argv[j] != "-m":
            j += 1
        if j < len(argv) and argv[j] == "-m":
            if j + 1 < len(argv) and argv[j + 1].split(".")[0] == "vllm":
                return None
            j += 1  # a module that is not vLLM's: its name is the program
        if j >= len(argv):
            return None
        program, flags = os.path.basename(argv[j]), argv[j + 1 :]
    else:
        first = next((k for k, t in enumerate(argv) if t.startswith("--")), len(argv))
        flags = argv[first:]
    return (program, flags) if flags else None


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
    names = known_model_names()
    raise InputError(
        f"unknown model {name!r}: give a local model directory or config.json, a Hub id "
        f"(org/name), or a model the built-in table knows ({len(names)} shapes, e.g. "
        f"{', '.join(names[:6])}; names as people write them, with or without the org)"
    )


def _names_a_path(text: str) -> bool:
    """`--model-config` text that can only be a path (a config file, a directory spelled as
    one), not a model's name."""
    return text.endswith((".json", "/")) or text.startswith(("/", "./", "../", "~"))


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


def read_ray_cluster(args, env: Mapping[str, str]) -> RayCluster | None:
    """`--ray-status FILE` (a saved `ray status`), `--ray-address HOST:PORT` (runs `ray
    status --address`, the executable from --ray or HEADROOM_RAY) and `--ray-dashboard URL`
    (the state API: node IPs, dead nodes, placement groups' bundles), merged into one
    RayCluster. None when none was given. A cluster that does not answer is not an input
    error: the cluster's `problems` say why and go into `lacking`."""
    status_file = getattr(args, "ray_status", None)
    address = getattr(args, "ray_address", None)
    dashboard = getattr(args, "ray_dashboard", None)
    if not (status_file or address or dashboard):
        return None
    saved = None
    if status_file:
        saved = parse_ray_status(read_text(status_file))
        if saved.format is None:
            raise InputError(f"{status_file} is not a `ray status` output: {saved.problems[0]}")
    if dashboard and not dashboard.startswith(("http://", "https://")):
        raise InputError(f"--ray-dashboard {dashboard!r}: expected a URL, e.g. http://HEAD:8265")
    probe = RayClusterProbe(
        address,
        dashboard,
        ray_executable=getattr(args, "ray", None) or env.get("HEADROOM_RAY"),
        env=env,
    )
    if address:
        live = asyncio.run(probe.read())  # `ray status` and, with a dashboard, the state API
    elif dashboard:
        live = asyncio.run(probe.read_nodes())
    else:
        return RayCluster(0.0, None, saved, None, None, saved.problems if saved else ())
    if saved is not None and live.status is None:
        return replace(live, status=saved)
    return live


def _command_in_log(log, gpus: int | None, lacking: list[str]):
    """(command, launch reading) from the command line the pasted log shows above its output
    (vllm_cmd.pasted_command), read as a line after `--` would be; (None, None) when it has
    none or the line cannot be read (a fragment of the user's is no input error)."""
    line = command_in_text(getattr(log, "lines", None) or ())
    if line is None:
        return None, None
    try:
        command, note, launch = read_command(split_pasted(line), gpus=gpus)
    except (InputError, CommandLineError):
        return None, None
    lacking.append(f"command line read from the log: {line[:160]}")
    if note:
        lacking.append(note)
    return command, launch


def build_inputs(args, vllm_argv: list[str], env: Mapping[str, str] | None = None) -> DoctorInputs:
    """Read every input the arguments name; raises InputError for unreadable user input."""
    env = os.environ if env is None else env
    gpu_spec, gpu_count = read_gpus_option(args.gpus) if args.gpus else (None, None)
    given_gpus = gpu_spec.count if gpu_spec is not None else gpu_count
    log = None
    if args.log:
        try:
            log = digest_file(args.log)
        except LogFileError as exc:
            raise InputError(str(exc)) from exc
    command, command_note, launch = read_command(vllm_argv, gpus=given_gpus)
    lacking: list[str] = [command_note] if command_note else []
    if not vllm_argv and log is not None:
        command, launch = _command_in_log(log, given_gpus, lacking)
    if gpu_spec is None and gpu_count is None and not args.nvml and launch and launch.gpus:
        # the GPUs a SkyPilot task, a node selector or a Ray Serve config names, as --gpus
        # would (a kind the GPU table does not know says nothing: words may still name it)
        try:
            gpu_spec = parse_gpu_spec(launch.gpus)
        except GpuSpecError:
            gpu_spec = None
    topology = None
    if args.topo:
        from headroom.probes.topology import parse_topo_text

        topology = parse_topo_text(read_text(args.topo))
    model_name = None
    if args.model_config:
        try:
            model, problem = model_from_option(args.model_config, env)
        except InputError:
            if _names_a_path(args.model_config):
                raise  # a file or directory that is not there: a typo the user must see
            # A name nothing here knows: diagnose all the same, from what the name says.
            model, model_name = None, args.model_config
            problem = (
                f"model {args.model_config!r} is not in the built-in table "
                f"({len(known_model_names())} shapes), a local config or a Hub id: "
                "only what its name says (a parameter count, a context length) is used"
            )
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
    if args.gpus and gpu_spec is None:
        lacking.append(
            f"GPU memory unknown (--gpus {args.gpus} gives the count only, and the doctor "
            "sizes each GPU only where the log says its total; add :MEMORY_GIB, "
            f"e.g. {gpu_count}xGPU:24, to size memory)"
        )
    flag_nodes = getattr(args, "nodes", None)
    nodes = resolve_nodes(gpu_spec, flag_nodes) if gpu_spec is not None else (flag_nodes or 1)
    ray_cluster = read_ray_cluster(args, env)
    if ray_cluster is not None:
        lacking.extend(f"Ray cluster: {p}" for p in ray_cluster.problems)
    gpus = host = None
    if args.nvml:
        from headroom.probes.host import read_host
        from headroom.probes.nvml import NvmlProbe

        gpus = NvmlProbe().read()
        host = read_host()
        if not gpus.available:  # asked for, and not there: say why rather than nothing
            lacking.append(f"NVML (--nvml): {gpus.reason or 'unavailable'}")
    return DoctorInputs(
        command=command,
        log=log,
        metrics_history=tuple(read_metrics(args.metrics, args.interval)),
        gpus=gpus,
        gpu_spec=gpu_spec,
        topology=topology,
        model=model,
        host=host,
        nodes=nodes,
        ray_cluster=ray_cluster,
        vllm_version=args.vllm_version
        or server_version(args.metrics)
        or (launch.release if launch is not None else None),
        lacking=tuple(lacking),
        gpu_count=gpu_count if gpu_spec is None else None,
        model_name=model_name,
    )
