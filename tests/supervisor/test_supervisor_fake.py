"""The supervisor against the fake vLLM (real captures replayed): states, stop, restart,
rollback, and the faults it must survive while saying what happened."""

from __future__ import annotations

import os

import psutil
import pytest
from sup_support import FAKE_TEMPLATE, free_port, wait_for

from headroom.supervisor import ServerState, Supervisor, SupervisorSettings
from headroom.supervisor.statefile import read_state
from headroom.vllm_cmd import parse_command


def make_supervisor(tmp_path, *flags: str, mode: str = "", max_len: int = 100000, **kw):
    port = free_port()
    command = parse_command(["vllm", "serve", "tiny", "--port", str(port), *flags])
    events = []
    env = {"FAKE_VLLM_MODE": mode, "FAKE_VLLM_MAX_LEN": str(max_len)}
    settings = SupervisorSettings(
        launcher=FAKE_TEMPLATE,
        data_dir=tmp_path / "data",
        poll_interval_s=0.1,
        grace_int_s=3,
        grace_term_s=2,
        crash_backoff_s=0.2,
        **kw,
    )
    sup = Supervisor(command, settings, env=env, on_event=events.append, nvml_probe=False)
    return sup, events


def no_process_left(pids) -> bool:
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                return False
        except psutil.Error:
            continue
    return True


@pytest.fixture
async def cleanup():
    sups = []
    yield sups.append
    for sup in sups:
        if sup.process is not None and sup.process.alive():
            await sup.stop()
        await sup.close()


async def test_start_ready_stop_journal_and_state_file(tmp_path, cleanup):
    sup, events = make_supervisor(tmp_path, "--max-model-len", "1024")
    cleanup(sup)
    await sup.start()
    assert sup.state == ServerState.STARTING
    state = read_state(sup.port)
    assert state is not None and state.pid == sup.pid
    assert await sup.wait_ready(timeout_s=30)
    assert sup.state == ServerState.READY
    assert sup.time_to_ready_s is not None and sup.time_to_ready_s > 0
    assert any("Starting vLLM server" in line for line in sup.log_lines)
    pid = sup.pid
    await sup.stop()
    assert sup.state == ServerState.STOPPED
    assert no_process_left([pid])
    assert read_state(sup.port) is None
    (record,) = sup.journal.records()
    assert record.outcome == "stopped"
    assert record.time_to_ready_s == pytest.approx(sup.time_to_ready_s, abs=0.01)
    assert record.command[-4:] == ["--port", str(sup.port), "--max-model-len", "1024"]
    assert record.env.get("FAKE_VLLM_MODE") is None  # only the env that matters is journaled
    kinds = [(e.kind, e.fields.get("new")) for e in events if e.kind == "state"]
    assert kinds == [
        ("state", "starting"),
        ("state", "ready"),
        ("state", "stopping"),
        ("state", "stopped"),
    ]


async def test_startup_failure_is_failed_and_journaled(tmp_path, cleanup):
    sup, events = make_supervisor(tmp_path, "--max-model-len", "2048", max_len=768)
    cleanup(sup)
    await sup.start()
    assert not await sup.wait_ready(timeout_s=30)
    assert sup.state == ServerState.FAILED
    assert sup.failure_reason
    assert sup.log_path.exists()
    (record,) = sup.journal.records()
    assert record.outcome == "failed"
    assert record.reason


async def test_restart_with_a_fix_reaches_ready(tmp_path, cleanup):
    sup, events = make_supervisor(tmp_path, "--max-model-len", "2048", max_len=768)
    cleanup(sup)
    await sup.start()
    assert not await sup.wait_ready(timeout_s=30)
    outcome = await sup.restart({"max_model_len": 768}, reason="auto-fix")
    assert outcome.ok, outcome.reason
    assert [str(d) for d in outcome.diff] == ["~ max_model_len 2048 -> 768"]
    assert sup.state == ServerState.READY
    assert sup.command.get("max_model_len") == 768
    records = sup.journal.records()
    assert [r.outcome for r in records] == ["failed", "ready"]
    assert records[1].parent_run_id == records[0].run_id
    assert records[1].changes == {"max_model_len": 768}
    assert records[1].trigger == "auto-fix"


async def test_failed_restart_rolls_back_to_last_good(tmp_path, cleanup):
    sup, events = make_supervisor(tmp_path, "--max-model-len", "512", max_len=768)
    cleanup(sup)
    await sup.start()
    assert await sup.wait_ready(timeout_s=30)
    first_pid = sup.pid
    outcome = await sup.restart({"tensor_parallel_size": 3})
    assert not outcome.ok
    assert outcome.rolled_back and outcome.rollback_ok
    assert outcome.failed_log_path is not None and outcome.failed_log_path.exists()
    assert "divisible" in outcome.failed_log_path.read_text()
    assert sup.state == ServerState.READY
    assert sup.command.get("tensor_parallel_size") is None
    assert no_process_left([first_pid])
    assert any(e.kind == "rollback" for e in events)
    outcomes = [r.outcome for r in sup.journal.records()]
    assert outcomes == ["restarted", "rolled_back", "ready"]


async def test_env_changes_show_in_the_diff(tmp_path, cleanup):
    sup, _ = make_supervisor(tmp_path)
    cleanup(sup)
    preview = sup.preview({"NCCL_P2P_DISABLE": "1", "max_num_seqs": 64})
    env, diff = preview.env, preview.diff
    assert env["NCCL_P2P_DISABLE"] == "1"
    assert sorted(str(d) for d in diff) == ["+ env NCCL_P2P_DISABLE 1", "+ max_num_seqs 64"]


async def test_hanging_startup_times_out_and_is_stopped(tmp_path, cleanup):
    sup, events = make_supervisor(tmp_path, mode="hang", ready_timeout_s=1.5)
    cleanup(sup)
    await sup.start()
    pid = sup.pid
    assert not await sup.wait_ready(timeout_s=30)
    assert sup.state == ServerState.FAILED
    assert "not ready after" in sup.failure_reason
    assert no_process_left([pid])


async def test_crash_after_ready_exit_0_backs_off_and_restarts(tmp_path, cleanup):
    sup, events = make_supervisor(tmp_path, mode="exit0_after=0.5", max_crash_restarts=1)
    cleanup(sup)
    await sup.start()
    assert await sup.wait_ready(timeout_s=30)
    await wait_for(lambda: any(e.kind == "crash_backoff" for e in events), 30)
    # The restart comes up, crashes again, and the supervisor gives up saying so.
    await wait_for(lambda: any("not restarting again" in e.message for e in events), 60)
    assert sup.state == ServerState.FAILED
    outcomes = [r.outcome for r in sup.journal.records()]
    assert outcomes == ["crashed", "crashed"]


async def test_engine_death_with_api_alive_is_noticed(tmp_path, cleanup):
    sup, events = make_supervisor(tmp_path, mode="engine_dead_after=0.3", max_crash_restarts=0)
    cleanup(sup)
    await sup.start()
    assert await sup.wait_ready(timeout_s=30)
    pid = sup.pid
    # /health 500 alone makes it degraded; the log's engine-death lines make it a crash.
    await wait_for(lambda: sup.state == ServerState.DEGRADED, 30)
    pytest.importorskip("headroom.probes.vllm_log")
    await wait_for(lambda: sup.state == ServerState.FAILED, 30)
    assert no_process_left([pid])
    assert sup.journal.records()[0].outcome == "crashed"


async def test_metrics_500_does_not_disturb_supervision(tmp_path, cleanup):
    sup, events = make_supervisor(tmp_path, mode="metrics500", metrics_interval_s=0.1)
    cleanup(sup)
    await sup.start()
    assert await sup.wait_ready(timeout_s=30)
    await wait_for(lambda: any(e.message.startswith("/metrics ") for e in events), 10)
    assert sup.state == ServerState.READY
    notices = [e.message for e in events if e.message.startswith("/metrics ")]
    assert len(notices) == 1 and "500" in notices[0], notices  # said once, with the cause


async def test_log_flood_is_read_in_bounded_steps(tmp_path, cleanup):
    sup, events = make_supervisor(tmp_path, mode="flood=40")
    cleanup(sup)
    await sup.start()
    assert await sup.wait_ready(timeout_s=60)
    await wait_for(lambda: sup.run.tail.backlog() == 0, 60)
    assert sup.state == ServerState.READY
    assert len(sup.log_lines) == sup.log_lines.maxlen


async def test_preflight_refuses_a_busy_port(tmp_path, cleanup):
    import socket

    from headroom.supervisor import PreflightError

    sup, events = make_supervisor(tmp_path)
    cleanup(sup)
    with socket.socket() as busy:
        busy.bind(("0.0.0.0", sup.port))
        busy.listen()
        with pytest.raises(PreflightError, match="already in use"):
            await sup.start()
    assert sup.state == ServerState.FAILED
    assert any(e.kind == "preflight" for e in events)
    assert sup.process is None


async def test_detach_leaves_the_server_running_and_adopt_finds_it(tmp_path, cleanup):
    sup, _ = make_supervisor(tmp_path)
    cleanup(sup)
    await sup.start()
    assert await sup.wait_ready(timeout_s=30)
    await sup.detach()
    assert sup.process.alive()
    from headroom.supervisor.adopt import adopt

    record = read_state(sup.port)
    settings = SupervisorSettings(data_dir=tmp_path / "data", poll_interval_s=0.1)
    again = adopt(record, settings, nvml_probe=False)
    cleanup(again)
    await again.watch()
    assert await again.wait_ready(timeout_s=30)
    assert again.pid == sup.pid
    await again.stop()
    assert not sup.process.alive()
    assert read_state(sup.port) is None
    assert os.path.exists(record.log_path)


async def test_secrets_never_reach_the_journal_state_file_or_events(tmp_path, cleanup):
    sup, events = make_supervisor(tmp_path, "--api-key", "sekrit-123")
    sup.env["HF_TOKEN"] = "hf_topsecret"
    sup.env["VLLM_API_KEY"] = "also-secret"
    cleanup(sup)
    await sup.start()
    assert await sup.wait_ready(timeout_s=30)
    state_text = (tmp_path / "data" / "state" / f"server-{sup.port}.json").read_text()
    await sup.stop()
    journal_text = sup.journal.path.read_text()
    event_text = " ".join(f"{e.message} {e.fields}" for e in events)
    for secret in ("sekrit-123", "hf_topsecret", "also-secret"):
        assert secret not in journal_text
        assert secret not in state_text
        assert secret not in event_text
    assert "HF_TOKEN" in journal_text  # the variable is journaled, its value is not


async def test_a_server_headroom_did_not_start_can_be_taken_over_and_restarted(tmp_path, cleanup):
    import subprocess
    import sys

    from sup_support import FAKE_VLLM

    from headroom.supervisor.adopt import AdoptError, adopt_unmanaged, listener_pid

    port = free_port()
    outsider = subprocess.Popen(
        [sys.executable, str(FAKE_VLLM), "tiny", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        command = parse_command(["vllm", "serve", "tiny", "--port", str(port)])
        await wait_for(lambda: listener_pid(port) is not None, 20)
        settings = SupervisorSettings(
            launcher=FAKE_TEMPLATE,
            data_dir=tmp_path / "data",
            poll_interval_s=0.1,
            grace_int_s=3,
            grace_term_s=2,
        )
        sup = adopt_unmanaged(command, settings, nvml_probe=False)
        cleanup(sup)
        await sup.start()  # watches, does not launch
        assert await sup.wait_ready(timeout_s=20)
        assert sup.pid == outsider.pid
        outcome = await sup.restart({"max_model_len": 512})
        assert outcome.ok, outcome.reason
        assert sup.pid != outsider.pid
        assert outsider.wait(timeout=10) is not None  # the old one was stopped
        with pytest.raises(AdoptError, match="no process"):
            adopt_unmanaged(
                parse_command(["vllm", "serve", "m", "--port", str(free_port())]),
                SupervisorSettings(launcher=FAKE_TEMPLATE, data_dir=tmp_path / "data"),
            )
    finally:
        if outsider.poll() is None:
            outsider.kill()
            outsider.wait()


def test_ready_timeout_is_ten_minutes_or_twice_the_last_good_start(tmp_path):
    from headroom.supervisor.journal import RunRecord

    sup, _ = make_supervisor(tmp_path)
    assert sup.ready_timeout() == 600.0
    sup, _ = make_supervisor(tmp_path)
    sup.journal.append(RunRecord(model="other", time_to_ready_s=900.0))
    sup.journal.append(RunRecord(model="tiny", time_to_ready_s=420.0))
    assert sup.ready_timeout() == 840.0
    sup.last_good_start_s = 100.0  # (the worked-out timeout is forgotten with it)
    assert sup.ready_timeout() == 600.0


async def test_an_unset_that_fails_rolls_back_to_the_flag(tmp_path, cleanup):
    """A removed flag comes back with the rollback like any other change: the doctor's
    "unset enforce_eager" (REMOVE) with a TP the fake refuses, then the last good line."""
    from headroom.vllm_cmd import REMOVE

    sup, events = make_supervisor(tmp_path, "--enforce-eager", "--max-model-len", "512")
    cleanup(sup)
    await sup.start()
    assert await sup.wait_ready(timeout_s=30)
    outcome = await sup.restart({"enforce_eager": REMOVE, "tensor_parallel_size": 3})
    assert [str(d) for d in outcome.diff][0] == "- enforce_eager (on)"
    assert not outcome.ok
    assert outcome.rolled_back and outcome.rollback_ok
    assert sup.state == ServerState.READY
    assert sup.command.get("enforce_eager") is True
    assert sup.journal.records()[1].changes == {"enforce_eager": None, "tensor_parallel_size": 3}
