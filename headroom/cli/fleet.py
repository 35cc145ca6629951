"""`headroom fleet`: every vLLM server of a fleet and its GPUs, one row each, worst first.

    headroom fleet --prometheus http://prom:9090              # the live table
    headroom fleet --prometheus http://prom:9090 --once --json
    headroom fleet --url h1:8000 --url h2:8000 --dcgm h1:9400 --once --csv
    headroom fleet --targets fleet.json --once                  # file_sd JSON or text lines
    headroom fleet --prometheus http://prom:9090 --export 9450  # also serve findings as metrics

With Prometheus, Headroom sends a fixed handful of queries per refresh (rates and quantiles
computed by Prometheus); without it, it scrapes every target itself, concurrently.
`--once` in direct mode scrapes twice, `--interval` seconds apart, so rates exist.
Exit status: 0 read, 1 the source could not be read (or no server found), 2 bad usage.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys

from headroom.fleet.direct_source import DirectSource, DirectTarget, load_targets_file
from headroom.fleet.model import FleetSnapshot
from headroom.fleet.report import render_text, snapshot_to_csv, snapshot_to_json


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="headroom fleet",
        description="Many vLLM servers and their GPUs: one row per server, sorted by trouble.",
        epilog="Exit status: 0 read, 1 the source could not be read, 2 bad usage.",
    )
    source = parser.add_argument_group("where the fleet is read from (one of)")
    source.add_argument(
        "--prometheus",
        metavar="URL",
        help="a Prometheus server's base URL (user:password@ in it is sent as Basic auth; a "
        "bearer token comes from $HEADROOM_PROMETHEUS_TOKEN or --prometheus-token-file)",
    )
    source.add_argument(
        "--prometheus-token-file", metavar="FILE", help="file holding a bearer token"
    )
    source.add_argument(
        "--url", action="append", default=[], metavar="URL", help="a vLLM server (repeat)"
    )
    source.add_argument(
        "--dcgm",
        action="append",
        default=[],
        metavar="URL",
        help="a dcgm-exporter (repeat; with --url)",
    )
    source.add_argument("--targets", metavar="FILE", help="targets file (file_sd JSON or text)")
    parser.add_argument("--once", action="store_true", help="print one snapshot and exit")
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="with --once: JSON")
    out.add_argument("--csv", action="store_true", help="with --once: CSV, one row per server")
    parser.add_argument(
        "--interval", type=float, default=2.0, metavar="S", help="seconds between refreshes (2)"
    )
    parser.add_argument("--timeout", type=float, default=10.0, metavar="S", help="per request (10)")
    parser.add_argument(
        "--no-server-info",
        action="store_true",
        help="do not read /v1/models and /version from the servers themselves",
    )
    parser.add_argument(
        "--export",
        type=int,
        metavar="PORT",
        help="serve the fleet's findings as Prometheus metrics on 127.0.0.1:PORT",
    )
    parser.add_argument(
        "--export-host", default="127.0.0.1", metavar="HOST", help=argparse.SUPPRESS
    )
    parser.add_argument("--plain", action="store_true", help="print the table in a loop, no TUI")
    parser.add_argument("--theme", metavar="NAME", help="TUI theme")
    return parser


def make_source(args: argparse.Namespace):
    """The source the arguments name. Raises ValueError with a message for bad usage."""
    direct = bool(args.url or args.dcgm or args.targets)
    if args.prometheus and direct:
        raise ValueError("give either --prometheus or --url/--dcgm/--targets, not both")
    if args.prometheus:
        from headroom.fleet.prom_source import PrometheusSource

        return PrometheusSource(
            args.prometheus,
            timeout_s=args.timeout,
            read_info=not args.no_server_info,
            bearer_token=_token(args),
        )
    targets = [DirectTarget(u, "vllm") for u in args.url]
    targets += [DirectTarget(u, "dcgm") for u in args.dcgm]
    if args.targets:
        targets += load_targets_file(args.targets)
    if not any(t.kind == "vllm" for t in targets):
        raise ValueError("no vLLM server given: use --prometheus URL, --url URL or --targets FILE")
    from headroom.probes.metrics import normalize_base_url

    for t in targets:
        if t.kind == "vllm":
            normalize_base_url(t.url)
    return DirectSource(targets, timeout_s=args.timeout)


def _token(args: argparse.Namespace) -> str | None:
    """The bearer token, never from the command line itself (it would show in `ps`)."""
    if args.prometheus_token_file:
        try:
            with open(args.prometheus_token_file, encoding="utf-8") as handle:
                return handle.read().strip() or None
        except OSError as error:
            raise ValueError(f"cannot read --prometheus-token-file: {error.strerror}") from None
    return os.environ.get("HEADROOM_PROMETHEUS_TOKEN") or None


async def _once(source, direct: bool, interval: float) -> FleetSnapshot:
    try:
        snap = await source.refresh()
        if direct:  # rates need two scrapes
            await asyncio.sleep(interval)
            snap = await source.refresh()
        return snap
    finally:
        await source.aclose()


def _readable(snap: FleetSnapshot, direct: bool) -> bool:
    """Something was read: Prometheus answered with servers, or (scraping directly) at
    least one server answered; every --url down is nothing read, as `attach` says."""
    if direct:
        return any(s.state in ("up", "metrics_off") for s in snap.servers)
    return bool(snap.servers)


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if (args.json or args.csv) and not args.once:
        parser.error("--json and --csv go with --once")
    if args.interval <= 0 or args.timeout <= 0:
        parser.error("--interval and --timeout must be positive")
    try:
        source = make_source(args)
    except ValueError as error:
        print(f"headroom fleet: {error}", file=sys.stderr)
        return 2
    direct = not args.prometheus
    if args.once:
        snap = asyncio.run(_once(source, direct, min(args.interval, 1.0)))
        if args.json:
            print(json.dumps(snapshot_to_json(snap), indent=2))
        elif args.csv:
            sys.stdout.write(snapshot_to_csv(snap))
        else:
            sys.stdout.write(render_text(snap))
        if not _readable(snap, direct):
            why = "; ".join(snap.warnings) or (
                "no server answered" if direct else "no vLLM series found"
            )
            print(f"headroom fleet: no server read from {snap.source}: {why}", file=sys.stderr)
            return 1
        return 0
    if not args.plain and sys.stdin.isatty() and sys.stdout.isatty():
        from headroom.tui.fleet_app import run_fleet_tui  # Textual only for the screen

        asyncio.run(source.aclose())
        try:
            return run_fleet_tui(
                lambda: make_source(args), args.interval, args.export, args.theme, args.export_host
            )
        except OSError as error:
            print(f"headroom fleet: {error}", file=sys.stderr)
            return 2
    return asyncio.run(_loop(source, args))


async def _loop(source, args: argparse.Namespace) -> int:
    """The text table every --interval seconds (no terminal, or --plain)."""
    exporter = None
    if args.export:
        from headroom.fleet.export import MetricsExporter

        exporter = MetricsExporter()
        try:
            await exporter.start(args.export_host, args.export)
        except OSError as error:
            print(
                f"headroom fleet: cannot serve metrics on port {args.export}: {error}",
                file=sys.stderr,
            )
            await source.aclose()
            return 2
    try:
        while True:
            snap = await source.refresh()
            if exporter is not None:
                exporter.update_fleet(snap)
            sys.stdout.write(render_text(snap) + "\n")
            sys.stdout.flush()
            await asyncio.sleep(args.interval)
    except (KeyboardInterrupt, asyncio.CancelledError):
        return 0
    finally:
        if exporter is not None:
            await exporter.close()
        await source.aclose()
