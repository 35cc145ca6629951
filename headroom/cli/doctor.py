"""`headroom doctor`: diagnose a vLLM set-up from whatever is at hand (headless, for scripts).

    headroom doctor --log vllm.log
    headroom doctor --log vllm.log --gpus 2xRTX4090 -- vllm serve MODEL -tp 2
    headroom doctor --metrics http://127.0.0.1:8000 --json
    headroom doctor --metrics before.txt --metrics after.txt --topo topo.txt -- --tensor-parallel-size 4

Every input is optional; the doctor says what it lacked. Exit status: 0 when nothing is at
warning or above, 1 when something is, 2 for bad input. `--json` prints
{"findings": [...], "steps": [...], "lacking": [...]} (schema in the README).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from headroom.probes.safe_text import safe_text
from headroom.probes.vllm_log import digest_text


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="headroom doctor",
        description="Name what is wrong with a vLLM set-up, with evidence and the knob to turn.",
        epilog="Everything after -- is the vLLM command line (vllm serve MODEL ..., "
        "python -m vllm.entrypoints.openai.api_server --model M ..., or flags alone).",
    )
    p.add_argument("--log", help="a vLLM log file ('-' = stdin)")
    p.add_argument(
        "--metrics",
        action="append",
        default=[],
        metavar="URL|FILE",
        help="a server URL (scraped 3 times, --interval apart) or saved /metrics pages, oldest first",
    )
    p.add_argument(
        "--interval", type=float, default=2.0, help="seconds between scrapes of a URL (default 2)"
    )
    p.add_argument("--topo", help="a saved `nvidia-smi topo -m` output")
    p.add_argument(
        "--model-config", help="a local model directory or config.json (or a known model name)"
    )
    p.add_argument(
        "--gpus", help="COUNTxNAME[:MEMORY_GIB] when NVML is not there, e.g. 8xH100, 2xGPU:16"
    )
    p.add_argument("--nodes", type=int, default=1, help="nodes the deployment spans (default 1)")
    p.add_argument(
        "--vllm-version", help="the vLLM version (else from the log, else the newest known)"
    )
    p.add_argument("--nvml", action="store_true", help="also read this machine's GPUs through NVML")
    p.add_argument("--json", action="store_true", help="print JSON")
    return p


def _split(argv: list[str]) -> tuple[list[str], list[str]]:
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1 :]
    return argv, []


class InputError(ValueError):
    pass


def _read_text(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _metrics(sources: list[str], interval: float = 2.0) -> list:
    if not sources:
        return []
    from headroom.probes.metrics import MetricsProbe

    history = []
    urls = [s for s in sources if s.startswith(("http://", "https://"))]
    files = [s for s in sources if s not in urls]
    if files:
        probe = MetricsProbe("http://saved-metrics", window_s=3600)
        for i, path in enumerate(files):
            history.append(probe.ingest(_read_text(path), now=float(i * 10)))
    for url in urls:
        import asyncio

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


def build_inputs(args, vllm_argv: list[str]):
    from headroom.doctor import DoctorInputs
    from headroom.doctor.gpu_spec import parse_gpu_spec
    from headroom.doctor.model_table import UnknownModelError, resolve_model

    command = None
    if vllm_argv:
        from headroom.vllm_cmd import parse_command
        from headroom.vllm_cmd.command import ENV_ASSIGNMENT, CommandLineError

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
    log = None
    if args.log:
        text = _read_text(args.log)
        log = digest_text(text)
    topology = None
    if args.topo:
        from headroom.probes.topology import parse_topo_text

        topology = parse_topo_text(_read_text(args.topo))
    model = None
    if args.model_config:
        try:
            model = resolve_model(args.model_config)
        except UnknownModelError as exc:
            raise InputError(str(exc)) from exc
    gpu_spec = parse_gpu_spec(args.gpus) if args.gpus else None
    gpus = host = None
    if args.nvml:
        from headroom.probes.host import read_host
        from headroom.probes.nvml import NvmlProbe

        gpus = NvmlProbe().read()
        host = read_host()
    return DoctorInputs(
        command=command,
        log=log,
        metrics_history=tuple(_metrics(args.metrics, args.interval)),
        gpus=gpus,
        gpu_spec=gpu_spec,
        topology=topology,
        model=model,
        host=host,
        nodes=max(args.nodes, 1),
        vllm_version=args.vllm_version or _server_version(args.metrics),
    )


def _server_version(sources: list[str]) -> str | None:
    """GET /version of the first server URL; None when there is none or it does not answer."""
    for url in (s for s in sources if s.startswith(("http://", "https://"))):
        import asyncio

        from headroom.probes.server_info import read_server_info

        try:
            # Bounded (size, one deadline, no off-host redirect) and escaped for the terminal.
            return asyncio.run(read_server_info(url, timeout_s=3.0)).version
        except Exception:  # an old server or a proxy without /version: fall back to the log
            return None
    return None


def render_text(diagnosis) -> str:
    out = []
    marks = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL", "unknown": "?   "}
    out.append("Five steps")
    for s in diagnosis.steps:
        out.append(f"  {marks.get(s.status, s.status)} {s.step}. {s.name}")
        out.append(f"         {s.why}")
    if not diagnosis.findings:
        out.append("\nNo findings.")
    for i, f in enumerate(diagnosis.findings, 1):
        where = f"step {f.step}" if f.step else "other"
        out.append(f"\n{i}. [{f.severity}] {f.title}  ({where}, {f.id})")
        for line in f.evidence:
            out.append(f"     | {line}")
        for a in f.actions:
            value = "" if a.value is None else f" -> {a.value}"
            cost = f"; cost: {a.cost}" if a.cost else ""
            out.append(f"     * {a.direction} {a.knob}{value}: {a.why}{cost}")
    if diagnosis.lacking:
        out.append("\nNot available: " + "; ".join(diagnosis.lacking))
    return "\n".join(out)


def main(argv: list[str]) -> int:
    own, vllm_argv = _split(list(argv))
    parser = _parser()
    try:
        args = parser.parse_args(own)
    except SystemExit as exc:
        return 0 if exc.code == 0 else 2
    from headroom.doctor import diagnose, diagnosis_to_json
    from headroom.doctor.gpu_spec import GpuSpecError

    try:
        inputs = build_inputs(args, vllm_argv)
    except (InputError, GpuSpecError, ValueError) as exc:
        print(f"headroom doctor: {exc}", file=sys.stderr)
        return 2
    started = time.monotonic()
    diagnosis = diagnose(inputs)
    if args.json:
        doc = diagnosis_to_json(diagnosis)
        doc["vllm_version"] = inputs.vllm_version
        print(json.dumps(doc, indent=2))
    else:
        # Evidence quotes log lines and config strings: shown with control characters escaped.
        print(safe_text(render_text(diagnosis), multiline=True))
        print(f"\n(diagnosed in {time.monotonic() - started:.2f} s)", file=sys.stderr)
    return 1 if any(f.severity in ("warning", "error") for f in diagnosis.findings) else 0
