"""Fleet-only findings and the GPU join, over hand-built rows (pure functions)."""

from __future__ import annotations

from dataclasses import replace

from headroom.fleet.doctor import diagnose_fleet, kv_capacity_differs, uneven_load
from headroom.fleet.join import join_gpus, server_host
from headroom.fleet.model import FleetServer, TargetHealth
from headroom.probes.dcgm import gpus_from_samples
from headroom.probes.metrics_types import EngineMetrics, ServerMetrics


def server(
    instance: str, model="m", usage=0.1, waiting=0.0, preempt=0.0, capacity=1000, state="up"
) -> FleetServer:
    total = replace(
        EngineMetrics.empty(model),
        kv_cache_usage=usage,
        requests_waiting=waiting,
        preemptions_per_s=preempt,
        kv_capacity_tokens=capacity,
        requests_running=4.0,
    )
    return FleetServer(
        instance,
        f"http://{instance}",
        "vllm",
        instance.split(":")[0],
        ServerMetrics(0.0, instance, state, None, total, (), ()),
    )


def gpu(host: str, index: int, instance="x:9400", xid=0.0, pod=None):
    labels = {
        "gpu": str(index),
        "UUID": f"GPU-{host}-{index}",
        "Hostname": host,
        "instance": instance,
    }
    if pod:
        labels["pod"] = pod
    return gpus_from_samples([("DCGM_FI_DEV_XID_ERRORS", labels, xid)])[0]


def test_one_replica_preempting_while_a_peer_idles() -> None:
    rows = [
        server("a:1", usage=0.97, preempt=2.0),
        server("b:1", usage=0.05),
        server("c:1", model="other", usage=0.97, preempt=1.0),
    ]
    (found,) = uneven_load(rows)
    assert found.finding.id == "fleet-uneven-load" and found.servers == ("a:1", "b:1")
    assert "2.00 preemptions/s" in found.finding.evidence[0]


def test_no_uneven_finding_when_all_replicas_are_busy_or_all_idle() -> None:
    assert (
        uneven_load(
            [server("a:1", usage=0.97, preempt=2.0), server("b:1", usage=0.95, preempt=1.0)]
        )
        == []
    )
    assert uneven_load([server("a:1"), server("b:1")]) == []
    # a full cache with a queue counts as pressed even before a preemption
    assert uneven_load([server("a:1", usage=0.95, waiting=8), server("b:1")])


def test_kv_capacity_differs_beyond_ten_percent() -> None:
    (found,) = kv_capacity_differs([server("a:1", capacity=1000), server("b:1", capacity=2000)])
    assert found.finding.step == 4 and "1,000 to 2,000" in found.finding.title
    assert kv_capacity_differs([server("a:1", capacity=1000), server("b:1", capacity=1050)]) == []


def test_xid_throttle_and_down_targets_land_on_their_servers() -> None:
    faulty = replace(
        server("a:1"), gpus=(gpu("a", 0, xid=79.0), replace(gpu("a", 1), throttle=("thermal",)))
    )
    targets = [
        TargetHealth("vllm", "z:1", "vllm", "down", "connection refused"),
        TargetHealth("dcgm", "y:9400", "dcgm", "down", "timeout"),
        TargetHealth("node", "q:9100", "other", "down", ""),
    ]
    servers, fleet = diagnose_fleet([faulty, server("b:1")], targets)
    ids = sorted(f.finding.id for f in fleet)
    assert ids == ["fleet-gpu-throttled", "fleet-gpu-xid", "fleet-target-down", "fleet-target-down"]
    own = {f.finding.id for f in servers[0].findings}
    assert {"fleet-gpu-xid", "fleet-gpu-throttled"} <= own
    assert not servers[1].findings
    severities = {
        f.finding.title: f.finding.severity for f in fleet if f.finding.id == "fleet-target-down"
    }
    assert sorted(severities.values()) == ["error", "warning"]


def test_join_by_host_label_then_by_address_then_by_pod() -> None:
    gpus = [gpu("node-a", 0), gpu("node-a", 1), gpu("node-b", 0, instance="10.0.0.2:9400")]
    joined, unmatched = join_gpus(
        [("10.0.0.1:8000", "node-a", None), ("10.0.0.2:8000", "10.0.0.2", None)], gpus
    )
    assert [g.uuid for g in joined["10.0.0.1:8000"]] == ["GPU-node-a-0", "GPU-node-a-1"]
    assert [g.uuid for g in joined["10.0.0.2:8000"]] == ["GPU-node-b-0"]  # exporter address
    assert unmatched == ()
    podded = [gpu("n", 0, pod="vllm-0"), gpu("n", 1, pod="other"), gpu("n", 2)]
    joined, unmatched = join_gpus([("p:8000", "n", "vllm-0")], podded)
    assert [g.index for g in joined["p:8000"]] == ["0"] and len(unmatched) == 2
    assert server_host({"Hostname": "h"}, "1.2.3.4:80") == ("h", True)
    assert server_host({}, "1.2.3.4:80") == ("1.2.3.4", False)


def test_trouble_order_down_first_then_errors() -> None:
    from headroom.fleet.model import FleetSnapshot

    rows, _ = diagnose_fleet(
        [
            server("ok:1"),
            server("down:1", state="down"),
            replace(server("xid:1"), gpus=(gpu("x", 0, xid=48.0),)),
        ],
        [],
    )
    order = [s.instance for s in FleetSnapshot(0.0, "t", rows).sorted_servers()]
    assert order == ["down:1", "xid:1", "ok:1"]
