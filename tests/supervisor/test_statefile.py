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


# --- hostile state files (issue 14, item 8) ---------------------------------------------
# Old: deep nesting raised RecursionError and a 400-digit pid raised OverflowError out of
# read_state (documented to return None), and a string pid was accepted as a record.

import json  # noqa: E402

import pytest  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from support.hostile_json import deep_nesting, hostile_field_values, json_with_raw  # noqa: E402


@pytest.mark.parametrize(
    "text",
    [deep_nesting(5000), '{"pid": ' + deep_nesting(2000, "{") + "}", "[" * 100000, "\x00\xff"],
    ids=["deep-array", "deep-object", "unclosed", "binary"],
)
def test_hostile_state_file_reads_as_none(tmp_path, text):
    (tmp_path / "server-8000.json").write_text(text)
    assert read_state(8000, tmp_path) is None
    assert list_states(tmp_path) == []


def test_a_huge_state_file_is_not_read_whole(tmp_path):
    with open(tmp_path / "server-8000.json", "w") as fh:
        fh.write('{"pad": "' + "x" * (4 << 20) + '"}')
    assert read_state(8000, tmp_path) is None


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(field=st.sampled_from(["pid", "pgid", "port", "url", "argv", "flags", "env", "launcher",
                              "started_at", "create_time", "log_path", "model", "run_id",
                              "headroom_pid", "extra"]),
       raw=hostile_field_values())  # fmt: skip
def test_hostile_field_never_raises_and_never_gives_a_wrong_type(tmp_path, field, raw):
    data = {k: v for k, v in _record(os.getpid()).to_json().items() if k != field}
    (tmp_path / "server-8000.json").write_text(json_with_raw(data, {field: raw}))
    record = read_state(8000, tmp_path)
    if record is not None:
        assert isinstance(record.pid, int) and 0 < record.pid < 2**31
        assert isinstance(record.port, int) and 0 < record.port <= 65535
        assert all(isinstance(t, str) for t in record.flags)
        assert all(isinstance(v, str) for v in record.env.values())
        assert isinstance(record.extra, dict)
        record.alive()  # must not raise either
    json.dumps(data)


def test_wrong_typed_pid_is_refused(tmp_path):
    data = _record(os.getpid()).to_json()
    data["pid"] = str(os.getpid())
    (tmp_path / "server-8000.json").write_text(json.dumps(data))
    assert read_state(8000, tmp_path) is None
