"""`headroom demo [NAME] [--list] [--theme T]`: a simulated vLLM server with the full dashboard.

The simulator (`headroom.simulator`) stands in for vLLM on simulated GPUs; Headroom's own
supervisor launches it exactly as it would launch vLLM (launcher "sim"), and the GPU panels
read the simulated GPUs through the NVML stand-in. The default scenario tells the story:
start-up fails with vLLM's own message, the Doctor screen (4) proposes the fix, the restart
dialog shows the flag diff, one key restarts, and a built-in load fills the KV cache.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any

from headroom.simulator.scenario import DEFAULT_SCENARIO, list_scenarios, load_scenario


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="headroom demo",
        description="Run a simulated vLLM scenario with the full dashboard (no GPU needed).",
    )
    parser.add_argument("name", nargs="?", default=None, help="scenario name (default: the story)")
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    parser.add_argument(
        "--theme",
        default=None,
        help="headroom-dark (default), headroom-light, headroom-high-contrast",
    )
    parser.add_argument("--interval", type=float, default=1.0, help="refresh interval in seconds")
    parser.add_argument(
        "--time-scale", type=float, default=None, help="simulated seconds per wall second"
    )
    parser.add_argument("--keep", action="store_true", help="keep the demo's temporary files")
    return parser


def _describe(scenario: Any) -> tuple[str, str]:
    if isinstance(scenario, str):
        return scenario, ""
    name = getattr(scenario, "name", None) or str(scenario)
    text = getattr(scenario, "description", None) or getattr(scenario, "summary", None) or ""
    return str(name), " ".join(str(text).split())


def list_main() -> int:
    entries = [_describe(s) for s in list_scenarios()]
    width = max((len(name) for name, _ in entries), default=0)
    for name, text in entries:
        print(f"{name.ljust(width)}  {text}".rstrip())
    return 0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def build_supervisor(name: str | None, workdir: Path, time_scale: float | None) -> tuple[Any, Any]:
    """A Supervisor over the simulator for scenario `name`. Returns (supervisor, scenario)."""
    from headroom.supervisor import Supervisor, SupervisorSettings
    from headroom.vllm_cmd import parse_command

    scenario = load_scenario(name or DEFAULT_SCENARIO)
    state = workdir / "sim-state.json"
    env = dict(scenario.env(str(state)))
    env["HEADROOM_NVML_STANDIN"] = str(state)
    if time_scale is not None:
        env["HEADROOM_SIM_TIME_SCALE"] = str(time_scale)
    # This process reads the same simulated GPUs (NVML probe, topology) as the server.
    os.environ["HEADROOM_NVML_STANDIN"] = str(state)
    serve = scenario.serve_argv(port=free_port())  # ["serve", MODEL, *flags]
    command = parse_command(["vllm", *serve])
    settings = SupervisorSettings(launcher="sim", data_dir=workdir / "data")
    supervisor = Supervisor(command, settings, env=env)
    return supervisor, scenario


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    if args.list:
        return list_main()
    try:
        from headroom.themes import resolve_theme_name

        resolve_theme_name(args.theme)
    except ValueError as exc:
        print(f"headroom demo: {exc}", file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="headroom-demo-"))
    try:
        try:
            supervisor, scenario = build_supervisor(args.name, workdir, args.time_scale)
        except (LookupError, ValueError, FileNotFoundError) as exc:
            print(
                f"headroom demo: {exc}\n(headroom demo --list shows the scenarios)", file=sys.stderr
            )
            return 2
        from headroom.tui.app import HeadroomApp
        from headroom.tui.demo_sources import DemoSources

        app = HeadroomApp(
            DemoSources(supervisor, scenario), interval=args.interval, theme=args.theme
        )
        return int(app.run() or 0)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main(sys.argv[1:]))
