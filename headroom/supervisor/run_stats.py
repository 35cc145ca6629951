"""What a run measured while it ran (for the journal's summary), and the context facts the
journal records about where it ran (GPUs, topology, model shape). Every probe is optional:
a missing module or an unreadable value leaves None, never an error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

from headroom.probes.model import load_model_shape


def _max(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


@dataclass
class RunStats:
    """Running maxima/last values of the metrics that matter for the comparison table."""

    throughput_tok_s: float | None = None  # peak generation tokens/s seen
    prompt_tok_s: float | None = None
    ttft_p95_s: float | None = None  # last windowed p95 seen while requests were flowing
    itl_p95_s: float | None = None
    e2e_p95_s: float | None = None
    peak_kv_usage: float | None = None
    preemptions: float | None = None  # counter value at the last scrape
    peak_gpu_memory_bytes: int | None = None
    samples: int = 0
    history: list = field(default_factory=list)  # recent ServerMetrics for the doctor

    def observe_metrics(self, m) -> None:
        """Feed one headroom.probes.metrics.ServerMetrics."""
        if getattr(m, "state", None) != "up":
            return
        total = m.total
        self.samples += 1
        self.history = (self.history + [m])[-60:]
        self.throughput_tok_s = _max(self.throughput_tok_s, total.generation_tokens_per_s)
        self.prompt_tok_s = _max(self.prompt_tok_s, total.prompt_tokens_per_s)
        self.peak_kv_usage = _max(self.peak_kv_usage, total.kv_cache_usage)
        if total.preemptions_total is not None:
            self.preemptions = total.preemptions_total
        for name, lat in (("ttft_p95_s", total.ttft), ("itl_p95_s", total.itl)):
            if lat is not None and lat.p95 is not None and lat.count:
                setattr(self, name, lat.p95)
        if total.e2e is not None and total.e2e.p95 is not None and total.e2e.count:
            self.e2e_p95_s = total.e2e.p95

    def observe_gpus(self, snapshot, gpu_indices: Sequence[int] | None = None) -> None:
        """Feed one headroom.probes.nvml.GpuSnapshot; tracks the peak of used memory."""
        if snapshot is None or not getattr(snapshot, "available", False):
            return
        used = [
            g.memory_used
            for g in snapshot.gpus
            if (gpu_indices is None or g.index in gpu_indices) and g.memory_used is not None
        ]
        if used:
            total = int(sum(used))
            if self.peak_gpu_memory_bytes is None or total > self.peak_gpu_memory_bytes:
                self.peak_gpu_memory_bytes = total

    def summary(self) -> dict:
        data = dataclasses.asdict(self)
        data.pop("history")
        return data


def gpus_from_snapshot(snapshot, gpu_indices: Sequence[int] | None = None) -> list[dict]:
    if snapshot is None or not getattr(snapshot, "available", False):
        return []
    return [
        {
            "index": g.index,
            "name": g.name,
            "uuid": g.uuid,
            "memory_total": g.memory_total,
            "pci_bus_id": g.pci_bus_id,
        }
        for g in snapshot.gpus
        if gpu_indices is None or g.index in gpu_indices
    ]


def topology_summary(matrix, gpu_indices: Sequence[int] | None = None) -> str | None:
    """'GPU0-GPU1 NV18, GPU0-GPU2 SYS' for the GPUs in use; None when unreadable."""
    if matrix is None or getattr(matrix, "confidence", "unreadable") == "unreadable":
        return None
    names = list(matrix.gpus)
    picked = [
        i for i, name in enumerate(names) if gpu_indices is None or _gpu_number(name) in gpu_indices
    ]
    pairs = []
    for a_pos, a in enumerate(picked):
        for b in picked[a_pos + 1 :]:
            try:
                pairs.append(f"{names[a]}-{names[b]} {matrix.links[a][b]}")
            except IndexError:
                continue
    if not pairs:
        return f"{len(picked)} GPU" if picked else None
    return ", ".join(pairs)


def _gpu_number(name: str) -> int | None:
    digits = "".join(ch for ch in name if ch.isdigit())
    return int(digits) if digits else None


def model_shape_dict(model: str | None) -> dict | None:
    """The model's shape from headroom.probes.model (local files only), or None."""
    if not model:
        return None
    try:
        shape = load_model_shape(model)
    except Exception:  # unknown model, probe missing, unreadable config: no shape, no crash
        return None
    try:
        return {k: v for k, v in dataclasses.asdict(shape).items() if _plain(v)}
    except TypeError:
        return None


def _plain(value: object) -> bool:
    return value is None or isinstance(value, str | int | float | bool | dict | list)
