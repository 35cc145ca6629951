"""The read/think/act layers and the simulator must never import Textual, and the simulator
must stay independent of Headroom's own reasoning (so the two can check each other)."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import pytest

import headroom

HEADLESS = [
    "headroom.probes",
    "headroom.doctor",
    "headroom.fleet",
    "headroom.supervisor",
    "headroom.simulator",
]


def _submodules(package: str) -> list[str]:
    module = __import__(package, fromlist=["__path__"])
    names = [package]
    for info in pkgutil.walk_packages(module.__path__, prefix=package + "."):
        if info.name.endswith("__main__"):
            continue
        names.append(info.name)
    return names


def _loaded_after_import(modules: list[str]) -> set[str]:
    code = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return set(json.loads(out.stdout))


@pytest.mark.parametrize("package", HEADLESS)
def test_headless_layers_do_not_import_textual(package: str) -> None:
    loaded = _loaded_after_import(_submodules(package))
    assert not any(name == "textual" or name.startswith("textual.") for name in loaded)


def test_simulator_imports_nothing_else_of_headroom() -> None:
    loaded = _loaded_after_import(_submodules("headroom.simulator"))
    own = {name for name in loaded if name.startswith("headroom.")}
    foreign = {name for name in own if not name.startswith("headroom.simulator")}
    assert foreign == set(), f"simulator pulled in {sorted(foreign)}"


def test_package_version_is_exposed() -> None:
    assert headroom.__version__
