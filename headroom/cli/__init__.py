"""The `headroom` command: a thin dispatcher over one module per subcommand.

Each subcommand lives in `headroom/cli/<name>.py` and exposes `main(argv: list[str]) -> int`.
Modules are imported lazily so that `headroom topo` never pays for Textual, and so that a
subcommand whose module fails to import still leaves the others working.
"""

from __future__ import annotations

import importlib
import os
import sys

from headroom import __version__

# name -> (module, one-line summary). Order is the order shown in --help.
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("headroom.cli.demo", "run a simulated vLLM scenario with the full dashboard"),
    "serve": ("headroom.cli.serve", "launch and supervise vLLM: headroom serve MODEL [vllm flags]"),
    "attach": ("headroom.cli.attach", "watch a running vLLM server: headroom attach URL"),
    "doctor": (
        "headroom.cli.doctor",
        "diagnose a vLLM setup from its log, metrics, topology, flags",
    ),
    "plan": ("headroom.cli.plan", "size a deployment before launch: TP/PP, KV capacity, flags"),
    "topo": ("headroom.cli.topo", "read `nvidia-smi topo -m` and judge each tensor-parallel size"),
    "model": ("headroom.cli.model", "print a local model's shape and weight size"),
    "runs": ("headroom.cli.runs", "the run journal as a configuration comparison table"),
    "bench": ("headroom.cli.bench", "concurrency ramp against a server: throughput, latency, knee"),
    "sweep": ("headroom.cli.sweep", "start each configuration, run the same ramp, fill one table"),
    "fleet": ("headroom.cli.fleet", "many servers and their GPUs via Prometheus or direct scrape"),
}


def _usage() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = [
        f"headroom {__version__}: watch, explain and fix vLLM servers",
        "",
        "usage: headroom COMMAND [options]   (headroom COMMAND --help for details)",
        "",
        "commands:",
    ]
    lines += [f"  {name.ljust(width)}  {summary}" for name, (_, summary) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in {"-h", "--help", "help"}:
        print(_usage())
        return 0
    if args[0] in {"-V", "--version"}:
        print(f"headroom {__version__}")
        return 0
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        print(f"headroom: unknown command {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module_name = COMMANDS[name][0]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        print(f"headroom: the {name!r} command is not available in this build", file=sys.stderr)
        return 2
    try:
        return int(module.main(rest) or 0)
    except BrokenPipeError:
        # `headroom model M --json | head`: the reader left; say nothing more (Python would
        # print a traceback, and again at exit while flushing stdout)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a shell reports a command the pipe cut short
