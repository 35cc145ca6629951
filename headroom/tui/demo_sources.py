"""Sources for `headroom demo`: the live probes over a supervised simulator, plus the
scenario's built-in load, started once the server is first ready and kept running across
restarts (requests to a server that is restarting fail fast and are retried).

The simulated GPUs exist only once the simulator has written its state: until then the
NVML and topology probes would say "NVIDIA driver not loaded", which reads like a broken
install. In the demo they say the simulated GPUs appear when the simulator runs, and the
topology is read again soon (not every 10 s) so the simulated matrix shows promptly."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses

from headroom.probes.nvml_types import GpuSnapshot
from headroom.simulator.loadgen import run_load
from headroom.simulator.scenario import Scenario
from headroom.supervisor.states import SupervisorEvent
from headroom.tui.live_sources import LiveSources
from headroom.tui.sources import TopologyReading
from headroom.tui.supervised import EventListener, SupervisedServer

DEMO_GPU_NOTE = "simulated GPUs appear once the simulator runs (the demo reads no real GPU)"
DEMO_TOPOLOGY_NOTE = "the simulated machine's matrix appears once the simulator runs"


def _no_driver_text(text: str) -> bool:
    lowered = text.lower()
    return "driver not loaded" in lowered or "nvidia-smi not found" in lowered


class DemoSources(LiveSources):
    """LiveSources + the scenario's closed-loop load, with demo wording for GPU panels."""

    topology_retry_s = 2.0

    def __init__(
        self,
        supervisor: SupervisedServer | None,
        scenario: Scenario | None,
        *,
        window_s: float = 60.0,
    ) -> None:
        super().__init__(supervisor=supervisor, stop_on_exit=True, window_s=window_s)
        self.scenario = scenario
        self._load_stop = asyncio.Event()
        self._load_task: asyncio.Task[None] | None = None

    async def sample_gpus(self) -> GpuSnapshot | None:
        snapshot = await super().sample_gpus()
        if snapshot is not None and not snapshot.available:
            snapshot = dataclasses.replace(snapshot, reason=DEMO_GPU_NOTE)
        return snapshot

    async def read_topology(self) -> TopologyReading | None:
        result = await super().read_topology()
        if result is not None and result[0].confidence == "unreadable":
            return dataclasses.replace(result[0], problems=(DEMO_TOPOLOGY_NOTE,)), result[1]
        return result

    def on_supervisor_event(self, callback: EventListener) -> None:
        """The supervisor's pre-flight runs before the simulator exists: say so."""

        def reworded(event: SupervisorEvent) -> None:
            if event.kind in {"notice", "preflight"} and _no_driver_text(event.message):
                event = dataclasses.replace(event, message=f"GPU checks skipped: {DEMO_GPU_NOTE}")
            callback(event)

        super().on_supervisor_event(reworded)

    async def start(self) -> None:
        self._load_task = asyncio.get_running_loop().create_task(self._load_when_ready())
        await super().start()

    async def _load_when_ready(self) -> None:
        sup, scenario = self.supervisor, self.scenario
        if sup is None or scenario is None or scenario.load.concurrency <= 0:
            return
        load = scenario.load
        while str(sup.state) != "ready":
            if self._load_stop.is_set():
                return
            await asyncio.sleep(0.5)
        await run_load(
            sup.url,
            scenario.model,
            concurrency=load.concurrency,
            requests=load.requests,
            prompt_tokens=load.prompt_tokens,
            max_tokens=load.max_tokens,
            ignore_eos=load.ignore_eos,
            stop=self._load_stop,
        )

    async def close(self) -> None:
        self._load_stop.set()
        task = self._load_task
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await super().close()
