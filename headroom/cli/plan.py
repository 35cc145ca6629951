"""`headroom plan`: size a deployment before launch (the five steps forwards).

    headroom plan meta-llama/Llama-3.1-70B-Instruct --gpus 8xH100
    headroom plan Llama-3.1-70B --gpus 4xRTX4090 --nodes 2 --context 8192 --concurrency 16
    headroom plan ./my-model --gpus 2xA100:40 --json -- vllm serve ./my-model -tp 2 --max-model-len 32768

Prints the accounting table with its arithmetic, the TP lower and upper bounds and why, the
TP/PP layout and a recommended `vllm serve` line. Given a command line after `--`, it
evaluates that one instead. Exit status: 0 when the configuration fits, 1 when it does not,
2 for bad input.
"""

from __future__ import annotations

import argparse
import json
import sys

from headroom.cli.own_args import parse_or_exit_code, split_at_dashes
from headroom.doctor.bringup import NodeLine, plan_bringup, render_bringup
from headroom.vllm_cmd import REMOVE, apply_changes, parse_command


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="headroom plan", description="Size a vLLM deployment before launch."
    )
    p.add_argument(
        "model",
        metavar="MODEL_OR_CONFIG",
        help="a local model directory, a config.json, a Hub id (org/name) or a known model name",
    )
    p.add_argument(
        "--gpus",
        required=True,
        help="COUNTxNAME[:MEMORY_GIB] per node (8xH100, 4xRTX4090) or NODESxCOUNTxNAME (2x8xH100)",
    )
    p.add_argument(
        "--nodes", type=int, default=None, help="number of such nodes (default 1, or from --gpus)"
    )
    p.add_argument("--context", type=int, help="tokens per request (default: the model's maximum)")
    p.add_argument(
        "--concurrency", type=int, default=1, help="requests at full context at once (default 1)"
    )
    p.add_argument("--goal", choices=("latency", "throughput"), default="latency")
    p.add_argument(
        "--topo", help="a saved `nvidia-smi topo -m` of one node: keeps TP off slow links"
    )
    p.add_argument("--vllm-version", help="plan for this vLLM version (default: the newest known)")
    p.add_argument("--json", action="store_true", help="print JSON (keys in the README)")
    return p


def render_text(p, bringups: tuple = ()) -> str:
    a = p.account
    rows = [
        ("GPU memory (CUDA total)", f"{a.gpu_usable_gib:.2f} GiB"),
        ("budget (x utilization)", f"{a.budget_gib:.2f} GiB  (utilization {a.utilization:.2f})"),
        ("weights", f"{a.weights_gib:.2f} GiB"),
        ("activation peak", f"{a.activation_gib:.2f} GiB"),
        ("non-torch overhead", f"{a.overhead_gib:.2f} GiB"),
        (
            "CUDA graphs",
            f"{a.cudagraph_gib:.2f} GiB ({'in' if a.cudagraph_in_budget else 'outside'} budget)",
        ),
        (
            "KV cache",
            f"{a.kv_cache_gib:.2f} GiB = {a.kv_capacity_tokens:,} tokens "
            f"({a.kv_bytes_per_token:,} B/token)",
        ),
        ("max_model_len that fits", _fit_text(p)),
        ("requests at full length", f"{a.max_concurrency:.2f}"),
    ]
    width = max(len(k) for k, _ in rows)
    out = [
        f"{p.model_name} on {p.gpu.shape(p.nodes)}: {p.gpu.describe()}, vLLM {a.version}, "
        f"goal {p.goal}",
        f"wanted: {p.concurrency} x {p.context:,} tokens",
        f"rules: {p.rules}" if p.rules else "",
        "",
        f"Per GPU, at TP {p.tp} x PP {p.pp}" + (f" x DP {p.dp}" if p.dp > 1 else ""),
    ]
    out += [f"  {k.ljust(width)}  {v}" for k, v in rows]
    if p.range_reasons:
        out += ["", "Why a range"] + [f"  {line}" for line in p.range_reasons]
    out += ["", "Arithmetic"] + [f"  {line}" for line in a.arithmetic]
    lower = p.tp_lower if p.tp_lower is not None else "none"
    out += [
        "",
        f"TP lower bound: {lower} ({p.tp_lower_why})",
        f"TP upper bound: {p.tp_upper} ({p.tp_upper_why})",
    ]
    out += ["", "Five steps"]
    out += [f"  {status.upper():4} {step}. {text}" for step, status, text in p.steps]
    out += [f"note: {n}" for n in p.notes]
    out += [
        "",
        (
            "Evaluated command:"
            if p.evaluated_command
            else "Recommended command:"
            if p.fits
            else "Closest command (it does not fit: see the notes):"
        ),
        "  " + " ".join(p.command),
    ]
    if bringups:
        out += [""] + render_bringup(bringups)
    return "\n".join(out)


def multinode_bringups(p, model_arg: str) -> tuple:
    """Both backends' per-node bring-up when the layout spans nodes (step 3), else ()."""
    if p.nodes < 2 or p.tp * p.pp <= p.gpu.count:
        return ()
    extra = _flags_after_layout(list(p.command))
    return plan_bringup(
        model_arg, tp=p.tp, pp=p.pp, nodes=p.nodes, gpus_per_node=p.gpu.count, extra_flags=extra
    )


def _flags_after_layout(argv: list[str]) -> list[str]:
    """The planned line's flags without TP/PP (the bring-up says those itself), in any
    spelling (`-tp 8`, `--tensor-parallel-size=8`) and from any launcher form (a `--model M`
    goes too: the bring-up's `vllm serve` names the model itself)."""
    command = parse_command(argv)
    drop: dict[str, object] = {"tensor_parallel_size": REMOVE, "pipeline_parallel_size": REMOVE}
    if not command.model_is_positional:
        drop["model"] = REMOVE
    return list(apply_changes(command, drop).tokens)


def _fit_text(p) -> str:
    fit = f"{p.account.max_model_len_fit:,}"
    if p.fit_range and p.fit_range[0] != p.fit_range[1]:
        low, high = p.fit_range
        return f"{fit} (range {low:,} - {high:,}, see 'Why a range')"
    return fit


def main(argv: list[str]) -> int:
    own, vllm_argv = split_at_dashes(list(argv))
    args = parse_or_exit_code(_parser(), own)
    if isinstance(args, int):
        return args
    from headroom.cli.doctor_inputs import model_from_option
    from headroom.doctor.gpu_spec import GpuSpecError, parse_gpu_spec, resolve_nodes
    from headroom.doctor.model_table import UnknownModelError
    from headroom.doctor.planner import plan, plan_to_json

    try:
        if args.concurrency < 1 or (args.context is not None and args.context < 1):
            raise ValueError("--concurrency and --context must be positive")
        gpu = parse_gpu_spec(args.gpus)
        nodes = resolve_nodes(gpu, args.nodes)
        model, problem = model_from_option(args.model)
        if model is None or not model.sizable:
            from headroom.probes.model import describe_unread

            why = problem if model is None else describe_unread(model)
            raise ValueError(f"cannot plan {args.model}: {why}")
        topology = _topology(args.topo) if args.topo else None
        command = launch = None
        if vllm_argv:
            command, launch = _given_command(vllm_argv, gpu.count)
        result = plan(
            model,
            gpu,
            nodes=nodes,
            context=args.context,
            concurrency=args.concurrency,
            goal=args.goal,
            version=args.vllm_version or (launch.release if launch is not None else None),
            command=command,
            topology=topology,
        )
        if launch is not None:
            from dataclasses import replace

            result = replace(result, notes=(*result.notes, launch.note()))
    except (GpuSpecError, UnknownModelError, ValueError) as exc:
        print(f"headroom plan: {exc}", file=sys.stderr)
        return 2
    if command is None and result.command:
        # Keep the name exactly as the user wrote it (an HF id or a path) in the command line.
        result = _with_model_arg(result, args.model)
    bringups = multinode_bringups(result, args.model)
    if args.json:
        doc = plan_to_json(result)
        doc["shape"] = result.gpu.shape(result.nodes)
        doc["bringup"] = {b.backend: [_line_json(x) for x in b.lines] for b in bringups}
        print(json.dumps(doc, indent=2))
    else:
        print(render_text(result, bringups))
    return 0 if result.fits else 1


def _given_command(vllm_argv: list[str], gpus: int):
    """The command line after `--`: vLLM's own, or a launcher's (FastChat, LLaMA-Factory,
    verl, a container ...) read as the vLLM engine args it starts vLLM with; the reading is
    returned when the line was translated, so the plan says so."""
    from headroom.cli.doctor_inputs import InputError, read_command

    try:
        command, _, launch = read_command(vllm_argv, gpus=gpus)
    except InputError as exc:
        raise ValueError(str(exc)) from exc
    return command, launch


def _line_json(line: NodeLine) -> dict:
    return {"node": line.node, "env": dict(line.env), "argv": list(line.argv), "why": line.why}


def _topology(path: str):
    from pathlib import Path

    from headroom.probes.topology import parse_topo_text

    try:
        return parse_topo_text(Path(path).read_text(encoding="utf-8", errors="replace"))
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _with_model_arg(result, name: str):
    from dataclasses import replace

    argv = list(result.command)
    if len(argv) > 2 and argv[:2] == ["vllm", "serve"]:
        argv[2] = name
    return replace(result, command=tuple(argv))
