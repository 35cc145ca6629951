"""`headroom topo`: print the GPU link matrix and judge each tensor-parallel size.

    headroom topo                      # this machine: nvidia-smi topo -m, else NVML
    headroom topo --file saved.txt     # a pasted/saved `nvidia-smi topo -m` (use - for stdin)
    headroom topo --tp 4 --json        # one TP size, machine-readable

Exit status: 0 when a matrix was read, 1 when none could be (no nvidia-smi and no NVML,
or an unreadable file), 2 for usage errors.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from headroom.probes.nvml import NvmlProbe
from headroom.probes.topology import (
    TopologyMatrix,
    matrix_to_json,
    parse_topo_text,
    read_topology,
    tp_verdicts,
    verdict_to_json,
)
from headroom.probes.topology_text import decode_topo_bytes
from headroom.probes.topology_verdict import TpVerdict


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="headroom topo",
        description="Read `nvidia-smi topo -m` and say which GPUs suit each tensor-parallel size.",
    )
    parser.add_argument("--file", "-f", help="a saved `nvidia-smi topo -m` output ('-' = stdin)")
    parser.add_argument(
        "--tp",
        action="append",
        default=None,
        metavar="N",
        help="TP size(s) to judge, e.g. --tp 4 or --tp 2,4 (default 1, 2, 4, ... up to the GPU count)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print JSON (keys documented in README)"
    )
    return parser


def _tp_sizes(values: list[str] | None) -> list[int] | None:
    if not values:
        return None
    sizes: list[int] = []
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if not part.isdigit() or int(part) < 1:
                raise ValueError(f"--tp wants positive integers, got {part!r}")
            sizes.append(int(part))
    return sizes


def _read_matrix(file: str | None) -> tuple[TopologyMatrix, list[str] | None]:
    """The matrix, plus the GPU names NVML reports when reading this machine."""
    if file is not None:
        if file == "-":
            text = sys.stdin.read()
        else:
            text = decode_topo_bytes(Path(file).read_bytes())
        return parse_topo_text(text, source="file"), None
    probe = NvmlProbe()
    try:
        snap = probe.read()
        names = [g.name for g in snap.gpus if g.name] if snap.available else None
        return asyncio.run(read_topology(probe.nvml)), names
    finally:
        probe.close()


def render_matrix(matrix: TopologyMatrix) -> list[str]:
    """The matrix as a fixed-width table: GPU rows, GPU then NIC columns, then affinities."""
    columns = list(matrix.gpus) + [matrix.nic_names.get(n, n) for n in matrix.nics]
    width = max([5, *(len(c) + 1 for c in columns)])
    lines = ["".ljust(6) + "".join(c.ljust(width) for c in columns) + "CPU affinity    NUMA"]
    for i, gpu in enumerate(matrix.gpus):
        cells = list(matrix.links[i]) + list(
            matrix.gpu_nic_links[i] if matrix.gpu_nic_links else ()
        )
        cpu = matrix.cpu_affinity[i] if i < len(matrix.cpu_affinity) else None
        numa = matrix.numa_affinity[i] if i < len(matrix.numa_affinity) else None
        lines.append(
            gpu.ljust(6)
            + "".join(c.ljust(width) for c in cells)
            + (cpu or "-").ljust(16)
            + (numa or "-")
        )
    return lines


def render_verdict(verdict: TpVerdict) -> list[str]:
    gpus = ",".join(str(g) for g in verdict.gpus) or "-"
    link = verdict.weakest_link or "-"
    lines = [f"  TP={verdict.tp:<3} {verdict.level:<10} GPUs {gpus:<16} weakest link {link}"]
    lines += [f"      - {reason}" for reason in verdict.reasons]
    return lines


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    try:
        sizes = _tp_sizes(args.tp)
        matrix, gpu_names = _read_matrix(args.file)
    except ValueError as exc:
        print(f"headroom topo: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"headroom topo: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    verdicts = tp_verdicts(matrix, sizes, gpu_names=gpu_names)
    if args.json:
        payload = matrix_to_json(matrix)
        payload["verdicts"] = [verdict_to_json(v) for v in verdicts]
        print(json.dumps(payload, indent=2))
        return 1 if matrix.confidence == "unreadable" else 0
    if matrix.confidence == "unreadable":
        why = "; ".join(matrix.problems) or "no matrix"
        print(f"headroom topo: no GPU topology could be read: {why}", file=sys.stderr)
        return 1
    print(f"GPU topology (source: {matrix.source}, confidence: {matrix.confidence})")
    print()
    print("\n".join(render_matrix(matrix)))
    if matrix.problems:
        print()
        print("Problems while reading:")
        print("\n".join(f"  - {p}" for p in matrix.problems))
    print()
    print("Tensor-parallel verdicts:")
    for verdict in verdicts:
        print("\n".join(render_verdict(verdict)))
    return 0
