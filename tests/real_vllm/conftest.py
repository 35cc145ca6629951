"""Helpers and fixtures for end-to-end tests against a real vLLM (CPU build, tiny model).

Everything here is for tests marked `real_vllm` (deselected by default; `scripts/test`
runs them). A real start takes ~110 s on 2 cores, so keep real starts few:

* `real_vllm_env` (session): runs scripts/setup-real-vllm.sh once (fast when already built)
  and gives `RealVllmEnv(python, model)`. `HEADROOM_REAL_VLLM_PYTHON` and
  `HEADROOM_REAL_VLLM_MODEL` override it; `HEADROOM_SKIP_REAL_VLLM=1` skips. When the
  environment cannot be built every real-vLLM test SKIPS, loudly: a pytest warning, a line
  on the terminal and the skip reason all say why.
* `real_vllm_server` (session): ONE shared server for tests that only watch (metrics,
  log reader, attach, bench). Do not stop, restart or overload it. It has `.url`,
  `.port`, `.log_path`, `.argv`, `.log_text()`, and `.model_name` ("tiny").
* For tests that need their own server (the supervisor's fail -> fix loop):
  `api_server_argv(env, port=free_port(), extra=[...])` builds the launch argv
  (`python -m vllm.entrypoints.openai.api_server --model M --port P --host 127.0.0.1
  --served-model-name tiny --max-model-len 1024 --kv-cache-memory-bytes 16M` + extra; later
  flags win), `real_vllm_environ()` the environment (no colour, offline), and
  `RealVllmServer(argv, log_path=...)` starts it in its own process group, writes its output
  to the log file, `wait_ready(timeout_s)` polls /health (False if it exited first) and
  `stop()` ends the whole group (SIGTERM, then SIGKILL). Use it as a context manager, or
  call `stop()` in a `finally`: no server may outlive its test. `start_timeout_s()` is the
  start-up budget (HEADROOM_REAL_VLLM_START_TIMEOUT, default 600 s: the machine is shared).

All tests in this folder get the `real_vllm` marker and a 1200 s pytest timeout.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SERVED_NAME = "tiny"


@dataclass(frozen=True)
class RealVllmEnv:
    """Where the real vLLM lives: its Python and the tiny local model directory."""

    python: str
    model: str


def start_timeout_s() -> float:
    return float(os.environ.get("HEADROOM_REAL_VLLM_START_TIMEOUT", "600"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.fspath)).resolve().parents:
            if item.get_closest_marker("real_vllm") is None:
                item.add_marker(pytest.mark.real_vllm)
            if item.get_closest_marker("timeout") is None:
                item.add_marker(pytest.mark.timeout(1200))


# ---------------------------------------------------------------------------------------
# The environment


_ENV_RESULT: RealVllmEnv | str | None = None  # the env, or why it is unavailable


def _find_env() -> RealVllmEnv | str:
    if os.environ.get("HEADROOM_SKIP_REAL_VLLM") == "1":
        return "HEADROOM_SKIP_REAL_VLLM=1"
    python = os.environ.get("HEADROOM_REAL_VLLM_PYTHON")
    model = os.environ.get("HEADROOM_REAL_VLLM_MODEL")
    if python and model:
        if not (os.access(python, os.X_OK) and Path(model).is_dir()):
            return f"HEADROOM_REAL_VLLM_PYTHON={python} / HEADROOM_REAL_VLLM_MODEL={model} do not exist"
        return RealVllmEnv(python, model)
    try:
        out = subprocess.run(
            [str(ROOT / "scripts" / "setup-real-vllm.sh")],
            capture_output=True,
            text=True,
            timeout=1800,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"scripts/setup-real-vllm.sh could not run: {exc}"
    found = dict(
        line.split("=", 1) for line in out.stdout.splitlines() if line.startswith("HEADROOM_")
    )
    if out.returncode != 0 or "HEADROOM_REAL_VLLM_PYTHON" not in found:
        tail = (out.stderr or out.stdout).strip()[-600:]
        return f"scripts/setup-real-vllm.sh failed (exit {out.returncode}): {tail}"
    return RealVllmEnv(found["HEADROOM_REAL_VLLM_PYTHON"], found["HEADROOM_REAL_VLLM_MODEL"])


def real_vllm_env_or_skip(config: pytest.Config | None = None) -> RealVllmEnv:
    """The real vLLM environment, built once per session; skips loudly when unavailable."""
    global _ENV_RESULT
    if _ENV_RESULT is None:
        _ENV_RESULT = _find_env()
        if isinstance(_ENV_RESULT, str):
            message = f"!!! REAL vLLM UNAVAILABLE, real-vLLM tests SKIP: {_ENV_RESULT} !!!"
            warnings.warn(pytest.PytestWarning(message), stacklevel=2)
            reporter = config.pluginmanager.get_plugin("terminalreporter") if config else None
            if reporter is not None:
                reporter.write_line(message, red=True, bold=True)
    if isinstance(_ENV_RESULT, str):
        pytest.skip(f"!!! REAL vLLM UNAVAILABLE: {_ENV_RESULT} !!!")
    return _ENV_RESULT


@pytest.fixture(scope="session")
def real_vllm_env(request: pytest.FixtureRequest) -> RealVllmEnv:
    return real_vllm_env_or_skip(request.config)


# ---------------------------------------------------------------------------------------
# Starting servers


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def api_server_argv(
    env: RealVllmEnv,
    *,
    port: int,
    extra: Sequence[str] = (),
    kv_cache_bytes: str = "16M",
    max_model_len: int = 1024,
) -> list[str]:
    """The launch line of a real vLLM API server on 127.0.0.1 (later flags in `extra` win)."""
    return [
        env.python, "-m", "vllm.entrypoints.openai.api_server",
        "--model", env.model, "--port", str(port), "--host", "127.0.0.1",
        "--served-model-name", SERVED_NAME, "--max-model-len", str(max_model_len),
        "--kv-cache-memory-bytes", kv_cache_bytes, *extra,
    ]  # fmt: skip


def real_vllm_environ(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment for a real vLLM: no colour codes, nothing fetched."""
    env = dict(os.environ)
    env.update(
        VLLM_LOGGING_COLOR="0", NO_COLOR="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
        VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1", PYTHONUNBUFFERED="1",
    )  # fmt: skip
    env.pop("VLLM_CPU_KVCACHE_SPACE", None)  # the size comes from --kv-cache-memory-bytes
    env.update(extra or {})
    return env


_LIVE_GROUPS: set[int] = set()


@atexit.register
def _kill_leftovers() -> None:  # last resort if pytest dies between start and stop
    for pgid in list(_LIVE_GROUPS):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


class RealVllmServer:
    """One real vLLM server process group, its log file, and a clean stop."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        log_path: Path,
        env: Mapping[str, str] | None = None,
        host: str = "127.0.0.1",
    ) -> None:
        self.argv = list(argv)
        self.log_path = Path(log_path)
        self.env = dict(env) if env is not None else real_vllm_environ()
        self.port = int(self.argv[self.argv.index("--port") + 1])
        self.url = f"http://{host}:{self.port}"
        self.model_name = SERVED_NAME
        self.process: subprocess.Popen[bytes] | None = None
        self._log = None

    def start(self) -> RealVllmServer:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            self.argv,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=self.env,
            cwd=str(self.log_path.parent),
            start_new_session=True,  # its own group: stop() reaches EngineCore and workers
        )
        _LIVE_GROUPS.add(self.process.pid)
        return self

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=2) as reply:
                return reply.status == 200
        except (OSError, urllib.error.URLError):
            return False

    def wait_ready(self, timeout_s: float | None = None) -> bool:
        """Poll /health until it answers 200; False when the process exits or time runs out."""
        deadline = time.monotonic() + (timeout_s if timeout_s is not None else start_timeout_s())
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                return False
            if self.healthy():
                return True
            time.sleep(1.0)
        return False

    def exited(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def stop(self, grace_s: float = 30.0) -> int | None:
        """End the whole process group (SIGTERM, then SIGKILL after grace_s)."""
        process = self.process
        if process is not None:
            pgid = process.pid
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGTERM)
            try:
                process.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                pass
            # Children (EngineCore, workers) may outlive the leader: the group goes entirely.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)
            _LIVE_GROUPS.discard(pgid)
        if self._log is not None:
            self._log.close()
            self._log = None
        return None if process is None else process.returncode

    def __enter__(self) -> RealVllmServer:
        return self.start() if self.process is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_real_server(
    env: RealVllmEnv,
    log_dir: Path,
    *,
    extra: Sequence[str] = (),
    kv_cache_bytes: str = "16M",
    max_model_len: int = 1024,
    name: str = "vllm",
) -> RealVllmServer:
    """Start (not wait for) a real server on a free port, logging to log_dir/NAME.log."""
    argv = api_server_argv(
        env,
        port=free_port(),
        extra=extra,
        kv_cache_bytes=kv_cache_bytes,
        max_model_len=max_model_len,
    )
    return RealVllmServer(argv, log_path=Path(log_dir) / f"{name}.log").start()


@pytest.fixture(scope="session")
def real_vllm_server(
    real_vllm_env: RealVllmEnv, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RealVllmServer]:
    """The one shared real server (watch it; never stop or reconfigure it)."""
    server = start_real_server(real_vllm_env, tmp_path_factory.mktemp("real-vllm"), name="shared")
    try:
        if not server.wait_ready():
            code = server.exited()
            tail = "\n".join(server.log_text().splitlines()[-40:])
            pytest.fail(
                f"the shared real vLLM did not become ready (exit status {code}) "
                f"within {start_timeout_s():.0f} s; log {server.log_path}:\n{tail}",
                pytrace=False,
            )
        yield server
    finally:
        server.stop()


if __name__ == "__main__":  # manual check: start, wait, print the URL and the log, stop
    found = _find_env()
    if isinstance(found, str):
        sys.exit(found)
    with start_real_server(found, Path("/tmp/headroom-real-vllm"), name="manual") as srv:
        print("ready" if srv.wait_ready() else "NOT ready", srv.url, srv.log_path)
