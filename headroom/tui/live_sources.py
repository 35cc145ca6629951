"""`LiveSources`: the TUI's data from the real probes (metrics over HTTP, NVML, topology, a
log file, the doctor), optionally with a supervised server (`SupervisedServer`, which
`Supervisor` implements) for state, logs and restarts. The interface it fills in is
`DataSources` (sources.py).
"""

from __future__ import annotations

import asyncio
import time
from urllib.parse import urlsplit

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.findings import Diagnosis
from headroom.doctor.model_table import find_model
from headroom.doctor.rules_multinode import ray_cluster_findings
from headroom.probes.metrics import MetricsProbe
from headroom.probes.metrics_types import ServerMetrics
from headroom.probes.model import ModelShape
from headroom.probes.model_lookup import ModelShapeProbe
from headroom.probes.nvml import NvmlProbe
from headroom.probes.nvml_types import GpuSnapshot
from headroom.probes.server_info import read_server_info
from headroom.probes.topology import read_topology
from headroom.probes.topology_verdict import tp_verdicts
from headroom.probes.vllm_log import LogDigest
from headroom.supervisor.journal import Journal, RunRecord
from headroom.supervisor.restart import RestartPreview
from headroom.supervisor.states import ServerState
from headroom.tui.log_tail import CommandTail, FileTail
from headroom.tui.restart_driver import drive_restart
from headroom.tui.sources import DataSources, ProgressCallback, TopologyReading, url_is_local
from headroom.tui.store import RayReading, ServerInfo, Store
from headroom.tui.supervised import EventListener, SupervisedServer
from headroom.vllm_cmd import VllmCommand, redact_text

# Retry a failed NVML init soon: a simulator writes its GPU state a moment after launch, and
# a driver being loaded should show up quickly too.
NVML_RETRY_INIT_S = 2.0
# A served Ray cluster without a dashboard is read through `ray status` this seldom.
RAY_STATUS_EVERY_S = 10.0


class LiveSources(DataSources):
    """The real probes. `url` is the server's base URL; `log_path` a vLLM log file to follow;
    `supervisor` a supervised server (state, log, restarts, journal)."""

    def __init__(
        self,
        url: str | None = None,
        *,
        log_path: str | None = None,
        log_cmd: list[str] | None = None,
        supervisor: SupervisedServer | None = None,
        window_s: float = 60.0,
        stop_on_exit: bool = False,
        metrics_max_age_s: float = 1.0,
    ) -> None:
        self.supervisor = supervisor
        self.stop_on_exit = stop_on_exit
        self.url = url or (supervisor.url if supervisor is not None else None)
        self.window_s = window_s
        # A snapshot this fresh (e.g. the supervisor's own) is shown instead of scraping again.
        self.metrics_max_age_s = metrics_max_age_s
        self.gpus_local = supervisor is not None or url_is_local(self.url)
        if not self.gpus_local and self.url:
            host = urlsplit(self.url if "//" in self.url else f"http://{self.url}").hostname
            self.gpus_remote_reason = (
                f"GPUs not local: the server runs on {host}; this machine's GPUs are not its GPUs"
            )
        self.can_restart = supervisor is not None
        self.has_logs = supervisor is not None or bool(log_path) or bool(log_cmd)
        self._command_tail: CommandTail | None = CommandTail(log_cmd) if log_cmd else None
        self._command_end_reported = False
        self._log_path = log_path
        self._tail: FileTail | None = FileTail(log_path) if log_path else None
        self._digest: LogDigest | None = None  # of a followed log (a supervisor keeps its own)
        self._metrics_probe: MetricsProbe | None = None
        self._reported_at: float | None = None
        self._nvml_probe: NvmlProbe | None = None
        self._model_probe: ModelShapeProbe | None = None
        self._start_error: str | None = None
        self._supervisor_lines: list[str] = []
        self._log_subscribed = False
        self._ray_last: tuple[float, RayReading] | None = None

    def on_supervisor_event(self, callback: EventListener) -> None:
        if self.supervisor is not None:
            self.supervisor.subscribe(callback)  # beside any listener it has already

    # -- server -----------------------------------------------------------------------
    def current_command(self) -> VllmCommand | None:
        return self.supervisor.command if self.supervisor is not None else None

    def server_info(self) -> ServerInfo:
        sup = self.supervisor
        command = self.current_command()
        model = command.model if command is not None else None
        # A supervised server is being launched from the first frame on ("unknown" reads as
        # if something were wrong); its real state follows within half a second.
        state = "starting" if sup is not None else "unknown"
        return ServerInfo(
            url=self.url, model=model, command=command, supervised=sup is not None, state=state
        )

    async def start(self) -> None:
        if self._command_tail is not None:
            await self._command_tail.start()
        sup = self.supervisor
        if sup is not None:
            alive = sup.process is not None and sup.process.alive()
            # A re-adopted server is running already; its start() only begins watching.
            if not alive or sup.adopted:
                try:
                    await sup.start()
                except Exception as exc:  # preflight/launch errors: shown as the failure
                    self._start_error = f"{type(exc).__name__}: {exc}"
                    raise

    async def read_server_state(self) -> tuple[str, str | None] | None:
        if self.supervisor is None:
            return None
        state_text = str(self.supervisor.state).lower()
        detail = self.supervisor.failure_reason
        if state_text == "stopped" and self._start_error:
            return "failed", self._start_error
        return state_text, detail

    # -- metrics ------------------------------------------------------------------------
    async def scrape_metrics(self) -> ServerMetrics | None:
        if not self.url:
            return None
        if self.supervisor is not None:
            # The supervisor's probe, shared: one scrape per interval reaches the server.
            snapshot = await self.supervisor.metrics.latest(self.url, self.metrics_max_age_s)
        else:
            if self._metrics_probe is None:
                self._metrics_probe = MetricsProbe(self.url, window_s=self.window_s)
            snapshot = await self._metrics_probe.scrape()
        if snapshot.state == "up":
            await self._read_reported()
        return snapshot

    async def _read_reported(self) -> None:
        """What the server says about itself: once it answers, then again only every 60 s
        while it does not (an API key on /v1, a proxy)."""
        now = time.monotonic()
        if (
            self.url is None
            or self.reported is not None
            or (self._reported_at is not None and now - self._reported_at < 60)
        ):
            return
        self._reported_at = now
        info = await read_server_info(self.url, timeout_s=2.0)
        if info.model_ids or info.version:
            self.reported = info

    # -- GPUs ---------------------------------------------------------------------------
    async def sample_gpus(self) -> GpuSnapshot | None:
        if not self.gpus_local:
            return None
        if self._nvml_probe is None:
            self._nvml_probe = NvmlProbe(retry_init_s=NVML_RETRY_INIT_S)
        return await self._nvml_probe.sample()

    async def read_topology(self) -> TopologyReading | None:
        if not self.gpus_local:
            return None
        nvml = self._nvml_probe.nvml if self._nvml_probe is not None else None
        matrix = await read_topology(nvml)
        tp = self._tp_size()
        verdicts = tp_verdicts(matrix, [tp] if tp else None)
        return matrix, list(verdicts)

    def _tp_size(self) -> int | None:
        command = self.current_command()
        if command is None:
            return None
        try:
            return command.get_int("tensor_parallel_size", 1) or 1
        except (TypeError, ValueError):
            return None

    # -- Ray ----------------------------------------------------------------------------
    @property
    def reads_ray(self) -> bool:
        return self.supervisor is not None and self.supervisor.ray.active

    async def read_ray(self) -> RayReading | None:
        """While the server starts, the supervisor's own reading (it reads every 2 s and
        knows the log's placement-group wait); afterwards the cluster read here, cheaply
        (the state API when a dashboard is given)."""
        sup = self.supervisor
        if sup is None or not sup.ray.active:
            return None
        watch = sup.ray
        if sup.state == ServerState.STARTING and watch.cluster is not None:
            return RayReading(watch.cluster, watch.findings)
        now = time.monotonic()
        last = self._ray_last
        if last is not None and last[0] + RAY_STATUS_EVERY_S > now and not watch.has_dashboard:
            return last[1]  # `ray status` starts a Python process: not every 2 s while serving
        cluster = await watch.read_now()
        if cluster is None:
            return None
        reading = RayReading(cluster, tuple(ray_cluster_findings(cluster, tp=self._tp_size())))
        self._ray_last = (now, reading)
        return reading

    # -- logs ---------------------------------------------------------------------------
    async def read_log_lines(self) -> list[str]:
        sup = self.supervisor
        if sup is not None:
            if not self._log_subscribed:
                # Lines the supervisor already read, then every new batch as it reads them.
                self._supervisor_lines.extend(sup.log_lines)
                sup.subscribe_log(self._supervisor_lines.extend)
                self._log_subscribed = True
            lines, self._supervisor_lines[:] = list(self._supervisor_lines), []
            return lines
        if self._command_tail is not None:
            lines = [redact_text(line) for line in self._command_tail.read_new()]
            if lines:
                self._feed_digest(lines)
            elif self._command_tail.ended and not self._command_end_reported:
                self._command_end_reported = True
                raise RuntimeError(self._command_tail.ended)  # shown on the Logs screen
            return lines
        if self._tail is None:
            return []
        lines = [redact_text(line) for line in await asyncio.to_thread(self._tail.read_new)]
        if lines and self.supervisor is None:
            self._feed_digest(lines)
        return lines

    def _feed_digest(self, lines: list[str]) -> None:
        if self._digest is None:
            self._digest = LogDigest()
        for line in lines:
            self._digest.feed(line)

    # -- doctor -------------------------------------------------------------------------
    def diagnose(self, store: Store) -> Diagnosis:
        digest = self.supervisor.digest if self.supervisor is not None else self._digest
        command = self.current_command()
        inputs = DoctorInputs(
            command=command,
            model=self._model_shape(command.model if command is not None else None),
            log=digest,
            metrics_history=tuple(store.metrics_history)[-60:],
            gpus=store.gpus if self.gpus_local else None,
            topology=store.topology,
            vllm_version=self.reported.version if self.reported is not None else None,
            extra={"server_info": self.reported} if self.reported is not None else {},
        )
        return diagnose(inputs)

    def _model_shape(self, name: str | None) -> ModelShape | None:
        """The model's shape from local files, the HF cache or the Hub, read in a thread so a
        frame never waits (None until it arrives; names the built-in table knows need none)."""
        if not name or find_model(name) is not None:
            return None
        if self._model_probe is None:
            self._model_probe = ModelShapeProbe()
        found = self._model_probe.peek(name)
        return found.shape if found is not None else None

    # -- journal ------------------------------------------------------------------------
    async def read_runs(self) -> list[RunRecord] | None:
        journal = self.supervisor.journal if self.supervisor is not None else Journal()
        return await asyncio.to_thread(journal.records)

    # -- restart ------------------------------------------------------------------------
    def preview_restart(self, changes: dict[str, object]) -> RestartPreview | None:
        if self.supervisor is None:
            return None
        return self.supervisor.preview(changes)

    async def restart(
        self,
        changes: dict[str, object],
        progress: ProgressCallback,
        expected: RestartPreview | None = None,
    ) -> tuple[bool, bool, str | None]:
        if self.supervisor is None:
            return await super().restart(changes, progress, expected)
        return await drive_restart(self.supervisor, changes, progress, expected)

    def server_running(self) -> tuple[bool, int | None]:
        """(is a server Headroom launched still running, its pid)."""
        sup = self.supervisor
        if sup is None:
            return False, None
        return sup.process is not None and sup.process.alive(), sup.pid

    async def stop_server(self) -> None:
        if self.supervisor is not None:
            await self.supervisor.stop()

    async def detach_server(self) -> None:
        if self.supervisor is not None:
            await self.supervisor.detach()

    async def close(self) -> None:
        if self._command_tail is not None:
            await self._command_tail.stop()
        if self._nvml_probe is not None:
            self._nvml_probe.close()
        if self._metrics_probe is not None:
            await self._metrics_probe.aclose()
        if self.supervisor is not None and self.stop_on_exit:
            await self.supervisor.stop()
        if self.supervisor is not None:
            await self.supervisor.metrics.aclose()
