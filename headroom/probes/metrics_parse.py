"""A focused reader for vLLM's Prometheus exposition text.

`prometheus_client.parser` builds a Metric object for every family on the page (python_gc,
process, http, every `_created` series...). Headroom needs a few dozen `vllm:` samples per
scrape, so this reader skips every other line after a single `startswith` and parses labels
with one regex when no escapes are present. It never raises: a line it cannot read is counted
in `skipped_lines` and left out.

The values it keeps are identical to what prometheus_client returns for the same samples
(tests/probes/test_metrics_parse.py checks that on every fixture).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from headroom.probes.metric_names import WANTED_SAMPLE_NAMES  # the one table of names

VLLM_PREFIX = "vllm:"

_LABEL_PAIR_RE = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"([^"]*)"')
HEAD_CHARS = 16384
_HEAD_CHARS = HEAD_CHARS
# A real page keeps a few hundred samples (a few thousand with many DP engines); this bounds
# what a hostile page can make Headroom hold, whatever its size.
MAX_SAMPLES = 50_000
# Counts, counters and sizes past 2**53 lose whole units as floats and are no real server's:
# such a value is treated as unknown, so arithmetic on it cannot overflow.
MAX_COUNT = float(2**53)
_MISSING: dict = {}  # sentinel for the label cache
_ESCAPES = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}
_ESCAPE_RE = re.compile(r'\\[\\n"]')
# A sample line as the text format defines it: name, optional {labels}, a value.
_SAMPLE_LINE_RE = re.compile(r"^[A-Za-z_:][A-Za-z0-9_:]*(\{.*\})?[ \t]+\S+")


class Sample(NamedTuple):
    """One kept sample: the exposed name (with `_total`/`_bucket`...), its labels, its value.

    A NamedTuple rather than a frozen dataclass: it is built ~150 times per scrape and tuple
    construction is several times cheaper. Treat `labels` as read-only.
    """

    name: str
    labels: Mapping[str, str]
    value: float


@dataclass
class Exposition:
    """What one `/metrics` page said, restricted to the samples Headroom needs."""

    samples: list[Sample] = field(default_factory=list)
    vllm_lines: int = 0  # every `vllm:` sample line, kept or not
    skipped_lines: int = 0  # wanted lines that could not be read
    looks_like_prometheus: bool = False
    too_many_samples: bool = False  # more than MAX_SAMPLES wanted samples: not a real page

    def by_name(self) -> dict[str, list[Sample]]:
        grouped: dict[str, list[Sample]] = {}
        for sample in self.samples:
            grouped.setdefault(sample.name, []).append(sample)
        return grouped


def parse_exposition(
    text: str, wanted: Iterable[str] | None = None, prefix: str = VLLM_PREFIX
) -> Exposition:
    """Read the samples named in `wanted` (default: WANTED_SAMPLE_NAMES) among the lines that
    start with `prefix` (`vllm:`; the DCGM probe passes `DCGM_`). Never raises."""
    if not isinstance(text, str):
        return Exposition()
    builder = ExpositionBuilder(wanted, prefix=prefix)
    builder.add_lines(text.split("\n"))
    result = builder.result
    result.looks_like_prometheus = looks_like_prometheus(text)
    return result


class ExpositionBuilder:
    """Reads exposition lines batch by batch, so a streamed page never has to be held whole.

    At most `max_samples` samples are kept (a real page has a few hundred); past that the
    page is marked `too_many_samples` and the rest of its lines are only counted.
    """

    def __init__(
        self,
        wanted: Iterable[str] | None = None,
        max_samples: int = MAX_SAMPLES,
        prefix: str = VLLM_PREFIX,
    ):
        self.prefix = prefix
        self.names = WANTED_SAMPLE_NAMES if wanted is None else frozenset(wanted)
        self.result = Exposition()
        self.max_samples = max_samples
        # Within one page most samples repeat the same label text ({engine,model_name}), so
        # each distinct label string is read once. The dicts are shared: treat them as
        # read-only.
        self._label_cache: dict[str, dict[str, str] | None] = {}

    def add_lines(self, lines: Iterable[str]) -> None:
        names = self.names
        result = self.result
        samples = result.samples
        append = samples.append
        label_cache = self._label_cache
        vllm_lines = 0
        prefix = self.prefix
        for line in lines:
            if not line.startswith(prefix):
                continue
            vllm_lines += 1
            brace = line.find("{")
            name = line[:brace] if brace != -1 else line
            if name in names:
                # Wanted names hold no blanks, so this is the labelled form `name{...} value`.
                close = line.rfind("}")
                if close < brace:
                    result.skipped_lines += 1
                    continue
                label_text = line[brace + 1 : close]
                labels = label_cache.get(label_text, _MISSING)
                if labels is _MISSING:
                    labels = _parse_labels(label_text)
                    if len(label_cache) < self.max_samples:
                        label_cache[label_text] = labels
                rest = line[close + 1 :]
            elif brace == -1 or " " in name or "\t" in name:
                # Unlabelled form `name value` (a brace, if any, sits after the name).
                blank = _first_blank(line)
                if blank == -1 or line[:blank] not in names:
                    continue
                name = line[:blank]
                labels = {}
                rest = line[blank:]
            else:
                continue
            value = _parse_value(rest)
            if labels is None or value is None:
                result.skipped_lines += 1
                continue
            if len(samples) >= self.max_samples:
                result.too_many_samples = True
                continue
            append(Sample(name, labels, value))
        result.vllm_lines += vllm_lines


def looks_like_prometheus(text: str, probe_lines: int = 30) -> bool:
    """True when the first sample-ish lines of `text` read as Prometheus text format.

    Checks a handful of lines only (cheap); an empty page is not Prometheus text for our purposes.
    """
    head = text[:_HEAD_CHARS].lstrip()  # enough for the first lines; never copies a page
    if not head or head[0] == "<":  # HTML or XML
        return False
    lines = head.split("\n", probe_lines * 3)
    if len(lines) > probe_lines * 3 or len(text) > _HEAD_CHARS:
        lines.pop()  # the remainder, or a line cut by the head limit
    seen = 0
    for line in lines:
        line = line.strip()
        if not line:
            continue
        if line[0] == "#":
            if line.startswith(("# HELP ", "# TYPE ", "# EOF", "# UNIT ")) or line == "#":
                continue
            # Free comments are legal; count them so a page of pure comments is not "valid".
            seen += 1
            if seen >= probe_lines:
                break
            continue
        if not _SAMPLE_LINE_RE.match(line) or _parse_value(_value_part(line)) is None:
            return False
        seen += 1
        if seen >= probe_lines:
            break
    return seen > 0


def _first_blank(line: str) -> int:
    space = line.find(" ")
    tab = line.find("\t")
    if tab != -1 and (space == -1 or tab < space):
        return tab
    return space


def _value_part(line: str) -> str:
    close = line.rfind("}")
    if close != -1:
        return line[close + 1 :]
    blank = _first_blank(line)
    return line[blank:] if blank != -1 else ""


def _parse_value(rest: str) -> float | None:
    """The first token after the name/labels (a timestamp may follow); None if unreadable."""
    if "_" in rest:  # float() accepts 1_000; the exposition format does not.
        return None
    try:
        return float(rest)  # common case: " 1.0" (float() ignores surrounding blanks)
    except ValueError:
        pass
    parts = rest.split()
    if len(parts) < 2:
        return None
    try:
        return float(parts[0])
    except ValueError:
        return None


def _parse_labels(text: str) -> dict[str, str] | None:
    """Labels between the braces; None when they are malformed."""
    if "\\" not in text:
        pairs = _LABEL_PAIR_RE.findall(text)
        # Every quote and every '=' accounted for by a pair: the fast reading is the whole
        # truth. Otherwise ('=' inside a value, stray text) let the strict reader decide.
        if text.count('"') == 2 * len(pairs) and text.count("=") == len(pairs):
            if not pairs and text.strip(" \t,"):
                return None
            return dict(pairs)
    return _parse_labels_strictly(text)


def _parse_labels_strictly(text: str) -> dict[str, str] | None:
    """Slow path for label values holding backslash escapes (\\\\, \\", \\n)."""
    labels: dict[str, str] = {}
    pos, end = 0, len(text)
    while pos < end:
        while pos < end and text[pos] in " \t,":
            pos += 1
        if pos >= end:
            break
        eq = text.find("=", pos)
        if eq == -1:
            return None
        key = text[pos:eq].strip()
        if not key or not (key[0].isalpha() or key[0] == "_"):
            return None
        quote = eq + 1
        while quote < end and text[quote] in " \t":
            quote += 1
        if quote >= end or text[quote] != '"':
            return None
        cursor = quote + 1
        while cursor < end:
            char = text[cursor]
            if char == "\\":
                cursor += 2
                continue
            if char == '"':
                break
            cursor += 1
        if cursor >= end:
            return None  # no closing quote: truncated
        raw = text[quote + 1 : cursor]
        labels[key] = _ESCAPE_RE.sub(lambda m: _ESCAPES[m.group(0)], raw)
        pos = cursor + 1
    return labels


def label_float(labels: Mapping[str, str], key: str) -> float | None:
    """A numeric label value ("0.92", "8192"); None for "None", missing or garbage."""
    raw = labels.get(key)
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if value == value and value not in (float("inf"), float("-inf")) else None


def label_int(labels: Mapping[str, str], key: str) -> int | None:
    """A whole-number label within 0..MAX_COUNT; None otherwise (1e308 blocks is no count)."""
    value = label_float(labels, key)
    if value is None or not 0 <= value <= MAX_COUNT or value != int(value):
        return None
    return int(value)
