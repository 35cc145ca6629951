"""`--gpus COUNTxNAME[:MEMORY_GIB]`: describe the hardware when NVML is not there.

Examples: `8xH100`, `2xRTX3090`, `4xA100:40`, `2xGPU:16` (an unknown card with 16 GiB; reports
often say only "a 16 GB card"). Several groups may be joined with `+` for a mixed box
(`1xRTX5070Ti:16+1xRTX5090`). `NODESxCOUNTxNAME` says the shape once: `2x8xH100` is two
nodes of eight H100 (16 in all), where `16xH100 --nodes 2` means 16 per node.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from headroom.doctor.gpu_table import GpuModel, find_gpu


class GpuSpecError(ValueError):
    """A --gpus value we cannot read; the message says what form is expected."""


@dataclass(frozen=True)
class GpuSpec:
    """Per-GPU facts for `count` GPUs in one node (or a mixed list via `groups`)."""

    count: int
    name: str
    memory_gib: float  # as NVML reports it
    usable_gib: float  # as CUDA reports it: the base of gpu_memory_utilization
    nvlink: bool
    bandwidth_gbps: float | None
    known: bool  # from the built-in table (else only the memory was given)
    groups: tuple[tuple[int, str, float], ...] = ()  # (count, name, usable_gib) when mixed
    nodes: int | None = None  # from NODESxCOUNTxNAME; None = the spec did not say

    def shape(self, nodes: int | None = None) -> str:
        """The reading printed back: '2 nodes x 8 H100 (16 GPUs in all)'."""
        n = self.nodes or nodes or 1
        if n == 1:
            return f"1 node x {self.count} {self.name}"
        return f"{n} nodes x {self.count} {self.name} ({n * self.count} GPUs in all)"

    @property
    def min_usable_gib(self) -> float:
        if self.groups:
            return min(g[2] for g in self.groups)
        return self.usable_gib

    def describe(self) -> str:
        if self.groups and len(self.groups) > 1:
            return " + ".join(f"{c}x {n} ({u:.2f} GiB)" for c, n, u in self.groups)
        return (
            f"{self.count}x {self.name} ({self.memory_gib:.2f} GiB, {self.usable_gib:.2f} usable)"
        )


_PART = re.compile(
    r"^\s*(?:(?P<nodes>\d+)\s*[xX*]\s*(?=\d))?(?:(?P<count>\d+)\s*[xX*]\s*)?(?P<name>[A-Za-z0-9][A-Za-z0-9 ._-]*?)\s*(?::\s*(?P<mem>\d+(?:\.\d+)?)\s*(?:GiB|GB|G)?)?\s*$"
)


def _one(part: str) -> tuple[int, int | None, str, GpuModel | None, float | None]:
    match = _PART.match(part)
    if not match:
        raise GpuSpecError(
            f"cannot read GPU spec {part!r}: expected COUNTxNAME[:MEMORY_GIB], e.g. 8xH100, 4xA100:40, 2xGPU:16"
        )
    if match.group("count") is None and match.group("name").strip().isdigit():
        # "--gpus 2": a bare number is how many GPUs (of a kind not said), never a GPU named
        # "2" -- read as one GPU it would have hidden the other.
        nodes_said = f"{match.group('nodes')}x" if match.group("nodes") else ""
        memory_said = f":{match.group('mem')}" if match.group("mem") else ""
        return _one(f"{nodes_said}{match.group('name').strip()}xGPU{memory_said}")
    count = int(match.group("count") or 1)
    if count < 1 or count > 1024:
        raise GpuSpecError(f"GPU count must be 1..1024, got {count} in {part!r}")
    nodes = int(match.group("nodes")) if match.group("nodes") else None
    if nodes is not None and not 1 <= nodes <= 1024:
        raise GpuSpecError(f"node count must be 1..1024, got {nodes} in {part!r}")
    name = match.group("name").strip()
    mem = float(match.group("mem")) if match.group("mem") else None
    if mem is not None and not 0.5 <= mem <= 4096:
        raise GpuSpecError(f"GPU memory must be 0.5..4096 GiB, got {mem:g} in {part!r}")
    return count, nodes, name, find_gpu(name), mem


def parse_gpu_spec(text: str) -> GpuSpec:
    """Parse `--gpus`. Raises GpuSpecError with a clear message on bad input."""
    if not text or not text.strip():
        raise GpuSpecError("empty GPU spec: expected COUNTxNAME[:MEMORY_GIB], e.g. 8xH100")
    groups: list[tuple[int, str, float, float, bool, float | None, bool]] = []
    parts = text.split("+")
    node_counts: set[int | None] = set()
    for part in parts:
        count, nodes, name, model, mem = _one(part)
        node_counts.add(nodes)
        if model is None and mem is None:
            raise GpuSpecError(
                f"unknown GPU {name!r}: give its memory, e.g. {count}x{name}:24 "
                "(known names include H100, H200, A100, L40S, RTX4090, RTX3090)"
            )
        if model is not None and mem is None:
            groups.append(
                (
                    count,
                    model.name,
                    model.memory_gib,
                    model.usable_gib,
                    model.has_nvlink,
                    model.bandwidth_gbps,
                    True,
                )
            )
        elif model is not None and mem is not None:
            # A variant of a known card with other memory (4xA100:40): scale the CUDA total.
            usable = round(mem * model.usable_gib / model.memory_gib, 2)
            groups.append(
                (count, model.name, mem, usable, model.has_nvlink, model.bandwidth_gbps, True)
            )
        elif mem is not None:  # (an unknown name without memory was refused above)
            groups.append((count, name, mem, round(mem * 0.984, 2), False, None, False))
    if len(parts) > 1 and node_counts != {None}:
        raise GpuSpecError(
            f"cannot read {text!r}: a node count (NODESxCOUNTxNAME) is for one kind of node; "
            "give mixed GPUs per node and --nodes"
        )
    first = groups[0]
    tightest = min(groups, key=lambda g: g[3])
    return GpuSpec(
        count=sum(g[0] for g in groups),
        name=first[1] if len(groups) == 1 else "+".join(g[1] for g in groups),
        memory_gib=tightest[2],
        usable_gib=tightest[3],
        nvlink=all(g[4] for g in groups),
        bandwidth_gbps=tightest[5],
        known=all(g[6] for g in groups),
        groups=tuple((g[0], g[1], g[3]) for g in groups),
        nodes=next(iter(node_counts)) if len(parts) == 1 else None,
    )


def parse_gpu_count(text: str) -> int:
    """The GPU count of a --gpus value whose memory is unknown (`4xGPU`, `2xMI300`): the
    doctor still reasons with the count (head divisibility, TP within the node). Raises
    GpuSpecError for text that is not COUNTxNAME at all."""
    if not text or not text.strip():
        raise GpuSpecError("empty GPU spec: expected COUNTxNAME[:MEMORY_GIB], e.g. 8xH100")
    return sum(_one(part)[0] for part in text.split("+"))


def read_gpus_option(text: str) -> tuple[GpuSpec | None, int]:
    """`--gpus` for the doctor: (the spec, its count) when the memory is known, else (None,
    the count). Raises GpuSpecError only for text that is not COUNTxNAME[:MEMORY_GIB]."""
    try:
        spec = parse_gpu_spec(text)
    except GpuSpecError:
        count = parse_gpu_count(text)  # a malformed spec raises here with its own message
        return None, count
    return spec, spec.count


def spec_of_size(count: int, usable_gib: float) -> GpuSpec:
    """`count` GPUs of a kind not named whose CUDA total is `usable_gib`: `--gpus N` (a count
    only) beside a log that says each GPU's total (PyTorch's OOM line, vLLM's own), as
    `--gpus NxGPU:MEM` would have said it (NVML's memory is CUDA's over 0.984)."""
    return GpuSpec(
        count=count,
        name="GPU",
        memory_gib=round(usable_gib / 0.984, 2),
        usable_gib=round(usable_gib, 2),
        nvlink=False,
        bandwidth_gbps=None,
        known=False,
    )


def spec_from_snapshot(snapshot) -> GpuSpec | None:
    """A GpuSpec from an NVML GpuSnapshot (engineer 3's type), or None when it has no GPUs."""
    if snapshot is None or not getattr(snapshot, "available", False):
        return None
    readings = [g for g in getattr(snapshot, "gpus", ()) if not getattr(g, "lost", False)]
    totals = [g.memory_total for g in readings if getattr(g, "memory_total", None)]
    if not readings or not totals:
        return None
    name = readings[0].name or "GPU"
    model = find_gpu(name)
    mem_gib = round(min(totals) / 2**30, 2)
    usable = round(mem_gib * (model.usable_gib / model.memory_gib if model else 0.984), 2)
    nvlink = any(link.active for g in readings for link in getattr(g, "nvlinks", ()) if link.active)
    return GpuSpec(
        count=len(readings),
        name=model.name if model else name,
        memory_gib=mem_gib,
        usable_gib=usable,
        nvlink=nvlink or bool(model and model.has_nvlink and len(readings) == 1),
        bandwidth_gbps=model.bandwidth_gbps if model else None,
        known=model is not None,
    )


def resolve_nodes(spec: GpuSpec, flag_nodes: int | None) -> int:
    """Nodes from `--gpus NODESxCOUNTxNAME` or `--nodes`; both saying different things is an
    error rather than a guess (`16xH100 --nodes 2` means 16 per node, 32 in all)."""
    if flag_nodes is not None and flag_nodes < 1:
        raise GpuSpecError("--nodes must be positive")
    if spec.nodes is not None and flag_nodes is not None and flag_nodes != spec.nodes:
        raise GpuSpecError(
            f"--gpus says {spec.nodes} nodes and --nodes says {flag_nodes}: give one of them"
        )
    return spec.nodes or flag_nodes or 1
