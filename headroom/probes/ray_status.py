"""`ray status` text as an operator reads it: nodes, GPUs used/total, pending placement
groups and their bundles, recent failures.

Every generation of the format is read (fleet-facts.md §3.5, Ray's
`autoscaler/_private/util.py:format_info_string`): the resource sections were renamed twice,
`Usage:`/`Demands:` → `Total Usage:`/`Total Constraints:`/`Total Demands:` (Ray #52361,
Apr 2025) → `Total Usage:`/`From request_resources:`/`Pending Demands:` (Ray PR #55787,
Aug–Sep 2025). `-v` adds a `Node: <id> (<type>)` block per node with its own usage. Pasted
copies lose the single leading space of entry lines, so indentation is never relied on.
Unreadable text gives a RayStatus with `problems`, never an exception.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = [
    "PendingDemand",
    "RayNodeUsage",
    "RayStatus",
    "RecentFailure",
    "parse_ray_status",
    "pinned_nodes",
]

MAX_STATUS_CHARS = 4 * 1024 * 1024  # a `ray status -v` of a large cluster is far below this

# Section headers of every generation, mapped to what they hold.
_SECTIONS = {
    "active:": "active",
    "idle:": "idle",
    "pending:": "pending",
    "recent failures:": "failures",
    "usage:": "usage",
    "total usage:": "usage",
    "constraints:": "constraints",
    "total constraints:": "constraints",
    "from request_resources:": "constraints",
    "demands:": "demands",
    "total demands:": "demands",
    "pending demands:": "demands",
}
_FORMATS = {
    "usage:": "usage-demands (Ray before Apr 2025)",
    "total demands:": "total-usage-demands (Ray Apr-Aug 2025)",
    "pending demands:": "pending-demands (Ray Sep 2025 and later)",
}
_NODE_COUNT = re.compile(r"^(\d+)\s+(\S+)$")
_RESOURCE = re.compile(
    r"^(?P<used>[\d.]+)(?P<uunit>[KMGTP]?i?B)?/(?P<total>[\d.]+)(?P<tunit>[KMGTP]?i?B)?\s+"
    r"(?P<name>\S+)(?:\s+\((?P<pg_used>[\d.]+)\s+used of\s+(?P<pg_reserved>[\d.]+)\s+reserved"
    r" in placement groups\))?$"
)
_DEMAND_TAIL = re.compile(
    r"\((?P<strategy>[A-Z_]+)\):\s*(?P<count>\S+)\s+pending placement groups?"
)
_BUNDLE = re.compile(r"(\{[^{}]*\})\s*\*\s*(\d+)")
_FAILURE = re.compile(
    r"^(?P<type>[^:]+):\s*(?P<reason>\w+)(?:\s*\((?:ip|latest_attempt):\s*(?P<ip>[^)]+)\))?"
)
_NODE_HEADER = re.compile(r"^Node:\s*(?P<id>\S+)(?:\s+\((?P<type>[^)]*)\))?")
_PENDING_IP = re.compile(r"^(?P<ip>[\d.:a-fA-F]+):\s*(?P<type>[^,]+),\s*(?P<state>.+)$")


def pinned_nodes(bundles: Sequence[Mapping[str, float]]) -> tuple[str, ...]:
    """The `node:<ip>` resources bundles ask for: vLLM pins bundle 0 to the driver's IP
    (`get_ip()`), so a pin no Ray node carries waits forever."""
    pins = {
        key[len("node:") :]
        for b in bundles
        for key in b
        if key.startswith("node:") and not key.startswith("node:__internal")
    }
    return tuple(sorted(pins))


@dataclass(frozen=True)
class PendingDemand:
    """One line of the demands section. A placement group's bundles are expanded
    (`{'GPU': 1.0} * 15` is fifteen bundles)."""

    bundles: tuple[Mapping[str, float], ...]
    strategy: str | None  # PACK, STRICT_PACK, SPREAD, STRICT_SPREAD; None for plain tasks
    placement_group: bool
    text: str

    @property
    def gpus(self) -> float:
        return sum(float(b.get("GPU", 0.0)) for b in self.bundles)

    @property
    def pinned_nodes(self) -> tuple[str, ...]:
        return pinned_nodes(self.bundles)


@dataclass(frozen=True)
class RecentFailure:
    node_type: str
    reason: str  # NodeTerminated, LaunchFailed category...
    ip: str | None
    text: str


@dataclass(frozen=True)
class RayNodeUsage:
    """One `Node:` block of `ray status -v`."""

    node_id: str
    node_type: str | None
    gpus_used: float | None
    gpus_total: float | None


@dataclass(frozen=True)
class RayStatus:
    format: str | None  # which generation of the text; None when no section was found
    active_nodes: tuple[tuple[int, str], ...]  # (count, node type or node_<id>)
    idle_nodes: tuple[tuple[int, str], ...]
    pending_nodes: tuple[str, ...]
    failures: tuple[RecentFailure, ...]
    resources: Mapping[str, tuple[float, float]]  # name -> (used, total), bytes for memory
    gpus_reserved_in_pgs: float | None
    demands: tuple[PendingDemand, ...]
    nodes: tuple[RayNodeUsage, ...]  # only with -v
    problems: tuple[str, ...] = field(default=())

    @property
    def node_count(self) -> int:
        return sum(count for count, _ in self.active_nodes) + sum(c for c, _ in self.idle_nodes)

    @property
    def gpus_total(self) -> float | None:
        return self.resources["GPU"][1] if "GPU" in self.resources else None

    @property
    def gpus_used(self) -> float | None:
        return self.resources["GPU"][0] if "GPU" in self.resources else None

    @property
    def pending_placement_groups(self) -> tuple[PendingDemand, ...]:
        return tuple(d for d in self.demands if d.placement_group)


_UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "PiB": 2**50}


def _amount(number: str, unit: str | None) -> float:
    return float(number) * _UNITS.get(unit or "B", 1)


def _parse_bundle(text: str) -> Mapping[str, float] | None:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    out: dict[str, float] = {}
    for key, amount in value.items():
        if (
            isinstance(key, str)
            and isinstance(amount, int | float)
            and not isinstance(amount, bool)
        ):
            out[key] = float(amount)
    return out


def _parse_demand(line: str) -> PendingDemand | None:
    if line.startswith("(") and line.endswith(")"):  # "(no resource demands)"
        return None
    bundles: list[Mapping[str, float]] = []
    for match in _BUNDLE.finditer(line):
        bundle = _parse_bundle(match.group(1))
        if bundle is None:
            continue
        bundles.extend([bundle] * min(int(match.group(2)), 4096))
    if not bundles:
        return None
    tail = _DEMAND_TAIL.search(line)
    return PendingDemand(
        bundles=tuple(bundles),
        strategy=tail.group("strategy") if tail else None,
        placement_group=tail is not None,
        text=line,
    )


def parse_ray_status(text: str) -> RayStatus:
    """Read `ray status` (with or without -v) of any generation. Never raises."""
    problems: list[str] = []
    if len(text) > MAX_STATUS_CHARS:
        problems.append(f"ray status text cut at {MAX_STATUS_CHARS} characters")
        text = text[:MAX_STATUS_CHARS]
    section: str | None = None
    fmt: str | None = None
    active: list[tuple[int, str]] = []
    idle: list[tuple[int, str]] = []
    pending: list[str] = []
    failures: list[RecentFailure] = []
    resources: dict[str, tuple[float, float]] = {}
    pg_reserved: float | None = None
    demands: list[PendingDemand] = []
    nodes: list[RayNodeUsage] = []
    node: dict[str, object] | None = None

    def close_node() -> None:
        if node is not None:
            nodes.append(
                RayNodeUsage(
                    node_id=str(node["id"]),
                    node_type=node.get("type"),  # type: ignore[arg-type]
                    gpus_used=node.get("gpus_used"),  # type: ignore[arg-type]
                    gpus_total=node.get("gpus_total"),  # type: ignore[arg-type]
                )
            )

    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("---") or line.startswith("====="):
            continue
        header = _NODE_HEADER.match(line)
        if header:
            close_node()
            node = {"id": header.group("id"), "type": header.group("type")}
            section = "node"
            continue
        key = line.lower()
        if section == "node" and key == "usage:":
            continue  # a -v node block's own " Usage:" line, not the old format's header
        if key in _SECTIONS:
            fmt = _FORMATS.get(key, fmt)
            section = _SECTIONS[key]
            if node is not None and section != "usage":
                close_node()
                node = None
            continue
        if key in ("node status", "resources") or key.startswith(
            ("gcs request", "node provider", "autoscaler iteration")
        ):
            continue
        if section in ("active", "idle"):
            match = _NODE_COUNT.match(line)
            if match:
                (active if section == "active" else idle).append(
                    (int(match.group(1)), match.group(2))
                )
        elif section == "pending" and not line.startswith("("):
            pending.append(line)
        elif section == "failures" and not line.startswith("("):
            match = _FAILURE.match(line)
            if match:
                failures.append(
                    RecentFailure(
                        match.group("type").strip(), match.group("reason"), match.group("ip"), line
                    )
                )
        elif section in ("usage", "node"):
            match = _RESOURCE.match(line)
            if not match:
                continue
            used = _amount(match.group("used"), match.group("uunit"))
            total = _amount(match.group("total"), match.group("tunit"))
            name = match.group("name")
            if node is not None:
                if name == "GPU":
                    node["gpus_used"], node["gpus_total"] = used, total
            else:
                resources[name] = (used, total)
                if name == "GPU" and match.group("pg_reserved"):
                    pg_reserved = float(match.group("pg_reserved"))
        elif section == "demands":
            demand = _parse_demand(line)
            if demand is not None:
                demands.append(demand)
    close_node()
    if fmt is None:
        problems.append("no `ray status` section found (Node status / Resources)")
    return RayStatus(
        format=fmt,
        active_nodes=tuple(active),
        idle_nodes=tuple(idle),
        pending_nodes=tuple(pending),
        failures=tuple(failures),
        resources=resources,
        gpus_reserved_in_pgs=pg_reserved,
        demands=tuple(demands),
        nodes=tuple(nodes),
        problems=tuple(problems),
    )


def pending_node_ips(status: RayStatus) -> tuple[str, ...]:
    """IPs of nodes being launched (`<ip>: <type>, <state>` lines of the pending section)."""
    found = []
    for line in status.pending_nodes:
        match = _PENDING_IP.match(line)
        if match:
            found.append(match.group("ip"))
    return tuple(found)
