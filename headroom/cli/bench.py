"""`headroom bench URL`: a concurrency ramp, its knee, and the results as text/JSON/CSV/Markdown.

Examples:
  headroom bench http://127.0.0.1:8000
  headroom bench http://gpu1:8000 --ramp 1,4,16,64 --step-duration 30 --mix long-document
  headroom bench http://127.0.0.1:8000 --workload prompts.jsonl --json > tp2.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

from headroom.bench.compare import compare_runs
from headroom.bench.compare_table import (
    comparison_markdown,
    comparison_to_json,
    render_comparison,
)
from headroom.bench.journal import record_bench
from headroom.bench.knee import DEFAULT_GAIN_THRESHOLD, LatencyTargets
from headroom.bench.ramp import BenchConfig, BenchError, BenchProgress, run_bench
from headroom.bench.report import summary_text, to_csv, to_markdown
from headroom.bench.workload import (
    BUILTIN_MIXES,
    WorkloadError,
    parse_ramp,
    resolve_distribution,
)
from headroom.supervisor.journal import Journal


def add_load_arguments(p: argparse.ArgumentParser) -> None:
    """The ramp, request, bound and knee options: `bench` and `sweep` share them, so a
    sweep's load is described exactly as one bench's."""
    ramp = p.add_argument_group("ramp")
    ramp.add_argument(
        "--ramp", help="concurrency steps, e.g. 1,2,4,8 (default: doubling to --max-concurrency)"
    )
    ramp.add_argument(
        "--max-concurrency",
        type=int,
        default=None,
        help="top of the default doubling ramp (default 16)",
    )
    ramp.add_argument(
        "--step-duration",
        type=float,
        default=None,
        metavar="S",
        help="hold each step S seconds (default 10)",
    )
    ramp.add_argument(
        "--step-requests",
        type=int,
        default=None,
        metavar="N",
        help="hold each step until N requests finished (instead of a duration)",
    )
    ramp.add_argument("--warmup", type=float, default=2.0, metavar="S", help="warm-up seconds")
    load = p.add_argument_group("requests")
    load.add_argument(
        "--mix", default="chat", help=f"built-in mix ({', '.join(BUILTIN_MIXES)}) or a JSONL file"
    )
    load.add_argument(
        "--workload",
        default=None,
        metavar="FILE.jsonl",
        help="JSONL lines of {prompt_tokens|prompt, output_tokens}",
    )
    load.add_argument("--endpoint", choices=("completions", "chat"), default="completions")
    load.add_argument("--model", default=None, help="served model name (default: the first)")
    load.add_argument("--api-key", default=None, help="Bearer key for /v1 (or VLLM_API_KEY)")
    load.add_argument("--seed", type=int, default=0)
    bounds = p.add_argument_group("bounds")
    bounds.add_argument("--max-duration", type=float, default=300.0, metavar="S")
    bounds.add_argument("--max-requests", type=int, default=20_000, metavar="N")
    bounds.add_argument("--request-timeout", type=float, default=300.0, metavar="S")
    knee = p.add_argument_group("knee")
    knee.add_argument(
        "--gain-threshold",
        type=float,
        default=DEFAULT_GAIN_THRESHOLD,
        help="knee when throughput efficiency of the next step falls below this",
    )
    knee.add_argument("--ttft-p95-ms", type=float, default=None, help="TTFT p95 target")
    knee.add_argument("--itl-p95-ms", type=float, default=None, help="ITL p95 target")
    knee.add_argument("--e2e-p95-ms", type=float, default=None, help="end-to-end p95 target")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="headroom bench",
        description="Drive an OpenAI-compatible server (vLLM or the simulator) through a "
        "concurrency ramp and find the knee: where more concurrency stops buying throughput.",
        epilog="The API key is read from --api-key or VLLM_API_KEY; it is sent only as a "
        "Bearer header on /v1 requests and is never printed or journaled.",
    )
    p.add_argument("url", nargs="?", help="server base URL, e.g. http://127.0.0.1:8000")
    add_load_arguments(p)
    out = p.add_argument_group("output")
    fmt = out.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the result as JSON")
    fmt.add_argument("--csv", action="store_true", help="print the steps as CSV")
    fmt.add_argument("--markdown", action="store_true", help="print a Markdown section")
    out.add_argument("--output", "-o", type=Path, default=None, help="write there instead")
    out.add_argument("--no-progress", action="store_true", help="no progress bar")
    out.add_argument("--label", default=None, help='configuration name, e.g. "TP=2 NVLink"')
    out.add_argument(
        "--journal",
        action="store_true",
        help="add the result to the run journal (the latest run of this URL)",
    )
    out.add_argument("--run-id", default=None, help="with --journal: the run to attach it to")
    out.add_argument(
        "--compare",
        action="store_true",
        help="print the journal's benched configurations side by side and exit",
    )
    out.add_argument(
        "--gpus",
        choices=("auto", "yes", "no"),
        default="auto",
        help="read NVML during steps (auto: only for a server on this host)",
    )
    return p


def config_from_args(args: argparse.Namespace) -> BenchConfig:
    ramp = parse_ramp(args.ramp, args.max_concurrency)
    dist = resolve_distribution(args.workload or args.mix)
    step_duration = args.step_duration
    if step_duration is None and args.step_requests is None:
        step_duration = 10.0
    return BenchConfig(
        url=args.url,
        ramp=ramp,
        step_duration_s=step_duration,
        step_requests=args.step_requests,
        warmup_s=args.warmup,
        distribution=dist,
        endpoint=args.endpoint,
        model=args.model,
        api_key=args.api_key or os.environ.get("VLLM_API_KEY") or None,
        max_duration_s=args.max_duration,
        max_requests=args.max_requests,
        request_timeout_s=args.request_timeout,
        gain_threshold=args.gain_threshold,
        targets=LatencyTargets(_ms(args.ttft_p95_ms), _ms(args.itl_p95_ms), _ms(args.e2e_p95_ms)),
        seed=args.seed,
        read_gpus={"auto": None, "yes": True, "no": False}[args.gpus],
        label=args.label,
    )


def _ms(value: float | None) -> float | None:
    return None if value is None else value / 1000.0


class ProgressBar:
    """One self-rewriting line on stderr; silent when stderr is not a terminal."""

    def __init__(self, enabled: bool, stream=sys.stderr) -> None:
        self.enabled = enabled
        self.stream = stream

    def __call__(self, p: BenchProgress) -> None:
        if not self.enabled:
            return
        if p.phase == "done":
            self.stream.write("\r\033[K")
            self.stream.flush()
            return
        width = 30
        filled = int(p.fraction * width)
        bar = "█" * filled + "░" * (width - filled)
        if p.phase == "warmup":
            what = f"warm-up at concurrency {p.concurrency}"
        else:
            what = (
                f"step {(p.step_index or 0) + 1}/{p.steps_total}: concurrency "
                f"{p.concurrency}, {p.requests_done} done, {p.errors} errors"
            )
        self.stream.write(f"\r\033[K{bar} {p.fraction * 100:3.0f}%  {what}")
        self.stream.flush()


def compare_main(args: argparse.Namespace) -> int:
    rows = compare_runs(Journal().records())
    if args.json:
        sys.stdout.write(json.dumps(comparison_to_json(rows), indent=2) + "\n")
    elif args.markdown:
        sys.stdout.write(comparison_markdown(rows))
    else:
        sys.stdout.write(render_comparison(rows) + "\n")
    return 0


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.compare:
        return compare_main(args)
    if not args.url:
        parser.error("the server URL is required (e.g. http://127.0.0.1:8000)")
    try:
        config = config_from_args(args)
    except (WorkloadError, ValueError) as exc:
        print(f"headroom bench: {exc}", file=sys.stderr)
        return 2
    progress = ProgressBar(not args.no_progress and sys.stderr.isatty())
    try:
        result = asyncio.run(run_bench(config, on_progress=progress))
    except BenchError as exc:
        if progress.enabled:
            progress(BenchProgress("done", None, None, 0, 1, 1, 0, 0))
        print(f"headroom bench: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nheadroom bench: interrupted", file=sys.stderr)
        return 130
    if args.json:
        text = json.dumps(result.to_json(), indent=2) + "\n"
    elif args.csv:
        text = to_csv(result.steps)
    elif args.markdown:
        text = to_markdown(result)
    else:
        text = summary_text(result) + "\n"
    if args.output is not None:
        args.output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    if args.journal:
        try:
            where = record_bench(result, run_id=args.run_id)
        except KeyError as exc:
            print(f"headroom bench: {exc.args[0]}", file=sys.stderr)
            return 1
        print(f"headroom bench: {where}", file=sys.stderr)
    return 0 if result.steps else 1
