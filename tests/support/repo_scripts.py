"""Loading the repository's own scripts and benchmarks (scripts/*.py, benchmarks/*.py) from a
test. They are files, not a package, so a test imports them by path; one loader here instead of
the same five lines in every test that checks a survey or a benchmark."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def load_repo_script(relative_path: str, name: str | None = None) -> ModuleType:
    """The module at ROOT/relative_path, registered in sys.modules under `name` (its file
    stem by default) before it runs: dataclasses look their defining module up there."""
    path = ROOT / relative_path
    module_name = name or path.stem
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module
