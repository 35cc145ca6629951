"""The topology probe's snapshot type, apart from the parser and the TP verdicts.

Both `topology.py` (the parser, which re-exports these names) and `topology_verdict.py` /
`topology_from_nvml.py` (which read or build a matrix) import it, so none of them imports
another in a circle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from headroom.probes.errors import ProbeError, SourceMissing, UnreadableInput

__all__ = ["TopologyMatrix", "unreadable"]


@dataclass(frozen=True)
class TopologyMatrix:
    """The GPU x GPU link matrix, GPU x NIC links, affinities, and how far to trust them."""

    gpus: tuple[str, ...]
    links: tuple[tuple[str, ...], ...]
    nics: tuple[str, ...]
    gpu_nic_links: tuple[tuple[str, ...], ...]
    cpu_affinity: tuple[str | None, ...]
    numa_affinity: tuple[str | None, ...]
    nic_names: Mapping[str, str]
    confidence: str  # "high" | "low" | "unreadable"
    problems: tuple[str, ...]
    source: str  # "nvidia-smi" | "nvml" | "file"
    kind: str = field(default="topo-m")  # "topo-m" | "p2p" (a `topo -p2p` status matrix)

    @property
    def failure(self) -> ProbeError | None:
        """Why there is no matrix, in the probes' error tree; None when it was read."""
        if self.confidence != "unreadable":
            return None
        why = "; ".join(self.problems) or "topology unreadable"
        # A text given as a file that holds no matrix is bad input; otherwise the machine
        # had no nvidia-smi / NVML matrix to give.
        return UnreadableInput(why) if self.source == "file" else SourceMissing(why)


def unreadable(problem: str, source: str = "file") -> TopologyMatrix:
    return TopologyMatrix((), (), (), (), (), (), {}, "unreadable", (problem,), source)
