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

from headroom.cli.own_args import parse_or_exit_code, split_at_dashes
from headroom.probes.safe_text import safe_text


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
        "--model-config",
        help="a local model directory or config.json, a Hub id (org/name; read with "
        "huggingface_hub, honouring HF_TOKEN and HF_HUB_OFFLINE) or a known model name",
    )
    p.add_argument(
        "--gpus",
        help="COUNTxNAME[:MEMORY_GIB] when NVML is not there, e.g. 8xH100, 2xGPU:16; "
        "4xGPU (count only) sizes no memory but still checks heads and TP",
    )
    p.add_argument(
        "--nodes",
        type=int,
        default=None,
        help="nodes the deployment spans (default 1; --gpus 2x8xH100 says it too)",
    )
    p.add_argument(
        "--ray-address",
        metavar="HOST:PORT",
        help="a Ray cluster's GCS address: read with `ray status --address` (the cluster "
        "under a --distributed-executor-backend ray start)",
    )
    p.add_argument(
        "--ray-dashboard",
        metavar="URL",
        help="Ray's dashboard (e.g. http://HEAD:8265): node IPs, dead nodes and placement "
        "groups from its state API",
    )
    p.add_argument("--ray-status", metavar="FILE", help="a saved `ray status` output")
    p.add_argument(
        "--ray", metavar="PATH", help="the ray executable (default: HEADROOM_RAY, else ray)"
    )
    p.add_argument(
        "--vllm-version", help="the vLLM version (else from the log, else the newest known)"
    )
    p.add_argument("--nvml", action="store_true", help="also read this machine's GPUs through NVML")
    p.add_argument("--json", action="store_true", help="print JSON")
    return p


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
            if a.direction == "unset":
                value = " (remove the environment variable)" if a.knob.isupper() else " (remove)"
            cost = f"; cost: {a.cost}" if a.cost else ""
            out.append(f"     * {a.direction} {a.knob}{value}: {a.why}{cost}")
    if diagnosis.lacking:
        out.append("\nNot available: " + "; ".join(diagnosis.lacking))
    return "\n".join(out)


def gpu_shape(inputs) -> str | None:
    """The hardware as the doctor read it ('2 nodes x 8 H100 (16 GPUs in all)'), so a
    NODESxCOUNT mix-up shows before any finding does; None without --gpus."""
    if inputs.gpu_spec is not None:
        return inputs.gpu_spec.shape(inputs.nodes)
    if inputs.gpu_count:
        per = f"{inputs.gpu_count} GPUs (memory unknown)"
        n = inputs.nodes
        return f"1 node x {per}" if n == 1 else f"{n} nodes x {per}"
    return None


def main(argv: list[str]) -> int:
    own, vllm_argv = split_at_dashes(list(argv))
    args = parse_or_exit_code(_parser(), own)
    if isinstance(args, int):
        return args
    from headroom.cli.doctor_inputs import build_inputs
    from headroom.doctor import diagnose, diagnosis_to_json
    from headroom.doctor.gpu_spec import GpuSpecError

    try:
        inputs = build_inputs(args, vllm_argv)  # every read happens here; diagnose is pure
    except (GpuSpecError, ValueError) as exc:  # InputError, CommandLineError are ValueErrors
        print(f"headroom doctor: {exc}", file=sys.stderr)
        return 2
    started = time.monotonic()
    diagnosis = diagnose(inputs)
    if args.json:
        doc = diagnosis_to_json(diagnosis)
        doc["vllm_version"] = inputs.vllm_version
        doc["shape"] = gpu_shape(inputs)
        print(json.dumps(doc, indent=2))
    else:
        shape = gpu_shape(inputs)
        if shape:
            print(f"GPUs: {shape}")
        # Evidence quotes log lines and config strings: shown with control characters escaped.
        print(safe_text(render_text(diagnosis), multiline=True))
        print(f"\n(diagnosed in {time.monotonic() - started:.2f} s)", file=sys.stderr)
    return 1 if any(f.severity in ("warning", "error") for f in diagnosis.findings) else 0
