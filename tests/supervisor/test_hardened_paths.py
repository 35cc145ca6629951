"""Issue 14's supervisor faults, each against the fake vLLM:
- item 6: a launch is journaled and its state file written before anything reads the model
  (old: the model's shape was read first, in the event loop; a value the journal could not
  write raised out of start() and left a running server with no state file, an orphan);
- item 7: after a crash, what the server started is stopped too (old: a dead leader meant
  nothing was stopped, and a worker lived on with parent 1);
- item 2 (supervisor side): a log line alone never stops a serving server (old: an engine
  death phrase in the log, which a client's prompt can put there, killed a healthy server).
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from pathlib import Path

import psutil
import pytest
from sup_support import FAKE_TEMPLATE, free_port, wait_for

from headroom.probes import model as model_probe
from headroom.supervisor import ServerState, Supervisor, SupervisorSettings, run_stats
from headroom.supervisor.statefile import read_state
from headroom.vllm_cmd import parse_command


def make(tmp_path, mode: str = "", *flags: str, max_len: int = 100000, **kw):
    port = free_port()
    command = parse_command(["vllm", "serve", "tiny", "--port", str(port), *flags])
    env = {
        "FAKE_VLLM_MODE": mode,
        "FAKE_VLLM_MAX_LEN": str(max_len),
        "FAKE_VLLM_WORKER_PID_FILE": str(tmp_path / "worker.pid"),
    }
    settings = SupervisorSettings(
        **{
            "launcher": FAKE_TEMPLATE,
            "data_dir": tmp_path / "data",
            "poll_interval_s": 0.1,
            "grace_int_s": 1,
            "grace_term_s": 1,
            "crash_backoff_s": 0.2,
            "max_crash_restarts": 0,
            **kw,
        }
    )
    events: list = []
    sup = Supervisor(command, settings, env=env, on_event=events.append, nvml_probe=False)
    return sup, events


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        return True


def worker_pid(tmp_path: Path) -> int:
    path = tmp_path / "worker.pid"
    deadline = time.monotonic() + 10
    while not path.exists() or not path.read_text().strip():
        assert time.monotonic() < deadline, "the fake never started its worker"
        time.sleep(0.05)
    return int(path.read_text())


@pytest.fixture
async def cleanup():
    sups: list[Supervisor] = []
    yield sups.append
    for sup in sups:
        if sup.process is not None and sup.process.anything_left():
            await sup.stop()
        await sup.close()


# -- item 7: no orphan after any crash or stop path ---------------------------------------
@pytest.mark.parametrize(
    ("mode", "max_len"),
    [
        ("worker,vanish_after=0.3", 100000),  # the leader died while serving, silently
        ("worker,engine_dead_after=0.3", 100000),  # engine dead, API alive: stopped by Headroom
        ("worker", 10),  # start-up failure: the leader exits 1
    ],
    ids=["leader-died", "engine-dead", "startup-failure"],
)
async def test_a_crash_leaves_no_orphan(tmp_path, cleanup, mode, max_len):
    sup, events = make(tmp_path, mode, "--max-model-len", "1024", max_len=max_len)
    cleanup(sup)
    await sup.start()
    worker = worker_pid(tmp_path)
    leader = sup.pid
    await wait_for(lambda: sup.state == ServerState.FAILED, 30)
    await wait_for(lambda: gone(worker), 10)  # the worker ignores SIGINT/SIGTERM: SIGKILL'd
    assert gone(leader)


async def test_a_stop_after_a_crash_stops_what_is_left(tmp_path, cleanup):
    # A crash restart is pending (long back-off) when the user stops: nothing may remain.
    sup, events = make(tmp_path, "worker,vanish_after=0.3", max_crash_restarts=1,
                       crash_backoff_s=30)  # fmt: skip
    cleanup(sup)
    await sup.start()
    worker = worker_pid(tmp_path)
    await wait_for(lambda: sup.restart_pending, 30)
    await sup.stop()
    assert not sup.restart_pending
    await wait_for(lambda: gone(worker), 10)
    assert read_state(sup.port, None) is None


# -- item 2: a log line alone is evidence, never the trigger ------------------------------
async def test_an_engine_death_phrase_in_the_log_alone_does_not_stop_a_healthy_server(
    tmp_path, cleanup
):
    sup, events = make(tmp_path, "forged_dead_after=0.2", max_crash_restarts=3)
    cleanup(sup)
    await sup.start()
    assert await sup.wait_ready(timeout_s=30)
    pid = sup.pid
    await wait_for(lambda: any("EngineCore" in line for line in sup.log_lines), 10)
    await asyncio.sleep(1.5)  # fifteen more looks by the watcher
    assert sup.state == ServerState.READY and sup.pid == pid and sup.process.alive()
    assert not [e for e in events if e.kind in ("failure", "crash_backoff")]
    assert [r.outcome for r in sup.journal.records()] == ["ready"]


async def test_the_same_lines_with_health_failing_are_a_death(tmp_path, cleanup):
    sup, events = make(tmp_path, "engine_dead_after=0.2")
    cleanup(sup)
    await sup.start()
    assert await sup.wait_ready(timeout_s=30)
    await wait_for(lambda: sup.state == ServerState.FAILED, 30)
    failure = next(e for e in events if e.kind == "failure")
    assert "engine died" in failure.message and failure.fields.get("event")  # the evidence
    assert sup.journal.records()[0].outcome == "crashed"


# -- item 6: journal and state file before anything reads the model -----------------------
@dataclasses.dataclass(frozen=True)
class CraftedShape:
    """What a crafted safetensors header could make the model reader report."""

    name: str = "crafted"
    param_count: int = 10**5000  # more digits than json (Python) will write


async def test_a_model_the_journal_cannot_write_leaves_no_orphan(tmp_path, cleanup, monkeypatch):
    crafted = CraftedShape()
    for module in (run_stats, model_probe):
        monkeypatch.setattr(module, "load_model_shape", lambda *a, **k: crafted, raising=False)
    sup, events = make(tmp_path)
    cleanup(sup)
    await sup.start()  # old: ValueError (integer string too long) out of start()
    record = read_state(sup.port)
    assert record is not None and record.pid == sup.pid  # re-adoptable
    assert sup.journal.records()[0].run_id == sup.run_id
    assert await sup.wait_ready(timeout_s=30)
    await wait_for(lambda: any("journal" in e.message for e in events if e.kind == "notice"), 10)


async def test_a_slow_model_reader_does_not_hold_up_the_state_file(tmp_path, cleanup, monkeypatch):
    release = threading.Event()

    def crawl(*args, **kwargs):  # a 6 MB header once took 252 s
        release.wait(20)
        raise ValueError("gave up")

    for module in (run_stats, model_probe):
        monkeypatch.setattr(module, "load_model_shape", crawl, raising=False)
    sup, events = make(tmp_path)
    cleanup(sup)
    try:
        started = time.monotonic()
        await sup.start()
        assert time.monotonic() - started < 5  # old: blocked the event loop in start()
        assert read_state(sup.port) is not None
        assert await sup.wait_ready(timeout_s=30)  # watched while the reader still crawls
    finally:
        release.set()
