"""The child process: own group, log file, escalating stop, no orphans."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import psutil
import pytest
from sup_support import FAKE_VLLM, free_port, wait_for

from headroom.supervisor.process import LaunchError, ManagedProcess


def _spawn(tmp_path, mode: str = "", extra: list[str] | None = None) -> ManagedProcess:
    env = dict(os.environ, FAKE_VLLM_MODE=mode)
    argv = [sys.executable, str(FAKE_VLLM), "m", "--port", str(free_port()), *(extra or [])]
    return ManagedProcess.spawn(argv, env, tmp_path / "run.log")


async def test_child_has_its_own_group_and_writes_to_the_log(tmp_path):
    proc = _spawn(tmp_path)
    try:
        assert os.getpgid(proc.pid) == proc.pid != os.getpgid(os.getpid())
        await wait_for(lambda: "Starting vLLM server" in (tmp_path / "run.log").read_text())
        assert proc.alive()
    finally:
        report = await proc.stop(grace_int_s=5, grace_term_s=5)
    assert report.signals == ("SIGINT",)
    assert not proc.alive()
    assert not psutil.pid_exists(proc.pid) or psutil.Process(proc.pid).status() == "zombie"


def _ignored_signals(pid: int) -> int:
    line = next(
        x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith("SigIgn:")
    )
    return int(line.split()[1], 16)


async def test_a_headroom_that_ignores_sigint_still_stops_vllm_with_sigint(tmp_path):
    # Started in the background by a script, Headroom inherits SIGINT ignored; vLLM must not.
    saved = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        proc = _spawn(tmp_path)
    finally:
        signal.signal(signal.SIGINT, saved)
    try:
        await wait_for(lambda: "Starting vLLM server" in (tmp_path / "run.log").read_text())
        assert not _ignored_signals(proc.pid) & (1 << (signal.SIGINT - 1))
    finally:
        report = await proc.stop(grace_int_s=5, grace_term_s=5)
    assert report.signals == ("SIGINT",)


async def test_stop_escalates_and_leaves_no_orphans(tmp_path):
    proc = _spawn(tmp_path, "ignore_term,worker")
    await wait_for(lambda: len(proc.members()) >= 2)
    pids = [p.pid for p in proc.members()]
    report = await proc.stop(grace_int_s=0.5, grace_term_s=0.5)
    assert report.signals == ("SIGINT", "SIGTERM", "SIGKILL")
    assert set(pids) <= set(report.pids)
    for pid in pids:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"


async def test_worker_that_left_the_group_is_killed(tmp_path):
    # A worker that called setsid() escapes killpg; the supervisor finds it as a descendant.
    code = (
        "import os,subprocess,sys,time\n"
        "subprocess.Popen([sys.executable,'-c','import os,time; os.setsid(); time.sleep(600)'])\n"
        "time.sleep(600)\n"
    )
    proc = ManagedProcess.spawn([sys.executable, "-c", code], dict(os.environ), tmp_path / "l")
    await wait_for(lambda: len(proc.members()) >= 2)
    escaped = [p.pid for p in proc.members() if p.pid != proc.pid]
    report = await proc.stop(grace_int_s=1, grace_term_s=1)
    for pid in escaped:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"
    assert report.pids


def test_missing_binary_is_a_clear_error(tmp_path):
    with pytest.raises(LaunchError, match="not found"):
        ManagedProcess.spawn(["no-such-vllm-binary", "serve"], dict(os.environ), tmp_path / "l")


async def test_adopt_finds_a_live_process_and_refuses_a_dead_one(tmp_path):
    proc = _spawn(tmp_path)
    try:
        adopted = ManagedProcess.adopt(proc.pid, proc.pgid, proc.create_time)
        assert adopted is not None and adopted.alive()
        assert ManagedProcess.adopt(proc.pid, proc.pgid, (proc.create_time or 0) - 99) is None
    finally:
        await proc.stop(grace_int_s=5, grace_term_s=5)
