"""State files for re-adopting a server after an SSH drop."""

from __future__ import annotations

import os
import subprocess
import sys

import psutil

from headroom.supervisor.statefile import (
    ServerRecord,
    list_states,
    read_state,
    remove_state,
    write_state,
)


def _record(pid: int, port: int = 8000) -> ServerRecord:
    return ServerRecord(
        pid=pid,
        pgid=pid,
        port=port,
        url=f"http://127.0.0.1:{port}",
        model="m",
        argv=["vllm", "serve", "m", "--api-key", "***"],
        flags=["--api-key", "***"],
        launcher="vllm serve {model} {flags}",
        env={"CUDA_VISIBLE_DEVICES": "0"},
        log_path="/tmp/x.log",
        started_at=1.0,
        create_time=psutil.Process(pid).create_time() if psutil.pid_exists(pid) else None,
    )


def test_round_trip_and_removal(tmp_path):
    write_state(_record(os.getpid()), tmp_path)
    back = read_state(8000, tmp_path)
    assert back == _record(os.getpid())
    assert back.alive()
    remove_state(8000, tmp_path)
    assert read_state(8000, tmp_path) is None
    remove_state(8000, tmp_path)  # twice is fine


def test_stale_states_are_cleaned_up(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    dead = _record(os.getpid(), 8001)
    dead = ServerRecord(**{**dead.to_json(), "pid": proc.pid, "create_time": 1.0})
    write_state(dead, tmp_path)
    write_state(_record(os.getpid(), 8002), tmp_path)
    (tmp_path / "server-9.json").write_text("{garbage")
    ports = [r.port for r in list_states(tmp_path)]
    assert ports == [8002]
    assert not (tmp_path / "server-8001.json").exists()


def test_reused_pid_is_not_alive(tmp_path):
    record = _record(os.getpid())
    record = ServerRecord(**{**record.to_json(), "create_time": record.create_time - 1000})
    assert not record.alive()
