"""`headroom sweep`: start each configuration under the supervisor, drive the same ramp
against it, stop it, and fill one comparison table.

    headroom sweep MODEL --gpus 4xH100 --try tp=1 --try tp=2 --try tp=4 --try pp=2 --goal throughput
    headroom sweep MODEL --candidates --ramp 1,4,16 --launcher sim -- --max-model-len 8192
    headroom sweep MODEL --sweep-id sw-1a2b3c4d ...   (resume: finished configurations are kept)

Headroom's options come before `--`; everything after it is passed to vLLM for every
configuration (each --try changes its knobs on top). Exit status: 0 when at least one
configuration finished, 1 when none did, 2 for bad input.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

from headroom.bench.workload import WorkloadError
from headroom.cli.bench import add_load_arguments, config_from_args
from headroom.cli.doctor_inputs import InputError, model_from_option
from headroom.cli.own_args import parse_or_exit_code, split_at_dashes
from headroom.doctor.gpu_spec import GpuSpecError, parse_gpu_spec, resolve_nodes
from headroom.probes.nvml import NvmlProbe
from headroom.supervisor.journal import Journal
from headroom.supervisor.launcher import LauncherError, load_config
from headroom.supervisor.settings import SupervisorSettings
from headroom.sweep.configs import (
    SweepTry,
    TryError,
    candidate_tries,
    check_feasible,
    order_tries,
    parse_try,
)
from headroom.sweep.runner import SweepProgress, new_sweep_id, run_sweep
from headroom.sweep.table import (
    DEFAULT_MEMORY_MARGIN,
    render_csv,
    render_json,
    render_markdown,
    render_text,
)
from headroom.vllm_cmd import CommandLineError, parse_command


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="headroom sweep",
        usage="headroom sweep MODEL [options] [-- VLLM FLAGS]",
        description="Run each configuration under the same load and fill one table.",
        epilog="Everything after -- is the vLLM flags every --try starts from "
        "(e.g. -- --max-model-len 8192).",
    )
    # dest differs from the bench's --model (the served name requests ask for)
    p.add_argument("model_path", metavar="MODEL", help="the model, as vllm serve takes it")
    p.add_argument("--gpus", help="the GPUs (8xH100, 2x8xH100): checks each try before launch")
    p.add_argument("--nodes", type=int, default=None, help="nodes (default 1, or from --gpus)")
    p.add_argument(
        "--try", dest="tries", action="append", default=[], metavar="SPEC",
        help='a configuration, e.g. "tp=2" or "tp=2,pp=2" (repeatable)',
    )  # fmt: skip
    p.add_argument(
        "--candidates", action="store_true", help="try the feasible TP x PP layouts of the GPUs"
    )
    p.add_argument("--goal", choices=("latency", "throughput"), default="throughput")
    p.add_argument("--memory-margin", type=float, default=DEFAULT_MEMORY_MARGIN, metavar="F")
    p.add_argument("--sweep-id", help="resume this sweep (finished configurations are kept)")
    p.add_argument("--launcher", help="how vLLM is started: vllm, api_server, sim, or a template")
    p.add_argument("--python", help="the interpreter {python} stands for")
    p.add_argument("--ready-timeout", type=float, default=None, metavar="S")
    add_load_arguments(p)
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true")
    fmt.add_argument("--csv", action="store_true")
    fmt.add_argument("--markdown", action="store_true")
    p.add_argument("--output", "-o", type=Path, default=None)
    p.add_argument(
        "--tui",
        action="store_true",
        help="show the sweep on the Bench screen (progress, the table as it fills); the "
        "table is printed as usual when it ends",
    )
    p.add_argument("--theme", help="with --tui: the TUI theme")
    return p


def _bench_config(args: argparse.Namespace):
    view = argparse.Namespace(**vars(args))
    view.url, view.label, view.gpus = "http://127.0.0.1:8000", None, "auto"
    return config_from_args(view)


def _progress(p: SweepProgress) -> None:
    extra = (
        f": {p.text}" if p.text and p.phase in ("skipped", "failed", "starting", "resumed") else ""
    )
    print(f"[{p.index + 1}/{p.total}] {p.label}: {p.phase}{extra}", file=sys.stderr)


def _tries(args, model, gpu, nodes, base) -> list[SweepTry]:
    tries = [parse_try(t) for t in args.tries]
    if args.candidates:
        if gpu is None:
            raise TryError("--candidates needs --gpus")
        tries += [
            c
            for c in candidate_tries(model, gpu, nodes=nodes)
            if c.label not in {t.label for t in tries}
        ]
    if not tries:
        raise TryError("nothing to try: give --try SPEC (repeatable) or --candidates")
    return order_tries(
        [check_feasible(t, base=base, model=model, gpu=gpu, nodes=nodes) for t in tries]
    )


def main(argv: list[str]) -> int:
    own, vllm_flags = split_at_dashes(list(argv))
    args = parse_or_exit_code(_parser(), own)
    if isinstance(args, int):
        return args
    try:
        base = parse_command(["vllm", "serve", args.model_path, *vllm_flags])
        gpu = parse_gpu_spec(args.gpus) if args.gpus else None
        nodes = resolve_nodes(gpu, args.nodes) if gpu else (args.nodes or 1)
        try:
            model, _ = model_from_option(args.model_path)
        except InputError:
            model = None  # a model Headroom cannot size: its tries are launched unchecked
        if model is not None and not model.sizable:
            model = None
        tries = _tries(args, model, gpu, nodes, base)
        bench = _bench_config(args)
        config = load_config()
        settings = SupervisorSettings(
            launcher=args.launcher or config.launcher or "vllm",
            launchers=config,
            python=args.python,
            ready_timeout_s=args.ready_timeout,
        )
        settings.template  # noqa: B018 - an unknown launcher is bad input, said now
    except (
        CommandLineError,
        GpuSpecError,
        TryError,
        WorkloadError,
        LauncherError,
        ValueError,
    ) as exc:
        print(f"headroom sweep: {exc}", file=sys.stderr)
        return 2
    sweep_id = args.sweep_id or new_sweep_id()
    print(f"headroom sweep: {sweep_id} ({len(tries)} configurations)", file=sys.stderr)

    def sweep(on_progress=_progress):
        return run_sweep(
            base, tries, bench=bench, settings=settings, journal=Journal(settings.data_folder() / "runs.jsonl"),
            sweep_id=sweep_id, env=dict(os.environ), nvml_factory=NvmlProbe,
            memory_margin=args.memory_margin, ready_timeout_s=args.ready_timeout,
            on_progress=on_progress,
        )  # fmt: skip

    try:
        if args.tui:
            from headroom.tui.sweep_app import SweepApp  # Textual loads only for --tui

            app = SweepApp(sweep, goal=args.goal, sweep_id=sweep_id, theme=args.theme)
            found = app.run()
            if app.error:
                print(f"headroom sweep: {app.error}", file=sys.stderr)
            if found is None:
                raise KeyboardInterrupt
            rows = found
        else:
            rows = asyncio.run(sweep())
    except KeyboardInterrupt:
        print(f"\nheadroom sweep: interrupted; resume with --sweep-id {sweep_id}", file=sys.stderr)
        return 130
    if args.json:
        text = render_json(rows, args.goal, sweep_id) + "\n"
    elif args.csv:
        text = render_csv(rows, args.goal)
    elif args.markdown:
        text = render_markdown(rows, args.goal) + "\n"
    else:
        text = render_text(rows, args.goal) + "\n"
    if args.output is not None:
        args.output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0 if any(r.outcome == "done" for r in rows) else 1
