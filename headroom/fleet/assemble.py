"""What both sources share once they have read: join GPUs to servers, run the doctor, and
build the FleetSnapshot."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from headroom.fleet.doctor import diagnose_fleet
from headroom.fleet.join import join_gpus, server_host
from headroom.fleet.model import FleetServer, FleetSnapshot, TargetHealth
from headroom.probes.dcgm import DcgmGpu
from headroom.probes.metrics_types import ServerMetrics
from headroom.probes.server_info import ServerInfo


@dataclass(frozen=True)
class ServerParts:
    instance: str
    url: str
    job: str | None
    labels: Mapping[str, str]  # target labels (a host label joins it to its GPUs)
    metrics: ServerMetrics
    info: ServerInfo | None = None
    history: tuple[ServerMetrics, ...] = ()

    def with_extras(
        self, info: ServerInfo | None, history: tuple[ServerMetrics, ...]
    ) -> ServerParts:
        return replace(self, info=info, history=history)


def assemble(
    source: str,
    parts: Sequence[ServerParts],
    gpus: Sequence[DcgmGpu],
    targets: Sequence[TargetHealth],
    warnings: Sequence[str],
    requests_made: int,
) -> FleetSnapshot:
    hosts = {p.instance: server_host(p.labels, p.instance)[0] for p in parts}
    joined, unmatched = join_gpus(
        [(p.instance, hosts[p.instance], p.labels.get("pod")) for p in parts], gpus
    )
    servers = [
        FleetServer(
            instance=p.instance,
            url=p.url,
            job=p.job,
            host=hosts[p.instance],
            metrics=p.metrics,
            info=p.info,
            gpus=joined.get(p.instance, ()),
            history=p.history,
        )
        for p in parts
    ]
    diagnosed, fleet_findings = diagnose_fleet(
        servers, targets, via_prometheus=source.startswith("prometheus")
    )
    return FleetSnapshot(
        taken_at=time.time(),
        source=source,
        servers=diagnosed,
        unmatched_gpus=tuple(unmatched),
        targets=tuple(targets),
        findings=fleet_findings,
        warnings=tuple(warnings),
        requests_made=requests_made,
    )
