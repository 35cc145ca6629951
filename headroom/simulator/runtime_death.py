"""The engine dying at run time, as vLLM's does, so a supervisor's degraded and dead paths
can be tested against the simulator rather than against a fake.

Settings (environment, like every simulator setting):
- `HEADROOM_SIM_DIE_AFTER_REQUESTS=N`: the engine dies when the N-th generation request
  arrives (that request already gets the 500).
- `HEADROOM_SIM_DIE_AFTER_S=S`: the engine dies S simulated seconds after the server is
  ready (`HEADROOM_SIM_TIME_SCALE` applies).
- `VLLM_KEEP_ALIVE_ON_ENGINE_DEATH=1` (vLLM's own setting): the API server stays up after
  the death, answering /health 503 and 500s, instead of shutting itself down.
- `HEADROOM_SIM_DEATH_EXIT_S` (default 5, wall seconds): how long the dead server lingers
  before it exits, vLLM's `terminate_if_errored` watchdog period.
- `HEADROOM_SIM_DEATH_LOG=0`: die without writing the lines below, a death whose log the
  watcher cannot see (a server attached without its log, a lost log pipe), so that only
  the process exit and /health can tell.

What a death looks like (texts and files from ../shared/reference/vllm-facts.md §3.7 and
vLLM's source: vllm/v1/engine/core.py, core_client.py, async_llm.py,
vllm/v1/engine/exceptions.py; the line shapes as in real logs of runtime deaths):
- the engine process logs `EngineCore encountered a fatal error.` with a traceback;
- the API server logs `[shutdown] MPClient: engine core exited unexpectedly; starting
  cleanup`, then `AsyncLLM output_handler failed.` with a traceback ending in
  `vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack
  trace (above) for the root cause.`;
- /health answers 503; every generation request 500 with the client message
  `The server had an error while processing your request.`;
- a few seconds later the server shuts itself down and exits with status 0 (vLLM sets
  `server.should_exit`; no non-zero exit on this path), unless kept alive.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping

from headroom.simulator.logs import VllmLog

CLIENT_MESSAGE = "The server had an error while processing your request."
DEAD_ERROR = (
    "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. "
    "See stack trace (above) for the root cause."
)
# Where each line comes from in vLLM (file:line as the logger prints it).
ENGINE_WHERE = "core.py:1586"
MONITOR_WHERE = "core_client.py:839"
OUTPUT_HANDLER_WHERE = "async_llm.py:538"


class EngineDeath:
    """Decides when the simulated engine dies and writes what vLLM writes when it does."""

    def __init__(
        self,
        log: VllmLog,
        *,
        after_requests: int | None = None,
        after_s: float | None = None,
        keep_alive: bool = False,
        exit_after_s: float = 5.0,
        logged: bool = True,
    ) -> None:
        self.log = log
        self.after_requests = after_requests
        self.after_s = after_s
        self.keep_alive = keep_alive
        self.exit_after_s = exit_after_s
        self.logged = logged
        self.requests = 0
        self.dead = False
        self._on_death: list[Callable[[], None]] = []

    @classmethod
    def from_env(cls, log: VllmLog, env: Mapping[str, str] | None = None) -> EngineDeath:
        env = os.environ if env is None else env
        return cls(
            log,
            after_requests=_positive_int(env.get("HEADROOM_SIM_DIE_AFTER_REQUESTS")),
            after_s=_positive_float(env.get("HEADROOM_SIM_DIE_AFTER_S")),
            keep_alive=env.get("VLLM_KEEP_ALIVE_ON_ENGINE_DEATH", "0") not in ("", "0"),
            exit_after_s=_positive_float(env.get("HEADROOM_SIM_DEATH_EXIT_S")) or 5.0,
            logged=env.get("HEADROOM_SIM_DEATH_LOG", "1") != "0",
        )

    @property
    def armed(self) -> bool:
        return self.after_requests is not None or self.after_s is not None

    def on_death(self, callback: Callable[[], None]) -> None:
        self._on_death.append(callback)

    def request_arrived(self) -> bool:
        """Count a generation request; True when the engine is (now) dead."""
        if self.dead:
            return True
        self.requests += 1
        if self.after_requests is not None and self.requests >= self.after_requests:
            self.die()
        return self.dead

    async def watch(self, time_scale: float, stop: asyncio.Event) -> None:
        """Die after `after_s` simulated seconds, then (unless kept alive) stop the server."""
        if self.after_s is not None and not self.dead:
            await asyncio.sleep(self.after_s / max(time_scale, 1e-3))
            self.die()
        if not self.armed:
            return
        while not self.dead:
            await asyncio.sleep(0.05)
        if not self.keep_alive:
            await asyncio.sleep(self.exit_after_s)
            stop.set()

    def die(self) -> None:
        if self.dead:
            return
        self.dead = True
        if self.logged:
            self._write_log()
        for callback in self._on_death:
            callback()

    def _write_log(self) -> None:
        log = self.log
        log.emit("engine", "ERROR", ENGINE_WHERE, "EngineCore encountered a fatal error.\n"
                 + _traceback("vllm/v1/engine/core.py", "run_engine_core",
                              "engine_core.run_busy_loop()",
                              "RuntimeError: CUDA error: an illegal memory access was "
                              "encountered"))  # fmt: skip
        log.emit(
            "api",
            "WARNING",
            MONITOR_WHERE,
            "[shutdown] MPClient: engine core exited unexpectedly; starting cleanup",
        )
        log.emit("api", "ERROR", OUTPUT_HANDLER_WHERE, "AsyncLLM output_handler failed.\n"
                 + _traceback("vllm/v1/engine/async_llm.py", "output_handler",
                              "outputs = await engine_core.get_output_async()", DEAD_ERROR))  # fmt: skip


def _traceback(path: str, function: str, code: str, last: str) -> str:
    return (
        "Traceback (most recent call last):\n"
        f'  File "/usr/local/lib/python3.12/site-packages/{path}", line 1, in {function}\n'
        f"    {code}\n"
        f"{last}"
    )


def _positive_int(text: str | None) -> int | None:
    try:
        value = int(text or "")
    except ValueError:
        return None
    return value if value > 0 else None


def _positive_float(text: str | None) -> float | None:
    try:
        value = float(text or "")
    except ValueError:
        return None
    return value if value > 0 else None
