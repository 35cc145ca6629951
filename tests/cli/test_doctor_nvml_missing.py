"""`headroom doctor --nvml` where NVML cannot be read says why in `lacking`."""

from __future__ import annotations

import json
import time

from headroom.cli import main
from headroom.probes import nvml
from headroom.probes.nvml_types import GpuSnapshot


def test_nvml_asked_for_and_missing_is_named(monkeypatch, capsys) -> None:
    gone = GpuSnapshot(time.monotonic(), False, "NVML library not found", None, None, (), ())
    monkeypatch.setattr(nvml.NvmlProbe, "read", lambda self: gone)
    assert main(["doctor", "--nvml", "--json"]) == 0
    lacking = json.loads(capsys.readouterr().out)["lacking"]
    assert "NVML (--nvml): NVML library not found" in lacking


def test_without_nvml_asked_for_it_is_not_named(capsys) -> None:
    assert main(["doctor", "--json"]) == 0
    assert not any(
        "NVML (--nvml)" in line for line in json.loads(capsys.readouterr().out)["lacking"]
    )
