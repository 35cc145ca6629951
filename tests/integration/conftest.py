"""Run the simulator as vLLM is run (`python -m headroom.simulator serve ...`) and make sure
every process a test starts is gone when the test ends."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

# Simulated seconds per wall second: start-up (weights, profiling, graph capture) takes a
# few simulated seconds, so at 200x a whole start is well under a second of wall time.
TIME_SCALE = "200"
READY_LINE = "Application startup complete."


def free_port() -> int:
    """A port nobody listens on right now, on the loopback interface."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class SimRun:
    """One simulator process: its argv, its combined output file and its exit status."""

    argv: list[str]
    log_path: Path
    proc: subprocess.Popen

    def text(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")


class SimLauncher:
    """Starts simulator processes and kills whatever is still running at teardown."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.runs: list[SimRun] = []

    def env(self, scenario: str | None, log_format: str | None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HEADROOM_SIM_")}
        env["HEADROOM_SIM_TIME_SCALE"] = TIME_SCALE
        if scenario:
            env["HEADROOM_SIM_SCENARIO"] = scenario
        if log_format:
            env["HEADROOM_SIM_LOG_FORMAT"] = log_format
        return env

    def start(
        self, vllm_argv: list[str], *, scenario: str | None = None, log_format: str | None = None
    ) -> SimRun:
        """`vllm_argv` is a vLLM command line (`vllm serve MODEL flags...`); the simulator
        gets the same MODEL and flags."""
        assert vllm_argv[:2] == ["vllm", "serve"], vllm_argv
        argv = [sys.executable, "-m", "headroom.simulator", "serve", *vllm_argv[2:]]
        log_path = self.tmp_path / f"sim-{len(self.runs)}.log"
        with log_path.open("wb") as out:
            proc = subprocess.Popen(
                argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=self.env(scenario, log_format),
                start_new_session=True,  # so teardown can signal the whole group
            )
        run = SimRun(argv, log_path, proc)
        self.runs.append(run)
        return run

    def wait_exit(self, run: SimRun, timeout_s: float = 20.0) -> int:
        return run.proc.wait(timeout=timeout_s)

    def wait_ready(self, run: SimRun, timeout_s: float = 20.0) -> bool:
        """True once the ready line is printed; False if the process exits first."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if READY_LINE in run.text():
                return True
            if run.proc.poll() is not None:
                return READY_LINE in run.text()
            time.sleep(0.05)
        return False

    def stop(self, run: SimRun) -> None:
        if run.proc.poll() is not None:
            return
        run.proc.send_signal(signal.SIGTERM)
        try:
            run.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(run.proc.pid, signal.SIGKILL)
            run.proc.wait(timeout=5)

    def close(self) -> None:
        for run in self.runs:
            if run.proc.poll() is None:
                try:
                    os.killpg(run.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                run.proc.wait(timeout=5)


@pytest.fixture
def port() -> int:
    return free_port()


@pytest.fixture
def sim(tmp_path):
    launcher = SimLauncher(tmp_path)
    try:
        yield launcher
    finally:
        launcher.close()
