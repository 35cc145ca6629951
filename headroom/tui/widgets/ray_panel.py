"""The Ray nodes panel (GPUs screen): each node's IP, GPUs used/total and state, the
placement groups that wait with their bundles, and the doctor's reading of why they wait.

Nodes come from the state API when a dashboard was given (IPs, ALIVE/DEAD, head), joined by
node id with `ray status -v` for the GPUs in use; without the state API, from the `Node:`
blocks of `ray status -v`, and without those, the cluster's totals only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from textual.widgets import Static

from headroom.probes.ray_cluster import RayCluster
from headroom.tui import format as fmt
from headroom.tui.format import escape_markup as escape
from headroom.tui.store import RayReading

MAX_NODES = 16  # a panel, not a fleet view: the rest is summed in one line
MAX_GROUPS = 4


@dataclass(frozen=True)
class NodeRow:
    node: str  # the id's first 12 characters
    ip: str
    state: str
    gpus_used: float | None
    gpus_total: float | None
    head: bool


def _num(value: float | None) -> str:
    return fmt.NA if value is None else f"{value:g}"


def node_rows(cluster: RayCluster) -> list[NodeRow]:
    status = cluster.status
    used_by_id = {n.node_id: n.gpus_used for n in (status.nodes if status else ())}
    # A cluster using no GPU at all uses none on any node, -v blocks or not.
    idle = 0.0 if status is not None and status.gpus_used == 0 else None
    if cluster.nodes is not None:
        return [
            NodeRow(
                n.node_id[:12],
                n.ip or fmt.NA,
                n.state or fmt.NA,
                used_by_id.get(n.node_id, idle),
                n.gpus_total,
                bool(n.is_head),
            )
            for n in cluster.nodes
        ]
    if cluster.status is not None:
        return [
            NodeRow(n.node_id[:12], fmt.NA, "ALIVE", n.gpus_used, n.gpus_total, False)
            for n in cluster.status.nodes
        ]
    return []


def _bundles(bundles: tuple[Mapping[str, float], ...]) -> str:
    """`{GPU: 1} x3` for repeated bundles, in order."""
    parts: list[tuple[str, int]] = []
    for bundle in bundles:
        text = "{" + ", ".join(f"{k}: {v:g}" for k, v in bundle.items()) + "}"
        if parts and parts[-1][0] == text:
            parts[-1] = (text, parts[-1][1] + 1)
        else:
            parts.append((text, 1))
    return " + ".join(f"{t} x{n}" if n > 1 else t for t, n in parts)


def pending_lines(cluster: RayCluster) -> list[str]:
    lines = []
    demands = cluster.status.pending_placement_groups if cluster.status is not None else ()
    for group in cluster.placement_groups or ():
        if group.state not in ("PENDING", "RESCHEDULING"):
            continue
        # the state API leaves the strategy out; `ray status` prints it beside the bundles
        strategy = group.strategy or next(
            (d.strategy for d in demands if d.gpus == group.gpus), None
        )
        how = ", ".join(x for x in (group.state, group.scheduling_state, strategy) if x)
        name = group.name or group.pg_id[:12]
        lines.append(f"{name} ({how}): {len(group.bundles)} bundles {_bundles(group.bundles)}")
    if not lines and cluster.status is not None:
        for demand in cluster.status.pending_placement_groups:
            lines.append(
                f"{demand.strategy or '?'}: {len(demand.bundles)} bundles {_bundles(demand.bundles)}"
            )
    return lines


def ray_panel_text(reading: RayReading) -> str:
    """The panel as Textual markup (every text from the cluster escaped)."""
    cluster = reading.cluster
    status = cluster.status
    rows = node_rows(cluster)
    alive = sum(1 for r in rows if r.state == "ALIVE") if rows else None
    count = alive if alive is not None else (status.node_count if status else None)
    used = status.gpus_used if status else None
    total = status.gpus_total if status else None
    if total is None and cluster.gpus_per_node:
        total = sum(cluster.gpus_per_node)
    head = f"[b]{escape(cluster.address or 'Ray')}[/b]"
    lines = [f"{head} · {_num(count)} nodes alive · GPUs {_num(used)}/{_num(total)} used"]
    if rows:
        lines.append(f"[dim]{'node':<13}{'IP':<16}{'state':<7}GPUs[/dim]")
        for r in rows[:MAX_NODES]:
            state = escape(r.state)
            colour = "$success" if r.state == "ALIVE" else "$error"
            gpus = f"{_num(r.gpus_used)}/{_num(r.gpus_total)}"
            mark = "  head" if r.head else ""
            lines.append(
                f"{escape(r.node):<13}{escape(r.ip)[:15]:<16}[{colour}]{state:<7}[/]{gpus}{mark}"
            )
        if len(rows) > MAX_NODES:
            lines.append(f"[dim]… {len(rows) - MAX_NODES} more nodes[/dim]")
    pending = pending_lines(cluster)
    for line in pending[:MAX_GROUPS]:
        lines.append(f"[$warning]waiting[/] {escape(line)}")
    if not pending:
        lines.append("[dim]no placement group waiting[/dim]")
    for finding in reading.findings[:2]:
        colour = "$error" if finding.severity == "error" else "$warning"
        lines.append(f"[{colour}]cause[/] {escape(finding.title)}")
        for action in finding.actions[:1]:
            value = "" if action.value is None else f" {action.value}"
            lines.append(
                f"  [dim]fix:[/dim] {escape(action.direction)} {escape(action.knob)}"
                f"{escape(str(value))}: {escape(action.why)}"
            )
    for problem in cluster.problems[:2]:
        lines.append(f"[dim]not read: {escape(problem)}[/dim]")
    return "\n".join(lines)


class RayPanel(Static):
    """Shown only when the server runs on Ray (the store has a reading)."""

    def show(self, reading: RayReading | None) -> None:
        self.display = reading is not None
        if reading is not None:
            self.update(ray_panel_text(reading))
