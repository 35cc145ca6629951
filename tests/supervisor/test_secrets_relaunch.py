"""Secrets across re-adoption and in every file Headroom writes (issue 14, items 1 and 5).

Old: the state file kept only the redacted command line, so a server re-adopted after a
drop and then crashed was relaunched with the literal `--api-key ***` (the real key stopped
working, `Bearer ***` was let in); the per-run log kept vLLM's `non-default args:
{'api_key': [...]}` in clear, 0644 in 0755 folders.
"""

from __future__ import annotations

import os
import signal
import stat
from pathlib import Path

import httpx
import psutil
import pytest
from sup_support import FAKE_TEMPLATE, free_port, wait_for

from headroom.supervisor import ServerState, Supervisor, SupervisorSettings
from headroom.supervisor.adopt import adopt, find_adoptable
from headroom.supervisor.secret_store import secrets_path
from headroom.supervisor.statefile import state_path
from headroom.vllm_cmd import parse_command

KEY = "sk-headroom-test-4f1c9a77"
HF = "hf_headroomtestsecret"
SIM_ENV = {"HEADROOM_SIM_SCENARIO": "tiny-cpu", "HEADROOM_SIM_TIME_SCALE": "50"}


def sim_command(port: int, *extra: str):
    return parse_command(
        ["vllm", "serve", "/models/tiny-llama", "--port", str(port), "--max-model-len", "1024",
         "--served-model-name", "tiny", "--kv-cache-memory-bytes", "4000000", *extra]
    )  # fmt: skip


def settings_for(tmp_path, **kw) -> SupervisorSettings:
    base = dict(
        launcher="sim",
        data_dir=tmp_path / "data",
        state_dir=tmp_path / "state",
        poll_interval_s=0.1,
        grace_int_s=3,
        grace_term_s=3,
        crash_backoff_s=0.2,
        max_crash_restarts=1,
    )
    return SupervisorSettings(**{**base, **kw})


async def _stop(*sups: Supervisor) -> None:
    for sup in sups:
        if sup.process is not None and sup.process.anything_left():
            await sup.stop()
        await sup.close()


async def _status(url: str, key: str) -> int:
    async with httpx.AsyncClient(trust_env=False) as client:
        answer = await client.get(url + "/v1/models", headers={"Authorization": f"Bearer {key}"})
    return answer.status_code


@pytest.mark.slow
async def test_relaunch_after_readopt_uses_the_real_key(tmp_path):
    port = free_port()
    settings = settings_for(tmp_path)
    first = Supervisor(sim_command(port, "--api-key", KEY), settings, env=SIM_ENV)
    again = None
    try:
        await first.start()
        assert await first.wait_ready(timeout_s=60), first.failure_reason
        await first.close()  # Headroom dropped: no watcher; server and state file stay
        assert KEY not in state_path(port, settings.state_dir).read_text()
        side = secrets_path(port, settings.state_dir)
        assert stat.S_IMODE(side.stat().st_mode) == 0o600

        record = find_adoptable(port, settings.state_dir)
        assert record is not None and "***" in record.flags
        again = adopt(record, settings)
        await again.watch()
        assert await again.wait_ready(timeout_s=30)
        crashed = again.pid
        os.kill(crashed, signal.SIGKILL)  # the server crashes under the re-adopted Headroom
        await wait_for(lambda: again.state == ServerState.READY and again.pid != crashed, 60)

        cmdline = psutil.Process(again.pid).cmdline()
        assert KEY in cmdline and "***" not in cmdline
        assert await _status(again.url, KEY) == 200  # the real key still works
        assert await _status(again.url, "***") == 401  # and the marker is no key
    finally:
        await _stop(*(s for s in (again, first) if s is not None))


async def test_a_relaunch_without_the_secret_is_refused_not_run_with_stars(tmp_path):
    port = free_port()
    settings = SupervisorSettings(
        launcher=FAKE_TEMPLATE,
        data_dir=tmp_path / "data",
        state_dir=tmp_path / "state",
        poll_interval_s=0.1,
        grace_int_s=2,
        grace_term_s=2,
    )
    command = parse_command(["vllm", "serve", "tiny", "--port", str(port), "--api-key", KEY])
    first = Supervisor(command, settings, nvml_probe=False)
    again = None
    try:
        await first.start()
        assert await first.wait_ready(timeout_s=30)
        await first.close()
        secrets_path(port, settings.state_dir).unlink()  # the side file is gone
        again = adopt(find_adoptable(port, settings.state_dir), settings, nvml_probe=False)
        await again.watch()
        assert await again.wait_ready(timeout_s=30)
        serving = again.pid
        outcome = await again.restart({"max_num_seqs": 8})
        assert not outcome.ok
        assert "cannot relaunch" in outcome.reason and "--api-key ***" in outcome.reason
        assert again.pid == serving and again.process.alive()  # refused before stopping it
        assert [r.outcome for r in again.journal.records()] == ["ready"]  # nothing launched
    finally:
        await _stop(*(s for s in (again, first) if s is not None))


def _files(*roots: Path) -> list[Path]:
    return [p for root in roots if root.exists() for p in root.rglob("*")]


@pytest.mark.slow
async def test_no_secret_in_any_file_headroom_writes_nor_in_what_it_shows(tmp_path):
    port = free_port()
    settings = settings_for(tmp_path, max_crash_restarts=0)
    events: list = []
    shown: list[str] = []
    env = {**SIM_ENV, "HF_TOKEN": HF}
    sup = Supervisor(sim_command(port, "--api-key", KEY), settings, env=env, on_event=events.append)
    sup.subscribe_log(shown.extend)  # what the TUI's Logs screen and digest are fed
    try:
        await sup.start()
        assert await sup.wait_ready(timeout_s=60), sup.failure_reason
        log = sup.log_path
        assert log is not None
        # vLLM printed the key in its non-default args; Headroom scrubbed it in place.
        await wait_for(lambda: KEY.encode() not in log.read_bytes(), 10)
        assert b"'api_key': ['" in log.read_bytes()
        restarted = await sup.restart({"max_num_seqs": 8})  # a second run, a second log
        assert restarted.ok, restarted.reason
        assert KEY in psutil.Process(sup.pid).cmdline()  # the server itself has its key
    finally:
        await _stop(sup)
    written = _files(tmp_path / "data", tmp_path / "state")
    assert any(p.suffix == ".log" for p in written) and any(p.name == "runs.jsonl" for p in written)
    for path in written:
        mode = stat.S_IMODE(path.stat().st_mode)
        if path.is_dir():
            assert mode == 0o700, (path, oct(mode))
            continue
        assert mode == 0o600, (path, oct(mode))
        data = path.read_bytes()
        assert KEY.encode() not in data and HF.encode() not in data, path
    text = " ".join([*shown, *sup.log_lines, *(f"{e.message} {e.fields}" for e in events)])
    assert KEY not in text and HF not in text
    assert any("api_key" in line for line in shown)  # the line is shown, its value is not
