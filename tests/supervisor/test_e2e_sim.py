"""End to end against the simulator (`python -m headroom.simulator serve`): the supervisor, the
log reader, the doctor and cmdline together, with HEADROOM_SIM_TIME_SCALE keeping it fast.

1. max_model_len that does not fit -> failure classified -> plan lowers max_model_len to
   vLLM's estimate -> restart -> ready.
2. KV pressure under load -> plan raises the KV budget or lowers max_num_seqs -> restart ->
   preemptions fall under the same load.
3. a plan that cannot start (TP not dividing the heads) -> rollback to the last good.
4. the server SIGKILLed while serving -> the supervisor says so and restarts it (bounded).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys

import psutil
import pytest
from sup_support import free_port, wait_for

from headroom.doctor import DoctorInputs, diagnose
from headroom.supervisor import ServerState, Supervisor, SupervisorSettings
from headroom.vllm_cmd import parse_command

pytestmark = pytest.mark.slow
LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"


def sim_supervisor(tmp_path, scenario: str, model: str, *flags: str, scale: float = 50, **kw):
    command = parse_command(["vllm", "serve", model, "--port", str(free_port()), *flags])
    events: list = []
    env = {"HEADROOM_SIM_SCENARIO": scenario, "HEADROOM_SIM_TIME_SCALE": str(scale)}
    settings = SupervisorSettings(
        launcher="sim",
        data_dir=tmp_path / "data",
        poll_interval_s=0.1,
        grace_int_s=5,
        grace_term_s=3,
        **kw,
    )
    sup = Supervisor(command, settings, env=env, on_event=events.append, nvml_probe=False)
    return sup, events


@pytest.fixture
async def stop_after():
    sups: list[Supervisor] = []
    yield sups.append
    for sup in sups:
        pids = set()
        if sup.process is not None:
            pids = set(sup.process.seen_pids) | {sup.process.pid}
            if sup.process.alive():
                await sup.stop()
        await sup.close()
        for pid in pids:  # no process outlives a test
            try:
                assert psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
            except psutil.NoSuchProcess:
                pass


def _action(diagnosis, finding_id: str, knob: str):
    finding = next(f for f in diagnosis.findings if f.id == finding_id)
    return next(a for a in finding.actions if a.knob == knob)


async def test_max_model_len_that_does_not_fit_is_lowered_to_the_estimate(tmp_path, stop_after):
    sup, events = sim_supervisor(tmp_path, "kv-story", LLAMA_8B, "--max-num-seqs", "64")
    stop_after(sup)
    await sup.start()
    assert not await sup.wait_ready(timeout_s=60)
    assert sup.state == ServerState.FAILED
    assert sup.failure_kind == "max_seq_len_exceeds_kv"
    estimate = int(re.search(r"estimated maximum model length is (\d+)", sup.failure_reason)[1])
    action = _action(sup.diagnosis, "max-seq-len-exceeds-kv", "max_model_len")
    assert (action.direction, action.value) == ("lower", estimate)
    from headroom.doctor import plan_to_changes

    outcome = await sup.restart(plan_to_changes(action), reason="plan")
    assert outcome.ok, outcome.reason
    assert [str(d) for d in outcome.diff] == [f"+ max_model_len {estimate}"]
    assert sup.state == ServerState.READY
    records = sup.journal.records()
    assert [r.outcome for r in records] == ["failed", "ready"]
    assert records[0].findings[0]["id"] == "max-seq-len-exceeds-kv"
    assert records[1].kv_cache_tokens and records[1].kv_cache_tokens >= estimate


async def _load(url: str, requests: int = 64) -> None:
    """The simulator's own closed-loop load, as a subprocess, bounded by a request count."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "headroom.simulator",
        "load",
        url,
        "--model",
        LLAMA_8B,
        "--concurrency",
        "48",
        "--requests",
        str(requests),
        "--prompt-tokens",
        "1500:5000",
        "--max-tokens",
        "400:1200",
        "--ignore-eos",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        await asyncio.wait_for(proc.wait(), 120)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def _preemptions(sup: Supervisor) -> float:
    from headroom.probes.metrics import MetricsProbe

    m = await MetricsProbe(sup.url).scrape()
    assert m.state == "up", m.message
    return m.total.preemptions_total or 0.0


async def test_kv_pressure_plan_makes_preemptions_fall(tmp_path, stop_after):
    sup, events = sim_supervisor(
        tmp_path,
        "kv-story",
        LLAMA_8B,
        "--max-num-seqs",
        "64",
        "--max-model-len",
        "16384",
        metrics_interval_s=0.5,
    )
    stop_after(sup)
    await sup.start()
    assert await sup.wait_ready(timeout_s=60), sup.failure_reason
    load = asyncio.create_task(_load(sup.url))
    finding = None
    while not load.done() and finding is None:  # the doctor watches while the load runs
        await asyncio.sleep(0.5)
        diagnosis = diagnose(
            DoctorInputs(command=sup.command, log=sup.digest, metrics_history=sup.stats.history)
        )
        finding = next((f for f in diagnosis.findings if f.id == "kv-full-preemptions"), None)
    await load
    before = await _preemptions(sup)
    assert before > 0, "the load did not put the KV cache under pressure"
    assert finding is not None, "the doctor did not see the KV pressure"
    actions = [
        a
        for a in finding.actions
        if a.value is not None
        and (a.knob, a.direction)
        in {("gpu_memory_utilization", "raise"), ("max_num_seqs", "lower")}
    ]
    assert actions, finding.actions
    # Of the two, fewer sequences is the change whose effect outgrows the load's noise here
    # (0.90 -> 0.95 of a 24 GB card adds only a sliver of KV cache).
    actions.sort(key=lambda a: a.knob != "max_num_seqs")
    from headroom.doctor import plan_to_changes

    outcome = await sup.restart(plan_to_changes(actions[0]), reason="plan")
    assert outcome.ok, outcome.reason
    await _load(sup.url)
    await asyncio.sleep(1.0)
    after = await _preemptions(sup)
    print(f"preemptions {before} -> {after} after {actions[0].knob}={actions[0].value}")
    assert after < before, (actions[0], before, after)
    # The first run's journal record carries what was measured while it served.
    first = sup.journal.records()[0]
    assert first.outcome == "restarted"
    assert first.summary["throughput_tok_s"] and first.summary["throughput_tok_s"] > 0
    assert first.summary["ttft_p95_s"] is not None
    assert first.summary["peak_kv_usage"] and first.summary["peak_kv_usage"] > 0.9
    assert any(f["id"] == "kv-full-preemptions" for f in first.findings), first.findings


async def test_plan_that_cannot_start_rolls_back_to_the_last_good(tmp_path, stop_after):
    sup, events = sim_supervisor(
        tmp_path,
        "heads-tp8",
        "headroom-sim/Wide-52H",
        "--tensor-parallel-size",
        "4",
        "--max-model-len",
        "8192",
    )
    stop_after(sup)
    await sup.start()
    assert await sup.wait_ready(timeout_s=60), sup.failure_reason
    outcome = await sup.restart({"tensor_parallel_size": 8})
    assert not outcome.ok
    assert outcome.rolled_back and outcome.rollback_ok
    assert "divisible" in outcome.reason
    assert outcome.failed_log_path.exists()
    assert sup.state == ServerState.READY
    assert sup.command.get("tensor_parallel_size") == 4
    assert [r.outcome for r in sup.journal.records()] == ["restarted", "rolled_back", "ready"]
    rollback = next(e for e in events if e.kind == "rollback")
    assert str(outcome.failed_log_path) in rollback.message


async def test_server_killed_with_sigkill_is_reported_and_restarted(tmp_path, stop_after):
    sup, events = sim_supervisor(
        tmp_path,
        "kv-story",
        LLAMA_8B,
        "--max-model-len",
        "16384",
        crash_backoff_s=0.2,
        max_crash_restarts=1,
    )
    stop_after(sup)
    await sup.start()
    assert await sup.wait_ready(timeout_s=60)
    first = sup.pid
    os.killpg(first, signal.SIGKILL)
    await wait_for(lambda: any(e.kind == "crash_backoff" for e in events), 30)
    await wait_for(lambda: sup.state == ServerState.READY and sup.pid != first, 60)
    crash = next(e for e in events if e.kind == "crash_backoff")
    assert "-9" in crash.message or "SIGKILL" in crash.message or "exited" in crash.message
    assert [r.outcome for r in sup.journal.records()] == ["crashed", "ready"]


async def test_simulated_gpus_are_journaled_and_memory_release_is_awaited(
    tmp_path, stop_after, monkeypatch
):
    # The simulator's NVML stand-in plays the GPUs: another process holds 20 GiB of the H100,
    # vLLM refuses 0.92 of it, the doctor's fix (0.7) starts, and stop waits for the memory.
    state = tmp_path / "sim-state.json"
    monkeypatch.setenv("HEADROOM_NVML_STANDIN", str(state))
    command = parse_command(
        ["vllm", "serve", "Qwen/Qwen2.5-7B-Instruct", "--port", str(free_port())]
    )
    events: list = []
    sup = Supervisor(
        command,
        SupervisorSettings(
            launcher="sim", data_dir=tmp_path / "data", poll_interval_s=0.1, memory_timeout_s=20
        ),
        env={
            "HEADROOM_SIM_SCENARIO": "busy-gpu",
            "HEADROOM_SIM_TIME_SCALE": "50",
            "HEADROOM_SIM_STATE": str(state),
        },
        on_event=events.append,
    )
    stop_after(sup)
    await sup.start()
    assert not await sup.wait_ready(timeout_s=60)
    assert sup.failure_kind == "free_memory_below_utilization"
    outcome = await sup.restart({"gpu_memory_utilization": 0.7})
    assert outcome.ok, outcome.reason
    await sup.stop()
    memory = [e for e in events if e.kind == "memory" and "released" in e.fields]
    assert memory and all(e.fields["released"] for e in memory), [e.message for e in memory]
    record = sup.journal.records()[-1]
    assert record.gpus and record.gpus[0]["name"] == "NVIDIA H100 80GB HBM3"
