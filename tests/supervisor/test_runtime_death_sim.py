"""The supervisor against an engine that dies at run time, played by the simulator
(HEADROOM_SIM_DIE_AFTER_REQUESTS) rather than a fake: vLLM's log lines, /health 503,
500s, and either an exit with status 0 (vLLM's default) or a server kept alive
(VLLM_KEEP_ALIVE_ON_ENGINE_DEATH=1). Both must end on the dead path: the run journaled as
crashed and a bounded restart, never "ready" on a dead engine.

Old: the simulator could not die at run time; the exit with status 0 after an engine death
is the case a clean-exit reading would miss.
"""

from __future__ import annotations

import httpx
import pytest
from sup_support import free_port, wait_for

from headroom.supervisor import ServerState, Supervisor, SupervisorSettings
from headroom.vllm_cmd import parse_command

pytestmark = pytest.mark.slow


def _supervisor(tmp_path, **env_extra: str):
    command = parse_command(
        ["vllm", "serve", "/models/tiny-llama", "--port", str(free_port()), "--max-model-len",
         "1024", "--served-model-name", "tiny", "--kv-cache-memory-bytes", "4000000"]
    )  # fmt: skip
    events: list = []
    env = {"HEADROOM_SIM_SCENARIO": "tiny-cpu", "HEADROOM_SIM_TIME_SCALE": "50",
           "HEADROOM_SIM_DIE_AFTER_REQUESTS": "1", **env_extra}  # fmt: skip
    settings = SupervisorSettings(
        launcher="sim",
        data_dir=tmp_path / "data",
        poll_interval_s=0.1,
        grace_int_s=3,
        grace_term_s=3,
        crash_backoff_s=0.2,
        max_crash_restarts=1,
    )
    sup = Supervisor(command, settings, env=env, on_event=events.append, nvml_probe=False)
    return sup, events


async def _kill_engine(sup: Supervisor) -> int:
    async with httpx.AsyncClient() as client:
        answer = await client.post(
            sup.url + "/v1/completions",
            json={"model": "tiny", "prompt": "hi", "max_tokens": 2},
            timeout=10,
        )
    return answer.status_code


async def _run(tmp_path, **env_extra: str):
    sup, events = _supervisor(tmp_path, **env_extra)
    try:
        await sup.start()
        assert await sup.wait_ready(timeout_s=60)
        first = sup.pid
        assert await _kill_engine(sup) == 500  # the request that killed it
        await wait_for(lambda: any(e.kind == "crash_backoff" for e in events), 30)
        await wait_for(lambda: sup.state == ServerState.READY and sup.pid != first, 60)
        return sup, events
    finally:
        if sup.process is not None and sup.process.anything_left():
            await sup.stop()
        await sup.close()


async def test_engine_death_then_exit_status_0_is_a_crash(tmp_path) -> None:
    sup, events = await _run(tmp_path, HEADROOM_SIM_DEATH_EXIT_S="0.5")
    outcomes = [r.outcome for r in sup.journal.records()]
    assert outcomes[0] == "crashed" and outcomes[-1] in ("ready", "stopped")
    crash = next(e for e in events if e.kind == "crash_backoff")
    assert "engine" in crash.message.lower() or "exited" in crash.message


async def test_engine_death_with_the_server_kept_alive_is_a_crash(tmp_path) -> None:
    # The process and port stay; only /health (503) and the log say the engine is gone.
    sup, events = await _run(tmp_path, VLLM_KEEP_ALIVE_ON_ENGINE_DEATH="1")
    states = [e.fields.get("new") for e in events if e.kind == "state"]
    assert "degraded" in states  # the dead engine was never taken for a ready one
    assert [r.outcome for r in sup.journal.records()][0] == "crashed"


async def test_a_death_the_log_does_not_show_is_found_by_the_exit(tmp_path) -> None:
    # No engine lines at all: only the process exit (status 0) tells the engine is gone.
    sup, events = await _run(tmp_path, HEADROOM_SIM_DEATH_EXIT_S="0.5", HEADROOM_SIM_DEATH_LOG="0")
    assert "EngineCore encountered" not in (sup.journal.records()[0].reason or "")
    assert [r.outcome for r in sup.journal.records()][0] == "crashed"
    crash = next(e for e in events if e.kind == "crash_backoff")
    assert "exited" in crash.message and "status 0" in crash.message


async def test_a_kept_alive_death_the_log_does_not_show_is_found_by_health(tmp_path) -> None:
    sup, events = _supervisor(
        tmp_path, VLLM_KEEP_ALIVE_ON_ENGINE_DEATH="1", HEADROOM_SIM_DEATH_LOG="0"
    )
    try:
        await sup.start()
        assert await sup.wait_ready(timeout_s=60)
        assert await _kill_engine(sup) == 500
        await wait_for(lambda: any(e.kind == "crash_backoff" for e in events), 20)
    finally:
        if sup.process is not None and sup.process.anything_left():
            await sup.stop()
        await sup.close()
    assert [r.outcome for r in sup.journal.records()][0] == "crashed"
