"""A stand-in for a `vllm serve --distributed-executor-backend ray` whose placement group
never comes: prints vLLM's real wait line (tests/fixtures/ray, gpustack#5509) every 0.2 s
and never serves. Run as: python ray_wait_vllm.py MODEL [flags...]"""

from __future__ import annotations

import sys
import time
from pathlib import Path

LINE = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "ray"
    / "vllm-log-waiting-for-placement-group-gpustack-5509.log"
).read_text()

print(f"(APIServer pid=1) INFO starting {sys.argv[1:2]}", flush=True)
while True:
    sys.stdout.write(LINE if LINE.endswith("\n") else LINE + "\n")
    sys.stdout.flush()
    time.sleep(0.2)
