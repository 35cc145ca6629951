"""Which GPUs to use for each tensor-parallel size, and whether their links suit TP.

The reasoning follows ../shared/reference/gpu-facts.md section 2:

* TP all-reduce runs on every layer, so a TP group is as fast as its slowest pairwise link
  (NCCL rings are bounded by the slowest hop).
* NV# = bonded NVLinks: roughly 20-25 GB/s per link per direction (NVLink 3/4; 50 on NVLink 5).
  NV18 on an H100 NVSwitch node is ~450 GB/s per direction: TP of any size is fine.
* PIX/PXB: PCIe peer-to-peer behind switches (NCCL's default P2P cutoff is PXB): about
  12 / 24 / 48 GB/s per direction on Gen3 / Gen4 / Gen5 x16. Tolerable for TP=2 or 4.
* PHB/NODE/SYS(SOC): the path crosses a CPU host bridge or the socket interconnect, NCCL
  turns P2P off and stages every all-reduce through host shared memory (SHM); SYS also
  crosses QPI/UPI (NCCL models 6-40 GB/s). Keep TP at 2 there, or use pipeline parallelism.
* Mixed NVLink + PCIe (bridged pairs): TP inside a linked pair is fast, wider groups are not.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from headroom.probes.topology_types import TopologyMatrix

__all__ = [
    "TpVerdict",
    "tp_verdicts",
    "judge_gpu_set",
    "NicPath",
    "gpu_nic_paths",
    "link_rank",
    "verdict_to_json",
    "default_tp_sizes",
]

_PCIE_RANK = {"PIX": 500, "PXB": 400, "PHB": 300, "NODE": 200, "SYS": 100, "SOC": 100}
_EXHAUSTIVE_LIMIT = 5000  # subsets to score exhaustively (C(8, 4) = 70); beyond that, greedy


@dataclass(frozen=True)
class TpVerdict:
    """The best GPU set for one TP size, its weakest link, and how well that suits TP."""

    tp: int
    gpus: tuple[int, ...]
    weakest_link: str | None
    level: str  # "good" | "tolerable" | "poor" | "impossible" | "unknown"
    reasons: tuple[str, ...]


def link_rank(code: str) -> int:
    """Higher is faster. NV# ranks above every PCIe path, more links above fewer; 0 = unknown."""
    match = re.fullmatch(r"NV(\d+)", code)
    if match:
        return 1000 + int(match.group(1))
    return _PCIE_RANK.get(code, 0)


def default_tp_sizes(gpu_count: int) -> list[int]:
    """1, 2, 4, 8 ... up to the number of GPUs (TP sizes that divide common head counts)."""
    sizes, size = [], 1
    while size <= gpu_count:
        sizes.append(size)
        size *= 2
    return sizes


def _pairs(subset: Sequence[int]) -> list[tuple[int, int]]:
    return list(itertools.combinations(subset, 2))


def _score(matrix: TopologyMatrix, subset: Sequence[int]) -> tuple:
    ranks = [link_rank(matrix.links[i][j]) for i, j in _pairs(subset)]
    weakest = min(ranks)
    numa = {matrix.numa_affinity[i] for i in subset} if matrix.numa_affinity else set()
    # Best weakest link first, then fewest weakest hops, then fastest overall, then one NUMA node.
    return (weakest, -ranks.count(weakest), sum(ranks), -len(numa))


def best_subset(matrix: TopologyMatrix, size: int) -> tuple[int, ...]:
    """The best-connected `size` GPUs; ties go to the lowest indices."""
    n = len(matrix.gpus)
    if size <= 1:
        return tuple(range(size))
    if math.comb(n, size) <= _EXHAUSTIVE_LIMIT:
        best, best_score = None, None
        for subset in itertools.combinations(range(n), size):
            score = _score(matrix, subset)
            if best_score is None or score > best_score:
                best, best_score = subset, score
        return tuple(best or ())
    # Greedy for very wide boxes: start from the best pair, add whichever GPU hurts least.
    start = max(_pairs(range(n)), key=lambda p: link_rank(matrix.links[p[0]][p[1]]))
    chosen = list(start)
    while len(chosen) < size:
        rest = [g for g in range(n) if g not in chosen]
        chosen.append(max(rest, key=lambda g: _score(matrix, [*chosen, g])))
    return tuple(sorted(chosen))


def _nv_bandwidth(code: str) -> str:
    links = int(code[2:])
    return (
        f"{code} = {links} bonded NVLinks, about {links * 25} GB/s per direction at NVLink 3/4 "
        f"line rate (~{links * 20} GB/s effective; twice that on NVLink 5)"
    )


def _pcie_reason(code: str) -> str:
    if code in ("PIX", "PXB"):
        return (
            f"{code}: PCIe peer-to-peer through PCIe switches (NCCL uses P2P up to PXB), about "
            "12 / 24 / 48 GB/s per direction on Gen3 / Gen4 / Gen5 x16, an order of magnitude "
            "below NVLink"
        )
    if code in ("PHB", "NODE"):
        return (
            f"{code}: the path crosses a CPU host bridge, so NCCL turns P2P off (its default "
            "cutoff is PXB) and stages every all-reduce through host shared memory (SHM)"
        )
    return (
        f"{code}: the path crosses the CPU socket interconnect (QPI/UPI/Infinity Fabric, which "
        "NCCL models at 6-40 GB/s) and NCCL stages all-reduce through host memory"
    )


def _linked_pairs(matrix: TopologyMatrix) -> list[tuple[int, int]]:
    return [
        (i, j) for i, j in _pairs(range(len(matrix.gpus))) if matrix.links[i][j].startswith("NV")
    ]


def _verdict(
    matrix: TopologyMatrix,
    tp: int,
    gpu_names: Sequence[str] | None,
    chosen: tuple[int, ...] | None = None,
) -> TpVerdict:
    n = len(matrix.gpus)
    if tp < 1:
        return TpVerdict(tp, (), None, "impossible", ("TP size must be at least 1",))
    if tp > n:
        return TpVerdict(
            tp, (), None, "impossible", (f"only {n} GPU(s) in this matrix; TP={tp} needs {tp}",)
        )
    if tp == 1:
        return TpVerdict(1, chosen or (0,), None, "good", ("one GPU: no tensor-parallel traffic",))
    subset = chosen if chosen is not None else best_subset(matrix, tp)
    codes = [matrix.links[i][j] for i, j in _pairs(subset)]
    weakest = min(codes, key=link_rank)
    names = ", ".join(str(g) for g in subset)
    reasons: list[str] = []
    if matrix.confidence != "high":
        reasons.append(f"the matrix was read with {matrix.confidence} confidence; check it")
    if link_rank(weakest) == 0:
        reasons.append(f"GPUs {names}: link code {weakest!r} is not one nvidia-smi prints")
        return TpVerdict(tp, subset, weakest, "unknown", tuple(reasons))
    if weakest.startswith("NV"):
        strongest = max(codes, key=link_rank)
        reasons.append(f"GPUs {names}: every pair is NVLink; weakest {_nv_bandwidth(weakest)}")
        if strongest != weakest:
            reasons.append(
                f"links are uneven ({strongest} to {weakest}): the ring runs at {weakest}; on "
                "identical GPUs that can mean NVLinks are down (check `nvidia-smi nvlink -s`)"
            )
        return TpVerdict(tp, subset, weakest, "good", tuple(reasons))

    reasons.append(f"GPUs {names}: weakest link {_pcie_reason(weakest)}")
    if weakest in ("PIX", "PXB"):
        level = "tolerable" if tp <= 4 else "poor"
        if level == "poor":
            reasons.append(f"TP={tp} over PCIe P2P spends much of each step in all-reduce")
    else:
        level = "tolerable" if tp == 2 else "poor"
        if tp > 2:
            reasons.append(
                f"keep TP at 2 or use pipeline parallelism: e.g. --tensor-parallel-size 2 "
                f"--pipeline-parallel-size {tp // 2} instead of TP={tp}"
            )
    if tp > 2:
        reasons.append(
            "vLLM turns its custom all-reduce off for more than two GPUs without a full NVLink mesh"
        )
    linked = [p for p in _pairs(subset) if matrix.links[p[0]][p[1]].startswith("NV")]
    if linked:
        pairs = ", ".join(f"{i}-{j}" for i, j in linked)
        reasons.append(
            f"NVLink joins only some of these GPUs ({pairs}): restrict TP to a linked pair "
            "(TP=2) and use pipeline parallelism across pairs"
        )
    elif _linked_pairs(matrix):
        reasons.append("NVLink exists elsewhere in the box, but not inside this GPU set")
    if gpu_names and _expects_nvlink(gpu_names) and not _linked_pairs(matrix):
        reasons.append(
            "these GPUs normally talk over NVLink/NVSwitch but the matrix shows no NV# link: "
            "check nvidia-fabricmanager and `nvidia-smi nvlink -s`"
        )
    return TpVerdict(tp, subset, weakest, level, tuple(reasons))


def _expects_nvlink(gpu_names: Sequence[str]) -> bool:
    """SXM / HGX parts are built with NVLink; PCIe cards are not."""
    tags = ("SXM", "HBM3", "H200", "H20", "H800", "B200", "B300", "GB200")
    return any(any(t in name for t in tags) and "PCIe" not in name for name in gpu_names)


def tp_verdicts(
    matrix: TopologyMatrix,
    tp_sizes: Sequence[int] | None = None,
    *,
    gpu_names: Sequence[str] | None = None,
) -> list[TpVerdict]:
    """One verdict per TP size (default 1, 2, 4, ... up to the GPU count). Never raises.

    `gpu_names` (from NVML, optional) lets the verdict notice NVLink-class GPUs whose
    matrix shows no NVLink at all.
    """
    sizes = list(tp_sizes) if tp_sizes is not None else default_tp_sizes(len(matrix.gpus))
    if matrix.confidence == "unreadable" or matrix.kind != "topo-m" or not matrix.links:
        why = matrix.problems[0] if matrix.problems else "no link matrix"
        return [TpVerdict(tp, (), None, "unknown", (why,)) for tp in sizes]
    return [_verdict(matrix, tp, gpu_names) for tp in sizes]


def judge_gpu_set(
    matrix: TopologyMatrix, gpus: Sequence[int], *, gpu_names: Sequence[str] | None = None
) -> TpVerdict:
    """Verdict for the GPUs a server actually uses (e.g. from `visible_gpus`), not the best set.

    Adds a reason when a better-connected set of the same size exists in the box.
    """
    chosen = tuple(sorted(set(gpus)))
    n = len(matrix.gpus)
    if matrix.confidence == "unreadable" or matrix.kind != "topo-m" or not matrix.links:
        why = matrix.problems[0] if matrix.problems else "no link matrix"
        return TpVerdict(len(chosen), chosen, None, "unknown", (why,))
    if not chosen or any(g < 0 or g >= n for g in chosen):
        return TpVerdict(
            len(chosen),
            chosen,
            None,
            "unknown",
            (f"GPU indices {list(chosen)} are not in this {n}-GPU matrix",),
        )
    verdict = _verdict(matrix, len(chosen), gpu_names, chosen)
    if len(chosen) > 1:
        best = best_subset(matrix, len(chosen))
        if _score(matrix, best) > _score(matrix, chosen):
            better = _verdict(matrix, len(chosen), gpu_names, best)
            note = (
                f"GPUs {', '.join(map(str, best))} are better connected (weakest link "
                f"{better.weakest_link}); set CUDA_VISIBLE_DEVICES={','.join(map(str, best))}"
            )
            verdict = TpVerdict(
                verdict.tp, chosen, verdict.weakest_link, verdict.level, (*verdict.reasons, note)
            )
    return verdict


@dataclass(frozen=True)
class NicPath:
    """The closest NIC of one GPU, and whether GPUDirect RDMA can use it."""

    gpu: int
    nic: str | None  # column name (NIC0, mlx5_0); None when the matrix has no NICs
    name: str | None  # device name from the NIC legend
    link: str | None
    gpudirect_rdma: bool | None  # NCCL enables GDR when the path is PXB or better


def gpu_nic_paths(matrix: TopologyMatrix) -> list[NicPath]:
    """Per GPU, the best-connected NIC (what multi-node TP/PP traffic would use)."""
    paths = []
    for i in range(len(matrix.gpus)):
        row = matrix.gpu_nic_links[i] if i < len(matrix.gpu_nic_links) else ()
        if not matrix.nics or not row:
            paths.append(NicPath(i, None, None, None, None))
            continue
        k = max(range(len(row)), key=lambda c: (link_rank(row[c]), -c))
        nic = matrix.nics[k]
        known = link_rank(row[k]) > 0
        paths.append(
            NicPath(
                i,
                nic,
                matrix.nic_names.get(nic),
                row[k],
                row[k] in ("PIX", "PXB") if known else None,
            )
        )
    return paths


def verdict_to_json(verdict: TpVerdict) -> dict:
    """One entry of `headroom topo --json`'s "verdicts" list."""
    return {
        "tp": verdict.tp,
        "gpus": list(verdict.gpus),
        "weakest_link": verdict.weakest_link,
        "level": verdict.level,
        "reasons": list(verdict.reasons),
    }
