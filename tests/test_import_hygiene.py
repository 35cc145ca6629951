"""The read/think/act layers and the simulator must never import Textual, and the simulator
must stay independent of Headroom's own reasoning (so the two can check each other)."""

from __future__ import annotations

import ast
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

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


# -- Headroom's own imports: visible arrows, never guarded (issue 11) ------------------------
ROOT = Path(headroom.__file__).resolve().parent
# Packages whose modules import Headroom's own modules at the top only. The CLI imports its
# commands' heavy parts (Textual, the TUI) inside the command that draws, on purpose.
TOP_ONLY = [
    "probes", "vllm_cmd", "doctor", "bench", "supervisor", "fleet", "tui", "simulator", "themes"
]  # fmt: skip


def _is_own(node: ast.AST) -> bool:
    if isinstance(node, ast.ImportFrom):
        return node.level > 0 or (node.module or "").split(".")[0] == "headroom"
    if isinstance(node, ast.Import):
        return any(alias.name.split(".")[0] == "headroom" for alias in node.names)
    return False


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(
        isinstance(n, ast.Name) and n.id in {"ImportError", "ModuleNotFoundError"} for n in names
    )


def _modules(*packages: str) -> list[Path]:
    tops = [ROOT / p for p in packages] if packages else [ROOT]
    return sorted(path for top in tops for path in top.rglob("*.py"))


def test_no_except_import_error_around_headroom_modules() -> None:
    """A partial install of Headroom cannot happen (one wheel): such a guard only hides an
    import arrow and turns a real bug into a vague "not available"."""
    found = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Try) and any(map(_catches_import_error, node.handlers)):
                if any(_is_own(inner) for stmt in node.body for inner in ast.walk(stmt)):
                    found.append(f"{path.relative_to(ROOT.parent)}:{node.lineno}")
    assert found == []


def test_headroom_modules_are_imported_at_module_top() -> None:
    found = []
    for path in _modules(*TOP_ONLY):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for func in ast.walk(tree):
            if isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
                for node in ast.walk(func):
                    if _is_own(node):
                        found.append(f"{path.relative_to(ROOT.parent)}:{node.lineno}")
    assert found == []
