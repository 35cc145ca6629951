"""`nvidia-smi topo -m`: parse the printed matrix into link codes, and read it live.

Real outputs are messy (see tests/fixtures/topo/SOURCES.md): tabs expanded to spaces or lost
(merging `NODENODE`, `NIC8NIC9`), indented or re-wrapped lines, colour codes with or without
their ESC byte, NIC columns named `NIC0` or `mlx5_0`, empty affinity cells, legends missing,
truncated or from old drivers (`SOC`). The parser accepts all of these, then validates the
GPU block (square, symmetric, `X` on the diagonal, known codes). Anything it had to doubt is
listed in `problems`, and `confidence` drops to "low" (or "unreadable") instead of guessing.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
from typing import Any

from headroom.probes.nvml_calls import load_nvml_module
from headroom.probes.topology_from_nvml import matrix_from_nvml
from headroom.probes.topology_text import LogicalRow, split_sections
from headroom.probes.topology_types import TopologyMatrix, unreadable
from headroom.probes.topology_verdict import TpVerdict, tp_verdicts, verdict_to_json

__all__ = [
    "TopologyMatrix",
    "unreadable",
    "TpVerdict",
    "tp_verdicts",
    "verdict_to_json",
    "parse_topo_text",
    "read_topology",
    "matrix_to_json",
    "run_nvidia_smi_topo",
    "LINK_CODE",
]

# Codes `topo -m` prints (current and legacy legends), and the `topo -p2p` status codes.
LINK_CODE = re.compile(r"X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC")
_P2P_CODES = {"OK", "CNS", "GNS", "TNS", "NS", "DR", "U"}
# Longest alternatives first so a merged "GNSNS" splits as GNS + NS, never G? + NS.
_ANY_CODE = re.compile(r"NV\d+|NODE|PIX|PXB|PHB|SYS|SOC|GNS|CNS|TNS|OK|NS|DR|X|U")
_AFFINITY_LABELS = (
    ("cpu", re.compile(r"CPU\s*Affinity", re.I)),
    ("numa", re.compile(r"NUMA\s*Affinity", re.I)),
    ("gpu_numa", re.compile(r"GPU\s*NUMA\s*ID", re.I)),
)
_DEVICE_PIECE = re.compile(r"GPU\d+|NIC\d+")
_GPU = re.compile(r"GPU\d+")


def split_codes(token: str) -> tuple[list[str], str]:
    """Peel link codes off the front of a token: 'NODENODE' -> (['NODE','NODE'], '')."""
    codes: list[str] = []
    pos = 0
    while pos < len(token):
        match = _ANY_CODE.match(token, pos)
        if not match:
            break
        codes.append(match.group(0))
        pos = match.end()
    return codes, token[pos:]


def _header_columns(text: str) -> tuple[list[str], list[str]]:
    """Device column names and affinity column keys ("cpu", "numa", "gpu_numa") in order."""
    found: list[tuple[int, str]] = []
    for key, pattern in _AFFINITY_LABELS:
        for match in pattern.finditer(text):
            found.append((match.start(), key))
        text = pattern.sub(" ", text)
    devices: list[str] = []
    for token in text.split():
        pieces = _DEVICE_PIECE.findall(token)
        if pieces and "".join(pieces) == token:
            devices.extend(pieces)  # a lost tab merged "NIC8NIC9"
        else:
            devices.append(token)
    return devices, [key for _, key in sorted(found)]


def _row_cells(tokens: list[str], want: int) -> tuple[list[str], list[str]]:
    """First `want` link cells of a row (splitting merged codes), then the affinity tokens."""
    cells: list[str] = []
    rest: list[str] = []
    for token in tokens:
        if len(cells) < want and not rest:
            codes, remainder = split_codes(token)
            take = codes[: want - len(cells)]
            cells.extend(take)
            leftover = "".join(codes[len(take) :]) + remainder
            if leftover:
                rest.append(leftover)
        else:
            rest.append(token)
    return cells, rest


def _affinities(tokens: list[str], keys: list[str]) -> dict[str, str | None]:
    """Assign affinity tokens to columns. A missing cell is the CPU affinity in every real
    sample (cgroup-restricted jobs print it empty), so short rows are aligned to the right."""
    split: list[str] = []
    for token in tokens:
        match = re.fullmatch(r"(.+?)(N/A)", token)
        split.extend(match.groups() if match else (token,))  # "0N/A": collapsed spacing
    values: dict[str, str | None] = dict.fromkeys(keys)
    if len(split) < len(keys):
        split = [""] * (len(keys) - len(split)) + split
    for key, value in zip(keys, split, strict=False):
        values[key] = None if value in ("", "N/A") else value
    return values


def parse_topo_text(text: str, source: str = "file") -> TopologyMatrix:
    """Parse `nvidia-smi topo -m` output as printed, pasted or saved. Never raises."""
    try:
        return _parse(text, source)
    except Exception as exc:  # noqa: BLE001 - bad input must give a verdict, not a traceback
        return unreadable(f"could not parse the matrix: {exc}", source)


def _parse(text: str, source: str) -> TopologyMatrix:
    sections = split_sections(text)
    # Doubts lower confidence; notes record repairs and NIC-side oddities that do not.
    problems: list[str] = []
    notes: list[str] = list(dict.fromkeys(sections.notes))
    if sections.header is None and not sections.rows:
        return unreadable("no `nvidia-smi topo -m` matrix found (no GPU0 header or rows)", source)
    if sections.header is not None:
        devices, affinity_keys = _header_columns(sections.header)
    else:
        problems.append("no header line: columns inferred from the row labels")
        devices = [row.label for row in sections.rows]
        affinity_keys = ["cpu", "numa", "gpu_numa"]
    gpus = [d for d in devices if _GPU.fullmatch(d)]
    nics = [d for d in devices if not _GPU.fullmatch(d)]
    if not gpus:
        return unreadable("the header names no GPU columns", source)

    rows: dict[str, LogicalRow] = {}
    for row in sections.rows:
        if row.label in rows:
            problems.append(f"row {row.label} appears twice; the first one is used")
            continue
        if row.label not in devices:
            where = problems if _GPU.fullmatch(row.label) else notes
            where.append(f"row {row.label} has no matching column")
            continue
        rows[row.label] = row

    links: list[tuple[str, ...]] = []
    gpu_nic: list[tuple[str, ...]] = []
    cpu: list[str | None] = []
    numa: list[str | None] = []
    parsed: dict[str, list[str]] = {}
    for name in devices:
        device_row = rows.get(name)
        if device_row is None:
            continue
        cells, rest = _row_cells(device_row.tokens, len(devices))
        if len(device_row.tokens) < len(cells) + len(rest) or any(
            len(split_codes(t)[0]) > 1 for t in device_row.tokens
        ):
            notes.append(f"row {name} had merged cells (a lost tab); split them")
        if len(cells) < len(devices):
            where = problems if name in gpus else notes
            where.append(f"row {name} has {len(cells)} of {len(devices)} cells")
        parsed[name] = cells + ["?"] * (len(devices) - len(cells))
        if name in gpus:
            aff = _affinities(rest, affinity_keys)
            cpu.append(aff.get("cpu"))
            numa.append(aff.get("numa"))
        elif rest:
            notes.append(f"row {name} has unexpected trailing text {' '.join(rest)!r}")

    missing = [g for g in gpus if g not in parsed]
    present = [g for g in gpus if g in parsed]
    if missing and not present:
        return unreadable(f"GPU rows missing: {', '.join(missing)}", source)
    for g in missing:
        # A truncated paste loses the last rows, but their columns survive in the rows above:
        # rebuild the row by symmetry, and say the matrix can no longer be fully checked.
        col = devices.index(g)
        parsed[g] = [parsed[p][col] if p in parsed else "?" for p in devices]
        parsed[g][col] = "X"
        cpu.insert(gpus.index(g), None)
        numa.insert(gpus.index(g), None)
    if missing:
        problems.append(
            f"GPU rows missing (output truncated?): {', '.join(missing)}; rebuilt from their "
            "columns, unchecked"
        )
    gpu_cols = [devices.index(g) for g in gpus]
    nic_cols = [devices.index(n) for n in nics]
    for g in gpus:
        links.append(tuple(parsed[g][c] for c in gpu_cols))
        gpu_nic.append(tuple(parsed[g][c] for c in nic_cols))

    kind = _validate_gpu_block(gpus, links, problems)
    confidence = "high" if not problems else "low"
    problems.extend(notes)
    problems.extend(_nic_notes(nics, parsed, gpus, devices, gpu_nic))
    # Old drivers name NIC columns by device (mlx5_0); newer ones NICn plus a legend.
    nic_names = {
        nic: sections.nic_legend.get(nic, nic)
        for nic in nics
        if nic in sections.nic_legend or not re.fullmatch(r"NIC\d+", nic)
    }
    unnamed = [n for n in nics if re.fullmatch(r"NIC\d+", n) and n not in sections.nic_legend]
    if unnamed and sections.nic_legend:
        problems.append(f"NIC legend does not name {', '.join(unnamed)}")
    return TopologyMatrix(
        gpus=tuple(gpus),
        links=tuple(links),
        nics=tuple(nics),
        gpu_nic_links=tuple(gpu_nic),
        cpu_affinity=tuple(cpu),
        numa_affinity=tuple(numa),
        nic_names=nic_names,
        confidence=confidence,
        problems=tuple(problems),
        source=source,
        kind=kind,
    )


def _validate_gpu_block(gpus: list[str], links: list[tuple[str, ...]], problems: list[str]) -> str:
    """Square, X diagonal, symmetric, known codes. Returns the matrix kind."""
    cells = {c for row in links for c in row}
    if cells and cells <= _P2P_CODES | {"X", "?"} and cells - {"X", "U", "?"}:
        problems.append(
            "this is `nvidia-smi topo -p2p` output (P2P status: OK, CNS, GNS = GPU not "
            "supported, ...), not link types; run `nvidia-smi topo -m` for the verdict"
        )
        return "p2p"
    for i, row in enumerate(links):
        if row[i] != "X":
            problems.append(f"{gpus[i]} diagonal cell is {row[i]!r}, not X")
        for j, code in enumerate(row):
            if j == i:
                continue
            if not LINK_CODE.fullmatch(code) or code == "X":
                problems.append(f"{gpus[i]}-{gpus[j]} has unknown link code {code!r}")
            elif j > i and links[j][i] != code:
                problems.append(
                    f"{gpus[i]}-{gpus[j]} is {code} but {gpus[j]}-{gpus[i]} is {links[j][i]}"
                )
    return "topo-m"


def _nic_notes(nics, parsed, gpus, devices, gpu_nic) -> list[str]:
    """NIC rows are informational: note truncation or disagreement, never lower confidence."""
    notes: list[str] = []
    absent = [n for n in nics if n not in parsed]
    if absent and len(absent) < len(nics):
        notes.append(f"NIC rows missing (output truncated?): {', '.join(absent)}")
    for k, nic in enumerate(nics):
        row = parsed.get(nic)
        if row is None:
            continue
        for i, gpu in enumerate(gpus):
            cell = row[devices.index(gpu)]
            if cell != gpu_nic[i][k]:
                notes.append(f"{nic}-{gpu} is {cell} but {gpu}-{nic} is {gpu_nic[i][k]}")
    return notes


def matrix_to_json(matrix: TopologyMatrix) -> dict[str, Any]:
    """The matrix part of `headroom topo --json` (verdicts are added by the caller)."""
    return {
        "gpus": list(matrix.gpus),
        "links": [list(row) for row in matrix.links],
        "nics": list(matrix.nics),
        "nic_names": dict(matrix.nic_names),
        "gpu_nic_links": [list(row) for row in matrix.gpu_nic_links],
        "cpu_affinity": list(matrix.cpu_affinity),
        "numa_affinity": list(matrix.numa_affinity),
        "confidence": matrix.confidence,
        "problems": list(matrix.problems),
        "source": matrix.source,
        "kind": matrix.kind,
    }


def run_nvidia_smi_topo(timeout_s: float = 10.0) -> str | None:
    """Text of `nvidia-smi topo -m`, or None when nvidia-smi is missing or fails."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        done = subprocess.run(
            [exe, "topo", "-m"], capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0 or "GPU0" not in done.stdout:
        return None
    return done.stdout


async def read_topology(nvml: Any = None) -> TopologyMatrix:
    """The live topology: nvidia-smi, else NVML, else an "unreadable" matrix saying why.

    With the simulator's NVML stand-in (HEADROOM_NVML_STANDIN) its `nvidia_smi_topo_m()`
    text is used, so demos show a real-looking matrix on GPU-less machines.
    """
    module = nvml
    if module is None:
        try:
            module = load_nvml_module()
        except Exception:  # noqa: BLE001 - NVML absent is a state
            module = None
    standin_text = getattr(module, "nvidia_smi_topo_m", None)
    if callable(standin_text):
        try:
            return parse_topo_text(standin_text(), source="nvidia-smi")
        except Exception:  # noqa: BLE001
            pass
    text = await asyncio.to_thread(run_nvidia_smi_topo)
    if text is not None:
        return parse_topo_text(text, source="nvidia-smi")
    if module is not None:
        matrix = await asyncio.to_thread(matrix_from_nvml, module)
        if matrix.confidence != "unreadable":
            return matrix
        return unreadable(f"nvidia-smi not found; {matrix.problems[0]}", source="nvml")
    return unreadable("neither nvidia-smi nor NVML is available on this machine", "nvml")
