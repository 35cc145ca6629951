"""Property tests: copy damage seen in the wild must not change what the parser reads.

Perturbations mirror real pastes (gpu-facts.md section 1.1): tabs expanded to spaces or
spaces collapsed to tabs, indented lines, colour codes with and without the ESC byte, the
legend dropped, trailing whitespace. Random damage may lower confidence but never raises.
"""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from headroom.probes.topology import parse_topo_text, tp_verdicts

TOPO = Path(__file__).parents[1] / "fixtures" / "topo"
TEXTS = {p.name: p.read_text(encoding="utf-8") for p in sorted(TOPO.glob("*.txt"))}
NAMES = sorted(TEXTS)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def essence(text: str, keep_nic_names: bool = True) -> tuple:
    m = parse_topo_text(text)
    names = dict(m.nic_names) if keep_nic_names else None
    return (m.gpus, m.links, m.nics, m.gpu_nic_links, m.cpu_affinity, m.numa_affinity,
            names, m.confidence, m.kind)  # fmt: skip


def tabs_to_spaces(text: str, width: int) -> str:
    return "\n".join(line.expandtabs(width) for line in text.split("\n"))


def spaces_to_tabs(text: str) -> str:
    # Runs of 2+ spaces become one tab; single spaces stay (they live inside "CPU Affinity").
    return "\n".join(re.sub(r" {2,}", "\t", line) for line in text.split("\n"))


def indent(text: str, pad: str) -> str:
    return "\n".join(pad + line if line.strip() else line for line in text.split("\n"))


def colour(text: str, esc: bool) -> str:
    on, off = ("\x1b[4m", "\x1b[0m") if esc else ("[4m", "[0m")
    lines = text.split("\n")
    lines[0] = on + lines[0] + off
    return "\n".join(lines)


def drop_legend(text: str) -> str:
    return re.split(r"\n\s*Legend:", text)[0] + "\n"


def trailing(text: str, junk: str) -> str:
    return "\n".join(line + junk if line else line for line in text.split("\n"))


@SETTINGS
@given(
    name=st.sampled_from(NAMES),
    width=st.sampled_from([4, 8]),
    pad=st.sampled_from(["", " ", "  ", "\t", "    "]),
    ansi=st.sampled_from([None, True, False]),
    junk=st.sampled_from(["", " ", "\t", "  \t"]),
    to_tabs=st.booleans(),
)
def test_copy_damage_does_not_change_the_parse(name, width, pad, ansi, junk, to_tabs) -> None:
    original = TEXTS[name]
    text = tabs_to_spaces(original, width)
    if to_tabs:
        text = spaces_to_tabs(text)
    text = indent(text, pad)
    if ansi is not None:
        text = colour(text, esc=ansi)
    text = trailing(text, junk)
    assert essence(text) == essence(original)


@SETTINGS
@given(name=st.sampled_from(NAMES))
def test_dropping_the_legend_only_loses_nic_names(name) -> None:
    original = TEXTS[name]
    damaged = drop_legend(original)
    assert essence(damaged, keep_nic_names=False) == essence(original, keep_nic_names=False)


@SETTINGS
@given(
    name=st.sampled_from(NAMES),
    cuts=st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 12)), max_size=6),
    insert=st.text(alphabet=" \t\nXNVSYPIHBODE0123456789-,/[m\x1b", max_size=12),
)
def test_random_damage_never_raises(name, cuts, insert) -> None:
    text = TEXTS[name]
    for start, length in cuts:
        start %= max(len(text), 1)
        text = text[:start] + insert + text[start + length :]
    matrix = parse_topo_text(text)
    assert matrix.confidence in {"high", "low", "unreadable"}
    for verdict in tp_verdicts(matrix, [1, 2, 3, 4, 8]):
        assert verdict.level in {"good", "tolerable", "poor", "impossible", "unknown"}
    if matrix.confidence == "high":
        n = len(matrix.gpus)
        assert all(matrix.links[i][i] == "X" for i in range(n))
        assert all(matrix.links[i][j] == matrix.links[j][i] for i in range(n) for j in range(n))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_arbitrary_text_never_raises(text) -> None:
    matrix = parse_topo_text(text)
    assert matrix.confidence in {"high", "low", "unreadable"}
    tp_verdicts(matrix)


CODE = re.compile(r"X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC")
TABBED = [n for n in NAMES if "\t" in TEXTS[n] and not n.startswith("p2p-")]


def lose_tabs(text: str, picks: list[int]) -> str:
    """Drop tabs between two link cells (or two GPU/NIC column names), as copying does."""
    lines = text.split("\n")
    out = []
    for line_no, line in enumerate(lines):
        cells = line.split("\t")
        merged = [cells[0]]
        for k, cell in enumerate(cells[1:], start=1):
            left, right = merged[-1].strip(), cell.strip()
            both_codes = CODE.fullmatch(left) and CODE.fullmatch(right)
            both_names = re.fullmatch(r"(GPU|NIC)\d+", left) and re.fullmatch(
                r"(GPU|NIC)\d+", right
            )
            if (both_codes or both_names) and (line_no * 31 + k) % 7 in picks:
                merged[-1] = merged[-1].rstrip() + cell.lstrip()
            else:
                merged.append(cell)
        out.append("\t".join(merged))
    return "\n".join(out)


@SETTINGS
@given(name=st.sampled_from(TABBED), picks=st.lists(st.integers(0, 6), min_size=1, max_size=7))
def test_lost_tabs_between_cells_do_not_change_the_links(name, picks) -> None:
    original = parse_topo_text(TEXTS[name])
    damaged = parse_topo_text(lose_tabs(TEXTS[name], picks))
    assert damaged.gpus == original.gpus and damaged.nics == original.nics
    assert damaged.links == original.links
    assert damaged.gpu_nic_links == original.gpu_nic_links
    assert damaged.confidence == original.confidence
