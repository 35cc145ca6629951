"""`--distributed-executor-backend ray` under the supervisor: ray_preflight refuses a start
the cluster cannot hold (before anything is launched), passes with notes otherwise, and while
the server starts the cluster is read every poll and a placement-group wait in the log
becomes a finding naming the cause. The cluster comes from a fake probe over the recorded
`ray status` captures in tests/fixtures/ray."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from sup_support import free_port, wait_for

from headroom.probes.ray_cluster import RayCluster
from headroom.probes.ray_status import parse_ray_status
from headroom.supervisor import ServerState, Supervisor, SupervisorSettings
from headroom.supervisor.states import PreflightError
from headroom.vllm_cmd import parse_command

RAY = Path(__file__).resolve().parents[1] / "fixtures" / "ray"
TWO_BY_TWO = "status-2026-ray-2.60.0-verbose-strict-pack-pending-2x2gpu-loopback.txt"
ONE_GPU = "status-2026-new-format-pending-pg-2node-gpustack-5509.txt"
IDLE_16 = "status-2025-05-old-format-idle-2x8gpu-gpustack-2077.txt"
WAITER = Path(__file__).with_name("ray_wait_vllm.py")


class FakeCluster:
    """read()/read_nodes() answering recorded `ray status` captures, the first for the first
    reading and the last from then on (a cluster that changes under a start); counts reads.
    With `moves_when`, the cluster stays at its first reading until that says so."""

    def __init__(self, *fixtures: str) -> None:
        self.readings = [parse_ray_status((RAY / f).read_text()) for f in fixtures]
        self.reads = 0
        self.held = 0  # reads answered with the first reading while moves_when said no
        self.moves_when = None

    @property
    def status(self):
        return self.readings[min(self.reads - self.held, len(self.readings)) - 1]

    async def read(self) -> RayCluster:
        self.reads += 1
        if self.reads > 1 and self.moves_when is not None and not self.moves_when():
            self.held += 1
        return RayCluster(float(self.reads), "10.0.0.1:6379", self.status, None, None)

    async def read_nodes(self) -> RayCluster:
        return await self.read()


def make(tmp_path, probe, *flags: str, launcher: str = "sim", time_scale: int = 50):
    command = parse_command(
        ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--port", str(free_port())]
        + ["--distributed-executor-backend", "ray", *flags]
    )
    settings = SupervisorSettings(
        launcher=launcher,
        data_dir=tmp_path / "data",
        poll_interval_s=0.1,
        grace_int_s=3,
        grace_term_s=2,
        ray_poll_s=0.1,
    )
    events: list = []
    env = {"HEADROOM_SIM_TIME_SCALE": str(time_scale)}
    sup = Supervisor(
        command, settings, env=env, on_event=events.append, nvml_probe=False, ray_probe=probe
    )
    return sup, events


async def test_a_start_the_cluster_cannot_hold_is_refused_before_launch(tmp_path):
    probe = FakeCluster(TWO_BY_TWO)
    sup, events = make(tmp_path, probe, "-tp", "4")
    with pytest.raises(PreflightError) as refused:
        await sup.start()
    assert any("TP 4 needs 4 GPUs in one node" in f for f in refused.value.failures)
    assert sup.state == ServerState.FAILED and sup.process is None
    assert [e.message for e in events if e.kind == "preflight"][0].startswith("TP 4 needs")
    await sup.close()


async def test_without_ray_the_cluster_is_never_read(tmp_path):
    probe = FakeCluster(TWO_BY_TWO)
    command = parse_command(["vllm", "serve", "m", "-tp", "4", "--port", str(free_port())])
    sup = Supervisor(
        command,
        SupervisorSettings(launcher="sim", data_dir=tmp_path / "d"),
        nvml_probe=False,
        ray_probe=probe,
    )
    assert not sup.ray.active
    assert (await sup.ray.preflight()).ok and probe.reads == 0
    await sup.close()


@pytest.mark.slow
async def test_simulator_starts_with_notes_and_the_cluster_is_read_while_starting(tmp_path):
    probe = FakeCluster(TWO_BY_TWO)
    # A start of a few wall seconds (time scale 5), so that the 0.1 s reading loop gets its
    # turn even on a loaded machine: at 50x the simulated start-up took under half a second
    # and a busy CI machine once made it ready before the loop's first reading.
    sup, events = make(tmp_path, probe, "-tp", "1", time_scale=5)
    try:
        await sup.start()
        notes = [e.message for e in events if e.kind == "notice"]
        assert any("a placement group is already waiting" in n for n in notes)
        assert await sup.wait_ready(timeout_s=60)
        assert probe.reads >= 2  # the preflight's reading and at least one while starting
        assert sup.ray.cluster is not None and sup.ray.cluster.status is probe.status
        reads_when_ready = probe.reads
        await sup.stop()
        assert probe.reads <= reads_when_ready + 1  # no reading once it serves
    finally:
        await sup.stop()  # a failed assertion above must not leave the simulator running
        await sup.close()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("fixtures", "finding", "severity"),
    [
        # 16 GPUs at the preflight, then a node leaves: one GPU for a group of two
        ((IDLE_16, ONE_GPU), "ray-too-few-gpus", "error"),
        ((IDLE_16,), "ray-placement-wait", "warning"),  # the cluster shows no cause
    ],
)
async def test_placement_group_wait_in_the_log_becomes_a_finding(
    tmp_path, fixtures, finding, severity
):
    probe = FakeCluster(*fixtures)
    template = f"{sys.executable} {WAITER} {{model}} {{flags}}"
    sup, events = make(tmp_path, probe, "-tp", "2", launcher=template)
    # The node leaves only once the wait line is in the log: otherwise which comes first (the
    # log read or the 0.1 s cluster read) was a race that scheduling changes decided.
    probe.moves_when = lambda: bool(sup.run.digest.of_kind("ray_placement_wait"))
    try:
        await sup.start()
        await wait_for(lambda: any(e.kind == "finding" for e in events), 20)
        found = [e for e in events if e.kind == "finding"]
        assert found[0].fields["id"] == finding
        assert found[0].fields["severity"] == severity
        evidence = found[0].fields["evidence"]
        assert any("Waiting for creating a placement group" in line for line in evidence)
        assert sup.ray.findings[0].id == finding
        assert sup.state == ServerState.STARTING
        await wait_for(lambda: probe.reads >= 4, 10)
        assert len([e for e in events if e.kind == "finding"]) == 1  # said once
    finally:
        await sup.stop()
        await sup.close()


async def test_a_ray_address_given_reads_the_cluster_without_the_backend_flag(tmp_path):
    """`headroom serve --ray-address ...` for a command that leaves the backend to vLLM."""
    probe = FakeCluster(TWO_BY_TWO)
    command = parse_command(["vllm", "serve", "m", "-tp", "4", "--port", str(free_port())])
    settings = SupervisorSettings(
        launcher="sim", data_dir=tmp_path / "d", ray_address="10.0.0.1:6379"
    )
    sup = Supervisor(command, settings, nvml_probe=False, ray_probe=probe)
    assert sup.ray.active
    with pytest.raises(PreflightError) as refused:
        await sup.start()
    assert any("TP 4 needs 4 GPUs in one node" in f for f in refused.value.failures)
    await sup.close()
