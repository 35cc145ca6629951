"""`headroom serve [HEADROOM OPTIONS] MODEL [VLLM FLAGS...]`: launch and supervise vLLM.

The rule that keeps Headroom's options apart from vLLM's: Headroom's own options come
BEFORE the model; everything after the model goes to vLLM untouched (vLLM has a --headless
flag of its own, for example). Only --port may be given on either side: before the model it
is added to vLLM's flags.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

USAGE = "headroom serve [options] MODEL [vLLM flags...]"
EPILOG = """\
Headroom's options go before MODEL; everything after MODEL is passed to vLLM as typed.

launchers (--launcher or [serve] launcher in the config file):
  vllm        vllm serve {model} {flags}                    (default)
  api_server  {python} -m vllm.entrypoints.openai.api_server --model {model} {flags}
              (the CPU build, whose `vllm` script fails)
  sim         {python} -m headroom.simulator serve {model} {flags}
  or a template of your own, e.g. "docker run --rm --gpus all -p 8000:8000
  vllm/vllm-openai --model {model} {flags}" ({flags} must be a word of its own).
config file: $HEADROOM_CONFIG or ~/.config/headroom/config.toml
  [serve] launcher = "...", python = "/path/to/python";  [launchers] name = "template"
journal and per-run logs: $HEADROOM_DATA_DIR or ~/.local/share/headroom

examples:
  headroom serve Qwen/Qwen3-8B --max-model-len 32768
  headroom serve --headless --json --auto-fix 2 meta-llama/Llama-3.1-8B-Instruct -tp 2
  headroom serve --headless --metrics-port 9450 Qwen/Qwen3-8B   (Prometheus scrapes :9450)
  headroom serve --launcher api_server --python /opt/vllm/bin/python /models/tiny --port 8001
  headroom serve --headless            (re-adopt the server a dropped session left running)
"""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="headroom serve",
        usage=USAGE,
        description="Launch vLLM and supervise it: watch, explain, restart with fixes.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--launcher", help="how vLLM is started: vllm, api_server, sim, or a template")
    p.add_argument("--python", help="the interpreter {python} stands for (default: Headroom's)")
    p.add_argument("--headless", action="store_true", help="no TUI: print state changes/findings")
    p.add_argument("--json", action="store_true", help="with --headless: JSON lines")
    p.add_argument(
        "--metrics-port",
        type=int,
        metavar="N",
        help="with --headless: serve Headroom's state and findings as Prometheus metrics on "
        "127.0.0.1:N (/metrics)",
    )
    p.add_argument(
        "--auto-fix",
        type=int,
        default=0,
        metavar="N",
        help="after a known start-up failure apply the doctor's first fix, at most N times",
    )
    p.add_argument(
        "--detach-on-exit",
        action="store_true",
        help="on SIGTERM/SIGINT/quit leave the server running (default: stop it)",
    )
    p.add_argument("--port", type=int, help="vLLM's --port (added to the vLLM flags)")
    p.add_argument(
        "--ready-timeout",
        type=float,
        metavar="S",
        help="seconds without log progress before a start counts as hung "
        "(default: 600 or twice the last good start)",
    )
    p.add_argument(
        "--max-crash-restarts",
        type=int,
        default=3,
        metavar="N",
        help="restart a server that crashed while serving at most N times, with back-off",
    )
    p.add_argument(
        "--ray-address",
        metavar="HOST:PORT",
        help="with --distributed-executor-backend ray: the Ray cluster to check before the start "
        "and read while it starts (default: RAY_ADDRESS, else Ray's own discovery)",
    )
    p.add_argument(
        "--ray-dashboard",
        metavar="URL",
        help="Ray's dashboard (e.g. http://HEAD:8265): node states and placement groups from "
        "its state API (default: not read)",
    )
    p.add_argument("--no-preflight", action="store_true", help="skip the port/GPU checks")
    p.add_argument("--theme", help="TUI theme")
    return p


def split_argv(argv: list[str]) -> tuple[list[str], str | None, list[str]]:
    """(Headroom options, MODEL, vLLM flags): the model is the first bare word."""
    takes_value = {"--launcher", "--python", "--auto-fix", "--port", "--ready-timeout"}
    takes_value |= {"--max-crash-restarts", "--theme", "--metrics-port"}
    takes_value |= {"--ray-address", "--ray-dashboard"}
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == "--":
            rest = argv[i + 1 :]
            return argv[:i], (rest[0] if rest else None), rest[1:]
        if not token.startswith("-"):
            return argv[:i], token, argv[i + 1 :]
        i += 2 if token in takes_value else 1
    return argv, None, []


def main(argv: list[str]) -> int:
    ours, model, vllm_flags = split_argv(list(argv))
    parser = _parser()
    args = parser.parse_args(ours)
    if (args.json or args.metrics_port is not None) and not args.headless:
        args.headless = True
    if args.auto_fix < 0:
        parser.error("--auto-fix takes a number >= 0")

    from headroom.supervisor.headless import EXIT_USAGE, EventPrinter
    from headroom.supervisor.launcher import LauncherError, load_config
    from headroom.supervisor.settings import SupervisorSettings
    from headroom.vllm_cmd import CommandLineError, parse_command
    from headroom.vllm_cmd.config_file import with_config_file

    printer = EventPrinter(as_json=args.json)
    try:
        config = load_config()
    except LauncherError as exc:
        print(f"headroom serve: {exc}", file=sys.stderr)
        return EXIT_USAGE
    settings = SupervisorSettings(
        launcher=args.launcher or config.launcher or "vllm",
        launchers=config,
        python=args.python,
        ready_timeout_s=args.ready_timeout,
        preflight=not args.no_preflight,
        max_crash_restarts=args.max_crash_restarts,
        ray_address=args.ray_address,
        ray_dashboard=args.ray_dashboard,
    )
    on_event = printer if args.headless else None

    from headroom.supervisor.adopt import AdoptError, adopt, find_adoptable

    record = find_adoptable(args.port)
    if model is None and record is None:
        parser.print_usage(sys.stderr)
        print(
            "headroom serve: give a MODEL to launch (no running server to re-adopt was found)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    flags = list(vllm_flags)
    if args.port is not None and not any(t == "--port" or t.startswith("--port=") for t in flags):
        flags += ["--port", str(args.port)]

    from headroom.supervisor.supervisor import Supervisor

    sup = None
    already_running = False
    if record is not None and (model is None or model == record.model):
        try:
            sup = adopt(record, settings, on_event=on_event)
            already_running = True
            print(
                f"headroom serve: re-adopting pid {record.pid} serving {record.model} at "
                f"{record.url} (started by an earlier Headroom)",
                file=sys.stderr,
            )
        except AdoptError as exc:
            print(f"headroom serve: {exc}", file=sys.stderr)
            if model is None:
                return EXIT_USAGE
    if sup is None:
        assert model is not None  # without a MODEL, re-adopting was the only way (above)
        try:
            # --config FILE.yaml: its flags count for Headroom's own reading (port, TP, the
            # model) while the line vLLM gets keeps the user's --config reference.
            command = with_config_file(parse_command(["vllm", "serve", model, *flags]))
            settings.template  # noqa: B018 - an unknown launcher fails here, with the reason
            sup = Supervisor(command, settings, on_event=on_event)
        except (CommandLineError, LauncherError) as exc:
            print(f"headroom serve: {exc}", file=sys.stderr)
            return EXIT_USAGE

    if not args.headless and not (sys.stdin.isatty() and sys.stdout.isatty()):
        print("headroom serve: no terminal; running headless (--headless)", file=sys.stderr)
        args.headless = True
        sup.on_event = printer
    if not args.headless:
        return _run_tui(sup, args, already_running)
    return asyncio.run(_headless(sup, printer, args, already_running))


async def _headless(sup, printer, args, already_running: bool) -> int:
    """run_headless, with the metrics exporter beside it when --metrics-port is given."""
    from headroom.supervisor.headless import EXIT_USAGE, run_headless

    exporter = None
    if args.metrics_port is not None:
        from headroom.fleet.export import MetricsExporter
        from headroom.supervisor.metrics_export import SupervisorExport

        exporter = MetricsExporter(SupervisorExport(sup).state)
        try:
            await exporter.start("127.0.0.1", args.metrics_port)
        except OSError as exc:
            print(
                f"headroom serve: cannot serve metrics on {args.metrics_port}: {exc}",
                file=sys.stderr,
            )
            return EXIT_USAGE
    try:
        return await run_headless(
            sup,
            printer,
            auto_fix=args.auto_fix,
            detach_on_exit=args.detach_on_exit,
            already_running=already_running,
        )
    finally:
        if exporter is not None:
            await exporter.close()


def _run_tui(sup, args, already_running: bool) -> int:
    """Run the dashboard over the supervisor."""
    from headroom.tui.app import run_serve  # here: Textual loads only for the dashboard

    # A re-adopted supervisor's start() only starts watching (in the TUI's own loop).
    try:
        code = run_serve(sup, theme=args.theme)
    finally:
        # The TUI asks stop-or-detach on quit; when it did neither, the flag decides.
        if sup.process is not None and sup.process.alive() and not sup.detached:
            if args.detach_on_exit:
                print(f"headroom serve: leaving pid {sup.pid} running (detached)", file=sys.stderr)
            else:
                print(f"headroom serve: stopping pid {sup.pid}", file=sys.stderr)
                asyncio.run(sup.stop())
    return code
