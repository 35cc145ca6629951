"""The Ray cluster under a multi-node vLLM, read the way an operator does: `ray status`
text (nodes, GPUs used/total, pending placement groups, recent failures) and, where the
dashboard runs, Ray's state API (`/api/v0/nodes`, `/api/v0/placement_groups`, what
`ray list nodes` reads) for node IPs, dead nodes and each placement group's bundles.

Either source may be missing: a RayCluster carries what could be read and says why the
rest could not (`problems`). Nothing raises; bodies and outputs are bounded.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import httpx

from headroom.probes.ray_status import RayStatus, parse_ray_status
from headroom.probes.tls import tls_context_for

__all__ = [
    "RayCluster",
    "RayClusterProbe",
    "RayNode",
    "RayPlacementGroup",
    "nodes_from_state_api",
    "placement_groups_from_state_api",
]

MAX_BODY_BYTES = 8 * 1024 * 1024
MAX_ITEMS = 4096


@dataclass(frozen=True)
class RayNode:
    node_id: str
    ip: str | None
    state: str | None  # ALIVE | DEAD
    is_head: bool | None
    gpus_total: float | None
    state_message: str | None = None


@dataclass(frozen=True)
class RayPlacementGroup:
    pg_id: str
    name: str | None
    state: str | None  # PENDING | CREATED | REMOVED | RESCHEDULING
    strategy: str | None
    bundles: tuple[Mapping[str, float], ...]
    bundle_nodes: tuple[str | None, ...]  # node id each bundle was placed on ("" = none yet)
    scheduling_state: str | None = None  # e.g. INFEASIBLE

    @property
    def gpus(self) -> float:
        return sum(float(b.get("GPU", 0.0)) for b in self.bundles)


@dataclass(frozen=True)
class RayCluster:
    taken_at: float
    address: str | None
    status: RayStatus | None
    nodes: tuple[RayNode, ...] | None  # None: the state API was not read
    placement_groups: tuple[RayPlacementGroup, ...] | None
    problems: tuple[str, ...] = field(default=())

    @property
    def readable(self) -> bool:
        return self.status is not None or self.nodes is not None

    @property
    def alive_nodes(self) -> tuple[RayNode, ...]:
        return tuple(n for n in self.nodes or () if n.state == "ALIVE")

    @property
    def dead_nodes(self) -> tuple[RayNode, ...]:
        return tuple(n for n in self.nodes or () if n.state == "DEAD")

    @property
    def node_ips(self) -> tuple[str, ...]:
        return tuple(sorted({n.ip for n in self.alive_nodes if n.ip}))

    @property
    def gpus_per_node(self) -> tuple[float, ...] | None:
        """GPUs of each live node (state API, else `ray status -v` blocks)."""
        if self.nodes is not None:
            return tuple(n.gpus_total or 0.0 for n in self.alive_nodes)
        if self.status is not None and self.status.nodes:
            return tuple(n.gpus_total or 0.0 for n in self.status.nodes)
        return None


def _float(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if number == number and abs(number) < 1e15 else None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _state_items(body: object) -> list[Mapping[str, object]]:
    """The list inside the state API's envelope: {"result": true, "data": {"result":
    {"result": [...]}}}. Anything else is an empty list."""
    data = body.get("data") if isinstance(body, dict) else None
    inner = data.get("result") if isinstance(data, dict) else None
    items = inner.get("result") if isinstance(inner, dict) else None
    if not isinstance(items, list):
        return []
    return [i for i in items[:MAX_ITEMS] if isinstance(i, dict)]


def _resources(value: object) -> Mapping[str, float]:
    if not isinstance(value, dict):
        return {}
    out = {}
    for key, amount in list(value.items())[:256]:
        number = _float(amount)
        if isinstance(key, str) and number is not None:
            out[key] = number
    return out


def nodes_from_state_api(body: object) -> tuple[RayNode, ...]:
    nodes = []
    for item in _state_items(body):
        node_id = _str(item.get("node_id"))
        if not node_id:
            continue
        head = item.get("is_head_node")
        nodes.append(
            RayNode(
                node_id=node_id,
                ip=_str(item.get("node_ip")),
                state=_str(item.get("state")),
                is_head=head if isinstance(head, bool) else None,
                gpus_total=_resources(item.get("resources_total")).get("GPU", 0.0),
                state_message=_str(item.get("state_message")),
            )
        )
    return tuple(nodes)


def placement_groups_from_state_api(body: object) -> tuple[RayPlacementGroup, ...]:
    groups = []
    for item in _state_items(body):
        pg_id = _str(item.get("placement_group_id"))
        if not pg_id:
            continue
        raw_bundles = item.get("bundles")
        bundles = (
            [b for b in raw_bundles[:MAX_ITEMS] if isinstance(b, dict)]
            if isinstance(raw_bundles, list)
            else []
        )
        stats = item.get("stats") if isinstance(item.get("stats"), dict) else {}
        groups.append(
            RayPlacementGroup(
                pg_id=pg_id,
                name=_str(item.get("name")) or None,
                state=_str(item.get("state")),
                strategy=_str(item.get("strategy")),
                bundles=tuple(_resources(b.get("unit_resources")) for b in bundles),
                bundle_nodes=tuple(_str(b.get("node_id")) for b in bundles),
                scheduling_state=_str(stats.get("scheduling_state"))
                if isinstance(stats, dict)
                else None,
            )
        )
    return tuple(groups)


class RayClusterProbe:
    """Reads a Ray cluster. `address` is the GCS address `ray status --address` takes
    (e.g. 10.0.0.1:6379; None = Ray's own default discovery); `dashboard_url` the
    dashboard/state API (e.g. http://10.0.0.1:8265; None = not read)."""

    def __init__(
        self,
        address: str | None = None,
        dashboard_url: str | None = None,
        *,
        ray_executable: str | None = None,
        timeout_s: float = 15.0,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.address = address
        self.dashboard_url = dashboard_url.rstrip("/") if dashboard_url else None
        self.ray_executable = ray_executable or os.environ.get("HEADROOM_RAY") or "ray"
        self.timeout_s = timeout_s
        self.env = dict(env) if env is not None else None

    async def read(self) -> RayCluster:
        problems: list[str] = []
        status_task = asyncio.create_task(self._read_status(problems))
        nodes = groups = None
        if self.dashboard_url:
            nodes, groups = await self._read_state_api(problems)
        status = await status_task
        return RayCluster(
            taken_at=time.monotonic(),
            address=self.address,
            status=status,
            nodes=nodes,
            placement_groups=groups,
            problems=tuple(problems),
        )

    async def read_nodes(self) -> RayCluster:
        """Nodes and placement groups from the state API only: one HTTP round trip, cheap
        enough to poll every second for a node that dies (`ray status` starts a Python
        process each time)."""
        problems: list[str] = []
        nodes = groups = None
        if self.dashboard_url:
            nodes, groups = await self._read_state_api(problems)
        else:
            problems.append("no dashboard URL: node states come with ray status only")
        return RayCluster(time.monotonic(), self.address, None, nodes, groups, tuple(problems))

    async def _read_status(self, problems: list[str]) -> RayStatus | None:
        exe = (
            shutil.which(self.ray_executable)
            if os.sep not in self.ray_executable
            else self.ray_executable
        )
        if not exe or not os.path.exists(exe):
            problems.append(
                f"`{self.ray_executable}` not found: ray status not read (set HEADROOM_RAY)"
            )
            return None
        argv: Sequence[str] = [exe, "status", "-v"]
        if self.address:
            argv = [*argv, "--address", self.address]
        env = dict(os.environ if self.env is None else self.env)
        env.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # never let a probe phone home
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                stdin=asyncio.subprocess.DEVNULL,
                env=env,
            )
        except OSError as exc:
            problems.append(f"ray status could not start: {exc}")
            return None
        try:
            out, err = await asyncio.wait_for(process.communicate(), self.timeout_s)
        except TimeoutError:
            process.kill()
            await process.wait()
            problems.append(f"ray status gave no answer within {self.timeout_s:g} s")
            return None
        text = out[:MAX_BODY_BYTES].decode("utf-8", "replace")
        if process.returncode != 0:
            last = err.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
            problems.append(f"ray status exited {process.returncode}: {last[0][:300]}")
            return None
        status = parse_ray_status(text)
        problems.extend(status.problems)
        return status

    async def _read_state_api(
        self, problems: list[str]
    ) -> tuple[tuple[RayNode, ...] | None, tuple[RayPlacementGroup, ...] | None]:
        assert self.dashboard_url is not None
        results: list[object | None] = []
        async with httpx.AsyncClient(
            timeout=self.timeout_s,
            follow_redirects=False,
            verify=tls_context_for(self.dashboard_url),
        ) as client:
            for path in (
                "/api/v0/nodes?limit=1000",
                "/api/v0/placement_groups?limit=1000&detail=true",
            ):
                results.append(await self._get_json(client, self.dashboard_url + path, problems))
        nodes = nodes_from_state_api(results[0]) if results[0] is not None else None
        groups = placement_groups_from_state_api(results[1]) if results[1] is not None else None
        return nodes, groups

    async def _get_json(
        self, client: httpx.AsyncClient, url: str, problems: list[str]
    ) -> object | None:
        try:
            async with client.stream("GET", url) as response:
                if response.status_code != 200:
                    problems.append(f"{url}: HTTP {response.status_code}")
                    return None
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body.extend(chunk)
                    if len(body) > MAX_BODY_BYTES:
                        problems.append(f"{url}: body over {MAX_BODY_BYTES} bytes, not read")
                        return None
        except httpx.HTTPError as exc:
            problems.append(f"{url}: {type(exc).__name__}: {exc}")
            return None
        try:
            return json.loads(bytes(body))
        except (ValueError, RecursionError):
            problems.append(f"{url}: not JSON")
            return None
