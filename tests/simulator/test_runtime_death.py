"""The simulator's engine dies at run time as vLLM's does (HEADROOM_SIM_DIE_AFTER_*).

Old: the simulator could only fail at start-up, so the supervisor's degraded and dead paths
were tested against a fake. Here: the log lines vLLM writes (runtime_death.py names their
sources), /health 503, 500s on requests, and the exit (status 0, as vLLM's should_exit path)
unless VLLM_KEEP_ALIVE_ON_ENGINE_DEATH=1.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import httpx
import pytest

from headroom.probes.vllm_log import digest_text
from headroom.simulator.logs import VllmLog
from headroom.simulator.runtime_death import CLIENT_MESSAGE, DEAD_ERROR, EngineDeath


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start(tmp_path, **env_extra: str):
    port = _free_port()
    env = {**os.environ, "HEADROOM_SIM_SCENARIO": "tiny-cpu", "HEADROOM_SIM_TIME_SCALE": "50",
           **env_extra}  # fmt: skip
    log = tmp_path / "serve.log"
    fh = open(log, "w")  # noqa: SIM115 - closed by the caller through the process
    proc = subprocess.Popen(
        [sys.executable, "-m", "headroom.simulator", "serve", "/models/tiny-llama", "--host",
         "127.0.0.1", "--port", str(port), "--max-model-len", "1024", "--served-model-name",
         "tiny", "--kv-cache-memory-bytes", "4000000"],
        stdout=fh, stderr=subprocess.STDOUT, env=env,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return proc, url, log, fh
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    pytest.fail("simulator did not become ready:\n" + log.read_text()[-3000:])


def _stop(proc, fh) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    fh.close()


def _complete(url: str) -> httpx.Response:
    body = {"model": "tiny", "prompt": "hello", "max_tokens": 4}
    return httpx.post(url + "/v1/completions", json=body, timeout=10)


def test_dies_at_the_nth_request_then_exits_with_status_0(tmp_path) -> None:
    proc, url, log, fh = _start(
        tmp_path, HEADROOM_SIM_DIE_AFTER_REQUESTS="2", HEADROOM_SIM_DEATH_EXIT_S="1.5"
    )
    try:
        assert _complete(url).status_code == 200
        dead = _complete(url)
        assert dead.status_code == 500
        assert dead.json()["error"]["message"] == CLIENT_MESSAGE
        assert httpx.get(url + "/health", timeout=5).status_code == 503
        assert _complete(url).status_code == 500
        assert proc.wait(timeout=15) == 0  # vLLM's dead server exits through should_exit
    finally:
        _stop(proc, fh)
    text = log.read_text()
    assert "EngineCore encountered a fatal error." in text
    assert "[shutdown] MPClient: engine core exited unexpectedly; starting cleanup" in text
    assert DEAD_ERROR in text
    assert "[shutdown] API server: shutdown triggered" not in text
    facts = digest_text(text).facts()
    assert facts.ready and facts.engine_dead  # Headroom's own log reader sees the death


def test_dies_after_simulated_seconds_and_stays_up_when_kept_alive(tmp_path) -> None:
    proc, url, log, fh = _start(
        tmp_path, HEADROOM_SIM_DIE_AFTER_S="25", VLLM_KEEP_ALIVE_ON_ENGINE_DEATH="1"
    )  # 25 simulated s = 0.5 s at time scale 50
    try:
        deadline = time.monotonic() + 15
        while httpx.get(url + "/health", timeout=5).status_code == 200:
            assert time.monotonic() < deadline, "the engine never died"
            time.sleep(0.1)
        time.sleep(1.0)
        assert proc.poll() is None  # kept alive: still answering
        assert httpx.get(url + "/health", timeout=5).status_code == 503
        assert _complete(url).status_code == 500
    finally:
        _stop(proc, fh)
    assert "EngineCore encountered a fatal error." in log.read_text()


def test_death_happens_and_is_logged_once(capsys) -> None:
    import asyncio

    death = EngineDeath(VllmLog(), after_requests=None)
    calls: list[str] = []
    death.on_death(lambda: calls.append("died"))
    assert not death.request_arrived() and not death.dead
    death.die()
    death.die()  # once only
    assert calls == ["died"] and death.request_arrived()
    out = capsys.readouterr().out
    assert out.count("EngineCore encountered a fatal error.") == 1
    assert asyncio.iscoroutinefunction(death.watch)


@pytest.mark.parametrize("value", ["", "0", "-3", "x"])
def test_unset_or_bad_settings_never_kill(value) -> None:
    env = {"HEADROOM_SIM_DIE_AFTER_REQUESTS": value, "HEADROOM_SIM_DIE_AFTER_S": value}
    death = EngineDeath.from_env(VllmLog(), env)
    assert not death.armed
    assert not any(death.request_arrived() for _ in range(100))


def test_a_silent_death_writes_no_line(capsys) -> None:
    death = EngineDeath.from_env(VllmLog(), {"HEADROOM_SIM_DIE_AFTER_REQUESTS": "1",
                                             "HEADROOM_SIM_DEATH_LOG": "0"})  # fmt: skip
    assert death.request_arrived() and death.dead
    assert capsys.readouterr().out == ""
