"""The fleet doctor: the single-server runtime rules per server, plus what only a fleet shows.

Fleet-only findings (pure functions over FleetServer rows):
- `fleet-uneven-load`: a replica preempts (or queues with a full KV cache) while a peer
  serving the same model idles: the load balancer, not the flags, is the problem.
- `fleet-kv-capacity-differs`: replicas of one model with KV capacities more than 10% apart
  (a different flag, cache dtype or GPU).
- `fleet-gpu-xid` / `fleet-gpu-throttled`: GPUs under a replica with an XID error, or held
  back by power or thermal limits (dcgm-exporter's *_VIOLATION counters growing).
- `fleet-target-down`: a vLLM or DCGM target that Prometheus marks down.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from headroom.doctor import DoctorInputs, Finding, diagnose
from headroom.fleet.model import FleetFinding, FleetServer, TargetHealth

CAPACITY_SPREAD = 0.10  # replicas' KV capacity may differ this much before it is a finding
IDLE_USAGE = 0.5
BUSY_USAGE = 0.9


def runtime_findings(server: FleetServer) -> list[FleetFinding]:
    """The doctor's rules over this server's history (no log, no command line: what fires
    is what the metrics alone show). Only warnings and errors: info is noise in a table."""
    if server.state != "up":
        return []
    history = list(server.history) + [server.metrics]
    version = server.info.version if server.info else None
    extra = {"server_info": server.info} if server.info is not None else {}
    diagnosis = diagnose(DoctorInputs(metrics_history=history, vllm_version=version, extra=extra))
    return [
        FleetFinding(f, (server.instance,))
        for f in diagnosis.findings
        if f.severity in ("warning", "error") and not f.id.startswith("rule-error")
    ]


def uneven_load(servers: Sequence[FleetServer]) -> list[FleetFinding]:
    out = []
    for model, replicas in _by_model(servers).items():
        busy = [s for s in replicas if _pressed(s)]
        idle = [s for s in replicas if _idle(s)]
        if not busy or not idle:
            continue
        evidence = [f"{s.instance}: {_pressure_text(s)}" for s in busy]
        evidence += [f"{s.instance}: {_pressure_text(s)}" for s in idle]
        evidence.append(
            f"{len(busy)} of {len(replicas)} replicas of {model} are pressed while "
            f"{len(idle)} idle: spread the load (router/load-balancer weights, sticky "
            "sessions, long prompts sent to one replica) before changing vLLM flags"
        )
        finding = Finding(
            "fleet-uneven-load",
            None,
            "warning",
            f"Uneven load across the replicas of {model}",
            tuple(evidence),
        )
        out.append(FleetFinding(finding, tuple(s.instance for s in busy + idle)))
    return out


def kv_capacity_differs(servers: Sequence[FleetServer]) -> list[FleetFinding]:
    out = []
    for model, replicas in _by_model(servers).items():
        known = [s for s in replicas if s.total.kv_capacity_tokens]
        if len(known) < 2:
            continue
        caps = [s.total.kv_capacity_tokens or 0 for s in known]
        if max(caps) <= min(caps) * (1 + CAPACITY_SPREAD):
            continue
        evidence = [f"{s.instance}: {_capacity_text(s)}" for s in known]
        finding = Finding(
            "fleet-kv-capacity-differs",
            4,
            "warning",
            f"Replicas of {model} have different KV capacity ({min(caps):,} to {max(caps):,} "
            "tokens)",
            tuple(evidence)
            + ("a different --gpu-memory-utilization, --kv-cache-dtype, max_model_len or GPU",),
        )
        out.append(FleetFinding(finding, tuple(s.instance for s in known)))
    return out


def gpu_faults(servers: Sequence[FleetServer]) -> list[FleetFinding]:
    out = []
    for server in servers:
        xid = [g for g in server.gpus if g.xid]
        if xid:
            evidence = tuple(
                f"GPU {g.index} ({g.uuid or '?'}) on {g.host or server.host}: last XID {g.xid}"
                + (f" ({g.xid_message})" if g.xid_message else "")
                for g in xid
            )
            title = f"XID errors on {len(xid)} GPU(s) under {server.instance}"
            out.append(
                FleetFinding(
                    Finding("fleet-gpu-xid", None, "error", title, evidence), (server.instance,)
                )
            )
        throttled = [g for g in server.gpus if g.throttle]
        if throttled:
            evidence = tuple(
                f"GPU {g.index} on {g.host or server.host}: {'/'.join(g.throttle or ())} "
                "throttling"
                + (f", {g.temperature_c:.0f} C" if g.temperature_c else "")
                + (f", {g.power_w:.0f} W" if g.power_w else "")
                for g in throttled
            )
            title = f"{len(throttled)} GPU(s) under {server.instance} are throttled"
            finding = Finding("fleet-gpu-throttled", None, "warning", title, evidence)
            out.append(FleetFinding(finding, (server.instance,)))
    return out


def targets_down(
    targets: Sequence[TargetHealth], via_prometheus: bool = True
) -> list[FleetFinding]:
    out = []
    for t in targets:
        if t.health != "down" or t.kind == "other":
            continue
        severity = "error" if t.kind == "vllm" else "warning"
        what = "vLLM server" if t.kind == "vllm" else "DCGM exporter"
        evidence = (f"job {t.job}, instance {t.instance}: {t.last_error or 'no error given'}",)
        title = (
            f"Prometheus marks {what} {t.instance} down"
            if via_prometheus
            else f"{what} {t.instance} does not answer"
        )
        finding = Finding("fleet-target-down", None, severity, title, evidence)
        out.append(FleetFinding(finding, (t.instance,) if t.kind == "vllm" else ()))
    return out


def diagnose_fleet(
    servers: Sequence[FleetServer], targets: Sequence[TargetHealth], via_prometheus: bool = True
) -> tuple[tuple[FleetServer, ...], tuple[FleetFinding, ...]]:
    """Servers with their findings attached, and the fleet-only findings."""
    fleet = (
        uneven_load(servers)
        + kv_capacity_differs(servers)
        + gpu_faults(servers)
        + targets_down(targets, via_prometheus)
    )
    out = []
    for server in servers:
        own = runtime_findings(server)
        own += [f for f in fleet if server.instance in f.servers]
        out.append(replace(server, findings=tuple(own)))
    return tuple(out), tuple(fleet)


def _by_model(servers: Sequence[FleetServer]) -> dict[str, list[FleetServer]]:
    groups: dict[str, list[FleetServer]] = {}
    for s in servers:
        if s.state == "up" and s.model:
            groups.setdefault(s.model, []).append(s)
    return {m: g for m, g in groups.items() if len(g) >= 2}


def _pressed(s: FleetServer) -> bool:
    t = s.total
    full = t.kv_cache_usage is not None and t.kv_cache_usage >= BUSY_USAGE
    return bool(t.preemptions_per_s) or (full and bool(t.requests_waiting))


def _idle(s: FleetServer) -> bool:
    t = s.total
    return (
        not t.preemptions_per_s
        and not t.requests_waiting
        and (t.kv_cache_usage is None or t.kv_cache_usage < IDLE_USAGE)
    )


def _pressure_text(s: FleetServer) -> str:
    t = s.total
    usage = f"KV {t.kv_cache_usage:.0%}" if t.kv_cache_usage is not None else "KV ?"
    return (
        f"{usage}, {t.requests_running or 0:.0f} running, {t.requests_waiting or 0:.0f} waiting, "
        f"{t.preemptions_per_s or 0:.2f} preemptions/s"
    )


def _capacity_text(s: FleetServer) -> str:
    t = s.total
    parts = [f"{t.kv_capacity_tokens:,} tokens"]
    if t.gpu_memory_utilization is not None:
        parts.append(f"gpu_memory_utilization {t.gpu_memory_utilization:g}")
    if t.cache_dtype:
        parts.append(f"cache dtype {t.cache_dtype}")
    names = sorted({g.name for g in s.gpus if g.name})
    if names:
        parts.append("GPU " + "/".join(names))
    return ", ".join(parts)
