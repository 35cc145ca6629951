"""Headroom's own arguments of a subcommand that also takes vLLM's flags after `--`
(`headroom doctor ... -- --tensor-parallel-size 2`, `plan`, `sweep`), parsed without
letting argparse end the process.
"""

from __future__ import annotations

import argparse


def split_at_dashes(argv: list[str]) -> tuple[list[str], list[str]]:
    """(Headroom's arguments, the vLLM flags after the first `--`)."""
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1 :]
    return argv, []


def parse_or_exit_code(
    parser: argparse.ArgumentParser, argv: list[str]
) -> argparse.Namespace | int:
    """The parsed arguments, or the exit code argparse chose: 0 after --help, 2 for a
    usage error (its message is printed already)."""
    try:
        return parser.parse_args(argv)
    except SystemExit as exc:
        return 0 if exc.code == 0 else 2
