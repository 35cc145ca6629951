"""`headroom attach URL`: watch a running vLLM server.

    headroom attach http://127.0.0.1:8000                 # the live dashboard (Textual)
    headroom attach 127.0.0.1:8000 --once                 # one snapshot as text
    headroom attach 127.0.0.1:8000 --once --json          # one snapshot as JSON
    headroom attach 127.0.0.1:8000 --launched-with "vllm serve M --max-num-seqs 64"
    headroom attach 127.0.0.1:8000 --launched-with "vllm serve M" --restart-with max_num_seqs=8

`--launched-with` says how the server was started, so Headroom can restart it (stop its
process group, wait for the GPU memory, start the new command line under Headroom, journal
it); without it the restart dialog shows the command to run by hand.
`--once` scrapes twice, `--interval` seconds apart, so rates and windowed latencies exist.
Exit status: 0 server up (or up with engine metrics off), 1 down / slow / not vLLM / error,
2 bad usage.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from headroom.probes.metrics import (
    EngineMetrics,
    Latency,
    MetricsProbe,
    ServerMetrics,
    normalize_base_url,
    snapshot_to_json,
)
from headroom.probes.safe_text import safe_text
from headroom.probes.server_info import ServerInfo, read_server_info
from headroom.supervisor.states import RestartOutcome

REACHABLE_STATES = ("up", "metrics_off")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="headroom attach",
        description="Watch a running vLLM server: KV-cache headroom, queue, latency, throughput.",
        epilog="Exit status: 0 up, 1 down or not vLLM, 2 bad usage. With --restart-with: 0 "
        "the new configuration is ready, 1 it failed (rolled back when it could), 2 refused.",
    )
    parser.add_argument("url", help="the server, e.g. http://127.0.0.1:8000 (or host:port)")
    parser.add_argument(
        "--interval", type=float, default=1.0, metavar="S", help="seconds between scrapes (1)"
    )
    parser.add_argument(
        "--timeout", type=float, default=5.0, metavar="S", help="scrape timeout in seconds (5)"
    )
    parser.add_argument("--once", action="store_true", help="print one snapshot and exit")
    parser.add_argument("--json", action="store_true", help="with --once: print JSON")
    parser.add_argument("--theme", metavar="NAME", help="dashboard theme")
    logs = parser.add_mutually_exclusive_group()
    logs.add_argument("--log-from", metavar="FILE", help="follow the server's log file")
    logs.add_argument(
        "--log-cmd",
        nargs=argparse.REMAINDER,
        metavar="CMD",
        help="follow the output of a command (e.g. --log-cmd docker logs -f vllm); put it last",
    )
    restart = parser.add_argument_group(
        "restarting a server Headroom did not start",
        "Headroom restarts only what it knows how to start again. Give the launch line exactly "
        "as the server was started (one string, split like a shell but never run through "
        "one); its process is found by the port it listens on, and stopped by process group.",
    )
    restart.add_argument(
        "--launched-with",
        metavar="COMMAND",
        help='how the server was launched, e.g. "vllm serve MODEL --port 8000 --flags..."',
    )
    restart.add_argument(
        "--launcher",
        metavar="NAME|TEMPLATE",
        help="how to start it again when the launch line alone does not say (a container): "
        "vllm, api_server, sim, a config name, or a template with {model} and {flags}",
    )
    restart.add_argument(
        "--restart-with",
        action="append",
        metavar="KNOB=VALUE",
        help="restart now with this change (repeatable; e.g. max_num_seqs=8), print the "
        "outcome and exit; the new server keeps running (needs --launched-with)",
    )
    return parser


def main(argv: list[str]) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse: --help is 0, a usage error 2
        return int(exit_.code or 0)
    problem = _check(args)
    if problem:
        print(f"headroom attach: {problem}", file=sys.stderr)
        return 2
    url = normalize_base_url(args.url)
    if args.once:
        snapshot, info = asyncio.run(_once_with_info(url, args.interval, args.timeout))
        if args.json:
            data = snapshot_to_json(snapshot)
            data["server_info"] = info_to_json(info)
            print(json.dumps(data, indent=2, allow_nan=False))
        else:
            print(safe_text(format_snapshot(snapshot), multiline=True))
            if info is not None:
                print(safe_text(format_info(info), multiline=True))
        return 0 if snapshot.state in REACHABLE_STATES else 1
    supervisor = None
    if args.launched_with:
        from headroom.supervisor.attached import AttachRestartError, attach_supervisor

        try:
            supervisor = attach_supervisor(url, args.launched_with, launcher=args.launcher)
        except AttachRestartError as error:
            print(f"headroom attach: {error}", file=sys.stderr)
            return 2
    if args.restart_with is not None:
        return _restart_now(supervisor, args.restart_with)
    return _run_dashboard(url, args, supervisor)


def _check(args: argparse.Namespace) -> str | None:
    if not args.interval > 0:
        return "--interval must be a positive number of seconds"
    if not args.timeout > 0:
        return "--timeout must be a positive number of seconds"
    if args.json and not args.once:
        return "--json needs --once (the dashboard is interactive)"
    if args.log_cmd is not None and not args.log_cmd:
        return "--log-cmd needs a command after it"
    if args.once and (args.launched_with or args.restart_with):
        return "--once only reads; --launched-with and --restart-with are for restarting"
    if args.launcher and not args.launched_with:
        return "--launcher needs --launched-with (the launch line it starts again)"
    try:
        normalize_base_url(args.url)
    except ValueError as error:
        return str(error)
    return None


async def _once_with_info(
    url: str, interval: float, timeout: float
) -> tuple[ServerMetrics, ServerInfo | None]:
    """The snapshot, and what the server says about itself (/v1/models, /version)."""
    snapshot = await snapshot_once(url, interval, timeout)
    if snapshot.state not in REACHABLE_STATES:
        return snapshot, None
    return snapshot, await read_server_info(url, timeout_s=min(timeout, 3.0))


def info_to_json(info: ServerInfo | None) -> dict[str, object] | None:
    if info is None:
        return None
    return {
        "served_models": list(info.model_ids),
        "model_root": info.model_root,
        "max_model_len": info.max_model_len,
        "vllm_version": info.version,
        "message": info.message,
    }


def format_info(info: ServerInfo) -> str:
    max_len = "N/A" if info.max_model_len is None else f"{info.max_model_len:,}"
    parts = [f"  server    max_model_len {max_len}", f"vLLM {info.version or 'N/A'}"]
    if info.model_root:
        parts.append(f"root {info.model_root}")
    text = ", ".join(parts)
    return text + (f"  ({info.message})" if info.message else "")


async def snapshot_once(url: str, interval: float, timeout: float) -> ServerMetrics:
    """Two scrapes `interval` apart (rates need two); stops early if the server is not up."""
    async with MetricsProbe(url, timeout_s=timeout) as probe:
        first = await probe.scrape()
        if first.state != "up":
            return first
        await asyncio.sleep(interval)
        return await probe.scrape()


def _restart_now(supervisor, changes_text: list[str]) -> int:
    """`--restart-with`: one restart without the dashboard; 0 ready, 1 failed, 2 refused."""
    from headroom.supervisor.attached import AttachRestartError, parse_change, restart_attached

    try:
        changes = dict(parse_change(text) for text in changes_text)
    except AttachRestartError as error:
        print(f"headroom attach: {error}", file=sys.stderr)
        return 2

    async def run() -> RestartOutcome:
        if supervisor is not None:
            await supervisor.start()  # watch the running server until the restart stops it
        try:
            return await restart_attached(supervisor, changes)
        finally:
            if supervisor is not None:
                await supervisor.close()  # stop watching; the new server keeps running

    outcome = asyncio.run(run())
    for change in getattr(outcome, "diff", ()):
        print(f"  {change}")
    if supervisor is None:
        print(f"headroom attach: {outcome.reason}", file=sys.stderr)
        return 2
    if outcome.ok:
        print(f"restarted: ready at {supervisor.url} (pid {supervisor.pid}, run {outcome.run_id})")
        return 0
    back = " (rolled back to the last good configuration)" if outcome.rolled_back else ""
    print(f"headroom attach: restart failed{back}: {outcome.reason}", file=sys.stderr)
    return 1


def _run_dashboard(url: str, args: argparse.Namespace, supervisor=None) -> int:
    from headroom.tui.app import run_attach  # here: Textual loads only for the dashboard

    code = run_attach(
        url,
        interval=args.interval,
        theme=args.theme,
        log_from=args.log_from or None,
        log_cmd=list(args.log_cmd) if args.log_cmd else None,
        supervisor=supervisor,
    )
    return int(code or 0)


# --- text output ----------------------------------------------------------------------


def format_snapshot(m: ServerMetrics) -> str:
    """A readable block for a terminal or a log file (no colour, no Textual)."""
    lines = [f"{m.url}  {m.state}" + (f": {m.message}" if m.message else "")]
    if m.state != "up":
        return "\n".join(lines)
    total = m.total
    models = ", ".join(r.model_name or "?" for r in m.models) or "?"
    lines.append(f"  model     {models}   engines: {len(m.engines)}")
    lines += _row_lines(total)
    if len(m.engines) > 1:
        for engine in m.engines:
            label = f"{engine.model_name or '?'} engine {engine.engine}"
            lines.append(f"  [{label}]")
            lines += ["  " + line for line in _row_lines(engine)]
    return "\n".join(lines)


def _row_lines(row: EngineMetrics) -> list[str]:
    usage = _percent(row.kv_cache_usage)
    capacity = _count(row.kv_capacity_tokens)
    free = _count(row.kv_free_tokens)
    headroom = "?" if row.headroom_requests is None else f"{row.headroom_requests:,.1f}"
    size = "?" if row.avg_request_tokens is None else f"{row.avg_request_tokens:,.0f}"
    return [
        f"  KV cache  {usage} used of {capacity} tokens, {free} free",
        f"  headroom  ~{headroom} more requests of ~{size} tokens",
        f"  requests  {_count(row.requests_running)} running, "
        f"{_count(row.requests_waiting)} waiting",
        f"  preempt   {_count(row.preemptions_total)} total, {_per_s(row.preemptions_per_s)}",
        f"  TTFT      {_latency(row.ttft)}",
        f"  ITL       {_latency(row.itl)}",
        f"  E2E       {_latency(row.e2e)}",
        f"  tokens    prompt {_per_s(row.prompt_tokens_per_s)}, "
        f"generation {_per_s(row.generation_tokens_per_s)}",
    ]


def _latency(latency: Latency) -> str:
    if latency.count == 0:
        return "no requests in the window"
    if latency.below_first_bucket and latency.p50 is None:
        bound = _seconds(latency.first_bucket_s)
        tail = f", p95 {_seconds(latency.p95)}" if latency.p95 is not None else ""
        return f"p50 < {bound} (mean {_seconds(latency.mean)}){tail}  n={latency.count}"
    return (
        f"p50 {_seconds(latency.p50)}  p95 {_seconds(latency.p95)}  "
        f"p99 {_seconds(latency.p99)}  n={latency.count}"
    )


def _seconds(value: float | None) -> str:
    if value is None:
        return "?"
    return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.2f} s"


def _percent(value: float | None) -> str:
    return "?" if value is None else f"{value * 100:.1f}%"


def _count(value: float | None) -> str:
    return "?" if value is None else f"{value:,.0f}"


def _per_s(value: float | None) -> str:
    return "?/s" if value is None else f"{value:,.1f}/s"
