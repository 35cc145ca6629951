"""`headroom serve --headless`: a subprocess driven like systemd would drive it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from headroom.cli.serve import split_argv

FAKE_VLLM = Path(__file__).parents[1] / "supervisor" / "fake_vllm.py"
TEMPLATE = f"{sys.executable} {FAKE_VLLM} {{model}} {{flags}}"


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_headroom_options_go_before_the_model():
    ours, model, flags = split_argv(
        ["--headless", "--auto-fix", "2", "--port", "9", "Qwen/Q", "--headless", "-tp", "2"]
    )
    assert ours == ["--headless", "--auto-fix", "2", "--port", "9"]
    assert model == "Qwen/Q"
    assert flags == ["--headless", "-tp", "2"]
    assert split_argv(["--json"]) == (["--json"], None, [])


def _serve(tmp_path, *args: str, mode: str = "", max_len: int = 100000):
    env = dict(
        os.environ,
        HEADROOM_DATA_DIR=str(tmp_path / "data"),
        HEADROOM_CONFIG=str(tmp_path / "none.toml"),
        FAKE_VLLM_MODE=mode,
        FAKE_VLLM_MAX_LEN=str(max_len),
        HEADROOM_NVML_STANDIN="",
    )
    return subprocess.Popen(
        [sys.executable, "-m", "headroom", "serve", "--launcher", TEMPLATE, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _read_until(proc, predicate, seconds=40.0) -> list[dict]:
    events = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        events.append(json.loads(line))
        if predicate(events[-1]):
            return events
    raise AssertionError(f"never saw the expected event; got {events}")


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


@pytest.mark.slow
def test_sigterm_stops_the_server_group(tmp_path):
    port = _free_port()
    proc = _serve(tmp_path, "--headless", "--json", "tiny", "--port", str(port))
    try:
        events = _read_until(proc, lambda e: e.get("new") == "ready")
        (launch,) = [e for e in events if e["kind"] == "launch"]
        proc.send_signal(signal.SIGTERM)
        rest = [json.loads(line) for line in proc.stdout]
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert any(e.get("new") == "stopped" for e in rest)
    assert _gone(launch["pid"])


@pytest.mark.slow
def test_detach_on_exit_leaves_it_running_and_serve_readopts(tmp_path):
    port = _free_port()
    proc = _serve(tmp_path, "--headless", "--json", "--detach-on-exit", "tiny", "--port", str(port))
    pid = None
    try:
        events = _read_until(proc, lambda e: e.get("new") == "ready")
        pid = next(e for e in events if e["kind"] == "launch")["pid"]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
        assert not _gone(pid)
        again = _serve(tmp_path, "--headless", "--json", "--port", str(port))
        try:
            _read_until(again, lambda e: e.get("new") == "ready")
            again.send_signal(signal.SIGTERM)
            assert again.wait(timeout=30) == 0
        finally:
            if again.poll() is None:
                again.kill()
                again.wait()
        assert _gone(pid)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if pid and not _gone(pid):
            os.killpg(pid, signal.SIGKILL)


@pytest.mark.slow
def test_startup_failure_without_auto_fix_exits_1_and_changes_nothing(tmp_path):
    port = _free_port()
    proc = _serve(
        tmp_path,
        "--headless",
        "--json",
        "tiny",
        "--port",
        str(port),
        "--max-model-len",
        "2048",
        max_len=768,
    )
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    events = [json.loads(line) for line in out.splitlines()]
    assert [e["kind"] for e in events].count("launch") == 1, (out, err)
    assert events[-1]["state"] == "failed" or events[-1]["kind"] == "notice"


def test_usage_errors_are_clear(tmp_path):
    proc = _serve(tmp_path, "--headless")
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert "give a MODEL" in err


@pytest.mark.slow
def test_auto_fix_applies_one_knob_per_restart_until_ready(tmp_path):
    port = _free_port()
    proc = _serve(
        tmp_path,
        "--headless",
        "--json",
        "--auto-fix",
        "3",
        "tiny",
        "--port",
        str(port),
        "--max-model-len",
        "2048",
        max_len=768,
    )
    try:
        events = _read_until(proc, lambda e: e.get("new") == "ready", seconds=90)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    restarts = [e for e in events if e["kind"] == "restart"]
    assert 1 <= len(restarts) <= 3
    assert all(len(e["diff"]) == 1 for e in restarts)  # one knob per restart
    assert any(e["kind"] == "finding" for e in events)
    from headroom.supervisor.journal import Journal

    records = Journal(tmp_path / "data" / "runs.jsonl").records()
    assert [r.outcome for r in records][-1] == "stopped"
    assert all(r.outcome == "failed" for r in records[:-1])
    assert all(r.trigger and r.trigger.startswith("auto-fix") for r in records[1:])
    assert records[0].reason and "estimated maximum model length" in records[0].reason


def _fake_tui(detach: bool):
    """A run_serve stand-in: starts the server in its own event loop (as Textual's app.run()
    does), optionally detaches, and returns without stopping it."""

    def run_serve(supervisor, interval: float = 1.0, theme=None, **_):
        import asyncio

        async def session():
            await supervisor.start()
            assert await supervisor.wait_ready(timeout_s=30)
            if detach:
                await supervisor.detach()

        asyncio.run(session())
        run_serve.pid = supervisor.pid
        return 0

    return run_serve


@pytest.mark.parametrize("detach", [False, True])
def test_tui_session_end_stops_the_server_unless_detached(tmp_path, monkeypatch, detach):
    import headroom.tui.app as tui_app
    from headroom.cli import serve

    monkeypatch.setenv("HEADROOM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HEADROOM_CONFIG", str(tmp_path / "none.toml"))
    fake = _fake_tui(detach)
    monkeypatch.setattr(tui_app, "run_serve", fake)
    monkeypatch.setattr(serve.sys.stdin, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(serve.sys.stdout, "isatty", lambda: True, raising=False)
    port = _free_port()
    assert serve.main(["--launcher", TEMPLATE, "tiny", "--port", str(port)]) == 0
    try:
        assert _gone(fake.pid) is not detach
    finally:
        if not _gone(fake.pid):
            os.killpg(fake.pid, signal.SIGKILL)


@pytest.mark.slow
def test_kill_9_of_headroom_leaves_the_server_to_be_readopted(tmp_path):
    """An SSH drop: Headroom dies without a word; the server keeps serving in its own
    session, and the next `headroom serve` finds it through the state file."""
    port = _free_port()
    proc = _serve(tmp_path, "--headless", "--json", "tiny", "--port", str(port))
    pid = None
    try:
        events = _read_until(proc, lambda e: e.get("new") == "ready")
        pid = next(e for e in events if e["kind"] == "launch")["pid"]
        proc.kill()
        proc.wait(timeout=10)
        assert not _gone(pid)
        again = _serve(tmp_path, "--headless", "--json", "--port", str(port))
        try:
            events = _read_until(again, lambda e: e.get("new") == "ready")
            assert any("re-adopted pid" in e["message"] for e in events)
            again.send_signal(signal.SIGTERM)
            assert again.wait(timeout=30) == 0
        finally:
            if again.poll() is None:
                again.kill()
                again.wait()
        assert _gone(pid)
    finally:
        if pid and not _gone(pid):
            os.killpg(pid, signal.SIGKILL)
    from headroom.supervisor.journal import Journal

    (record,) = Journal(tmp_path / "data" / "runs.jsonl").records()
    assert record.outcome == "stopped"
