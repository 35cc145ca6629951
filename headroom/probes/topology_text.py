"""Cut `nvidia-smi topo -m` text into a header, logical rows and the NIC legend.

Kept apart from topology.py so the line-level repairs (colour codes, re-wrapped rows,
indentation, legends with or without their headings) live in one small place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Real ESC sequences, and the bare "[4m" / "[0m" residue left when a paste drops the ESC byte.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b|\[[0-9;]*m")
_NIC_LEGEND_ENTRY = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")
_LEGEND_HEADING = re.compile(r"^\s*(NIC\s+)?Legend\s*:", re.I)
_AFFINITY_WORDS = re.compile(r"CPU\s*Affinity|NUMA\s*Affinity|GPU\s*NUMA\s*ID", re.I)
_CODE_RUN = re.compile(r"(?:NV\d+|NODE|PIX|PXB|PHB|SYS|SOC|GNS|CNS|TNS|OK|NS|DR|X|U)+")
_LABEL = re.compile(r"[A-Za-z][\w.\-]*")
_GPU_TOKEN = re.compile(r"(?:GPU\d+)+")


@dataclass
class LogicalRow:
    """One matrix row after re-joining lines a terminal wrapped."""

    label: str
    tokens: list[str]


@dataclass
class Sections:
    header: str | None = None
    rows: list[LogicalRow] = field(default_factory=list)
    nic_legend: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # repairs made; they do not lower confidence


def decode_topo_bytes(data: bytes) -> str:
    """Text of a saved output whatever wrote it: UTF-8 (with or without BOM), or UTF-16 as
    PowerShell's `>` redirect produces; undecodable bytes become U+FFFD, never an error."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace")
    if data.count(b"\x00") > len(data) // 4:  # UTF-16 without a BOM
        return data.decode("utf-16-le", errors="replace")
    return data.decode("utf-8-sig", errors="replace")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def _is_label(token: str) -> bool:
    """A row label (GPU0, NIC3, mlx5_0), as opposed to a link code or an affinity value."""
    return bool(_LABEL.fullmatch(token)) and not _CODE_RUN.fullmatch(token) and token != "N/A"


def _looks_like_header(tokens: list[str]) -> bool:
    """The header names columns: its first token is a GPU and no link code follows."""
    if not tokens or not _GPU_TOKEN.fullmatch(tokens[0]):
        return False
    return not any(_CODE_RUN.fullmatch(t) for t in tokens[1:])


def split_sections(text: str) -> Sections:
    """Header text, logical rows and NIC legend of one `topo -m` output. Never raises."""
    out = Sections()
    cleaned = strip_ansi(text.replace("\r\n", "\n").replace("\r", "\n"))
    state = "before"  # before -> header -> rows -> after
    for line in cleaned.split("\n"):
        stripped = line.strip()
        entry = _NIC_LEGEND_ENTRY.match(line)
        if entry:
            out.nic_legend[entry.group(1)] = entry.group(2)
            continue
        if _LEGEND_HEADING.match(line) or (stripped and ("=" in stripped or ":" in stripped)):
            if state in ("header", "rows"):
                state = "after"
            continue
        if not stripped:
            if state == "rows":
                state = "after"  # a blank line ends the matrix; the legend follows
            continue
        if state == "after":
            continue
        tokens = _AFFINITY_WORDS.sub(" ", stripped).split()
        if state == "before":
            if _looks_like_header(tokens):
                out.header, state = stripped, "header"
            elif tokens and _GPU_TOKEN.fullmatch(tokens[0]) and len(tokens) > 1:
                out.rows.append(LogicalRow(tokens[0], stripped.split()[1:]))
                state = "rows"
            continue
        raw = stripped.split()
        starts_row = _is_label(raw[0]) and (len(raw) == 1 or not _is_label(raw[1]))
        if state == "header" and not starts_row:
            out.header = f"{out.header} {stripped}"
            out.notes.append("the header was wrapped over several lines; re-joined")
            continue
        if starts_row:
            out.rows.append(LogicalRow(raw[0], raw[1:]))
            state = "rows"
        else:
            out.rows[-1].tokens.extend(raw)
            out.notes.append(f"row {out.rows[-1].label} was wrapped; re-joined")
    return out
