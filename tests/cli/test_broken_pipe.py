"""A reader that leaves early (`headroom model M --json | head -1`) ends Headroom quietly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CONFIG = Path(__file__).resolve().parents[1] / "fixtures" / "model-configs" / "qwen3-8b.json"


def test_a_closed_pipe_is_no_traceback() -> None:
    read, write = os.pipe()
    os.close(read)  # nobody reads: the first write fails with EPIPE
    done = subprocess.run(
        [sys.executable, "-m", "headroom", "model", str(CONFIG), "--json"],
        stdout=write,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
    )
    os.close(write)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 141
