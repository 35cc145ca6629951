"""The Ray cluster under a `--distributed-executor-backend ray` start: checked before the
launch (ray_preflight: TP per node, TP x PP in all, VLLM_HOST_IP among the node IPs, GPUs held
by another placement group) and read every ~2 s while the server starts, so that vLLM's
placement-group wait ("Waiting for creating a placement group...", the catalog's
`ray_placement_wait`) or a dead node becomes a finding that names the cause
(rules_multinode.ray_cluster_findings) instead of a silent 30-minute wait.

The probe is anything with `read()` and `read_nodes()` returning a RayCluster
(probes.ray_cluster.RayClusterProbe; tests give a fake). Its address: the serve option
--ray-address, else RAY_ADDRESS, else Ray's own discovery; the dashboard (state API) only
when --ray-dashboard is given.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import replace
from typing import Protocol

from headroom.doctor import Finding
from headroom.doctor.rules_multinode import ray_cluster_findings, ray_preflight
from headroom.probes.ray_cluster import RayCluster, RayClusterProbe
from headroom.supervisor.preflight import PreflightResult
from headroom.supervisor.state_signal import cancel_task
from headroom.supervisor.states import ServerState
from headroom.vllm_cmd import VllmCommand

WAIT_KINDS = ("ray_placement_wait", "ray_infeasible_request", "ray_placement_failed")


class ClusterReader(Protocol):
    async def read(self) -> RayCluster: ...

    async def read_nodes(self) -> RayCluster: ...


class RayHost(Protocol):
    """What RayWatch uses of the Supervisor."""

    command: VllmCommand
    state: ServerState

    @property
    def run(self): ...  # run_state.Run: its digest holds the log's events

    def emit(self, kind: str, message: str, **fields: object) -> None: ...

    def child_env(self, overrides: Mapping[str, str] | None = None) -> dict[str, str]: ...


def uses_ray(command: VllmCommand) -> bool:
    return str(command.get("distributed_executor_backend") or "").lower() == "ray"


def _int(value: object, default: int = 1) -> int:
    try:
        return int(value) if isinstance(value, int | float | str) and value else default
    except (TypeError, ValueError):
        return default


def make_probe(
    address: str | None, dashboard: str | None, env: Mapping[str, str]
) -> RayClusterProbe:
    """The cluster as the server's environment names it (RAY_ADDRESS is what vLLM's
    `ray.init()` uses too)."""
    return RayClusterProbe(address or env.get("RAY_ADDRESS") or None, dashboard, env=env)


class RayWatch:
    """Reads the cluster for one supervisor; `cluster` is the last reading (the TUI shows it),
    `findings` what the cluster and the log said so far in this run."""

    def __init__(
        self,
        host: RayHost,
        probe: ClusterReader | None,
        *,
        poll_s: float = 2.0,
        asked: bool = False,
    ) -> None:
        self.host = host
        self.probe = probe
        self.asked = asked  # --ray-address/--ray-dashboard given: read even without the flag
        self.poll_s = poll_s
        self.cluster: RayCluster | None = None
        self.findings: tuple[Finding, ...] = ()
        self._said: set[str] = set()
        self._task: asyncio.Task[None] | None = None

    @property
    def active(self) -> bool:
        return self.probe is not None and (self.asked or uses_ray(self.host.command))

    async def preflight(self) -> PreflightResult:
        """(failures, notes) of ray_preflight against a fresh full reading."""
        if not self.active or self.probe is None:
            return PreflightResult(())
        try:
            self.cluster = await self.probe.read()
        except Exception as exc:  # a probe must never stop a launch by crashing
            return PreflightResult((), (f"Ray cluster not read ({exc!r}): checks skipped",))
        command = self.host.command
        failures, notes = ray_preflight(
            self.cluster,
            tp=_int(command.get("tensor_parallel_size")),
            pp=_int(command.get("pipeline_parallel_size")),
            host_ip=self.host.child_env().get("VLLM_HOST_IP") or None,
        )
        return PreflightResult(tuple(failures), tuple(notes))

    def begin(self) -> None:
        """Start reading while the server starts (a no-op without Ray)."""
        self._said.clear()
        self.findings = ()
        if self.active:
            self._task = asyncio.create_task(self._loop(), name="headroom-ray-watch")

    async def cancel(self) -> None:
        task, self._task = self._task, None
        await cancel_task(task)

    async def _loop(self) -> None:
        # The first reading comes after one interval: preflight has just read it.
        while True:
            await asyncio.sleep(self.poll_s)
            if self.host.state != ServerState.STARTING:
                return
            try:
                await self.poll()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # keep starting; say what broke
                self.host.emit("notice", f"Ray cluster read failed (still starting): {exc!r}")

    @property
    def has_dashboard(self) -> bool:
        """Whether a reading is one HTTP round trip (the state API) rather than `ray status`."""
        return bool(getattr(self.probe, "dashboard_url", None))  # fakes in tests may lack it

    async def read_now(self) -> RayCluster | None:
        """One reading: the state API when there is a dashboard (one HTTP round trip), else
        `ray status` (a Python process each time). None without a probe."""
        probe = self.probe
        if probe is None:
            return None
        return await (probe.read_nodes() if self.has_dashboard else probe.read())

    async def poll(self) -> None:
        """One reading, then the findings of the cluster, with the log's placement-group
        wait as context."""
        cluster = await self.read_now()
        if cluster is None:
            return
        if cluster.readable or self.cluster is None:
            self.cluster = cluster
        self.judge()

    def judge(self) -> None:
        """Findings from the last reading and the log's wait lines; each said once."""
        tp = _int(self.host.command.get("tensor_parallel_size"))
        found = ray_cluster_findings(self.cluster, tp=tp)
        waits = self.host.run.digest.of_kind(*WAIT_KINDS)
        if waits and not any(f.id.startswith("ray-placement") or f.id in _CAUSES for f in found):
            found.insert(0, _wait_without_cause(waits[-1].line.strip(), self.cluster))
        elif waits:
            found = [_with_log_line(f, waits[-1].line.strip()) for f in found]
        self.findings = tuple(found)
        for finding in found:
            if finding.id in self._said:
                continue
            self._said.add(finding.id)
            self.host.emit(
                "finding",
                f"{finding.severity}: {finding.title}",
                id=finding.id,
                severity=finding.severity,
                evidence=list(finding.evidence),
                actions=[
                    {"knob": a.knob, "direction": a.direction, "value": a.value, "why": a.why}
                    for a in finding.actions
                ],
            )


# Findings of ray_cluster_findings that explain a placement-group wait.
_CAUSES = {
    "ray-placement-ip-mismatch",
    "ray-too-few-gpus",
    "ray-bundle-exceeds-node",
    "ray-gpus-held",
}


def _with_log_line(finding: Finding, line: str) -> Finding:
    if finding.id not in _CAUSES:
        return finding
    return replace(finding, evidence=(f"log: {line[:300]}", *finding.evidence))


def _wait_without_cause(line: str, cluster: RayCluster | None) -> Finding:
    why = (
        "; ".join(cluster.problems)
        if cluster is not None and cluster.problems
        else "the cluster shows no cause yet"
    )
    return Finding(
        "ray-placement-wait",
        None,
        "warning",
        "vLLM waits for a Ray placement group",
        (
            f"log: {line[:300]}",
            f"Ray cluster: {why}",
            "vLLM waits up to 1800 s; `ray status` shows what the group asks for",
        ),
        (),
    )
