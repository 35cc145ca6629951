"""A version regression a person states in words: "Severe OOM in 0.8.3 (ok in 0.7.2)",
"OOM after upgrading vLLM from 0.6.3 to 0.8.4", "worked on v0.7.2, fails on v0.8.3".

Only vLLM-shaped versions count (0.x or 0.x.y, an optional "v", ".postN"): PyTorch's 2.x and
CUDA's 12.x are not 0.x. The release that worked ("good") and the one that fails ("bad") let a
rule name the defaults that changed between them (release_defaults.changed_defaults).
Never raises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from headroom.doctor.versions import parse_version
from headroom.probes.vllm_log_patterns import split_prefix

_V = r"v?(0\.\d{1,2}(?:\.\d{1,2})?(?:\.post\d)?)(?![\d.]*\d)"
_VLLM = r"(?:vllm\s*(?:==|version\s*)?\s*)?"
_GOOD_WORD = (
    r"(?:ok|okay|fine|works?|worked|working|good|normal(?:ly)?|no\s+(?:problem|issue|oom)s?)"
)
_PREP = r"(?:\s+(?:on|in|with|using|under|for))?"
# "ok in 0.7.2", "works fine with vllm 0.7.2", "worked on v0.7.2"
_GOOD_BEFORE = re.compile(rf"\b{_GOOD_WORD}(?:\s+fine)?{_PREP}\s*{_VLLM}{_V}", re.IGNORECASE)
# "0.7.2 works", "v0.7.2 was fine", "0.7.2 is ok"
_GOOD_AFTER = re.compile(rf"{_V}\s*(?:is\s+|was\s+|runs?\s+|ran\s+)?{_GOOD_WORD}\b", re.IGNORECASE)
# "from 0.7.2 to 0.8.3", "0.7.2 -> 0.8.3", "0.7.2 → 0.8.3"
_FROM_TO = re.compile(
    rf"\bfrom\s+{_VLLM}{_V}\s+to\s+{_VLLM}{_V}|{_V}\s*(?:->|→|=>|to)\s*{_VLLM}{_V}", re.IGNORECASE
)
# "after upgrading to 0.8.3", "since 0.8.0", "in 0.8.3", "on vllm 0.8.3"
_BAD = re.compile(
    rf"\b(?:upgrad\w*|updat\w*|bump\w*|mov\w*|switch\w*)\s+(?:vllm\s+)?to\s+{_VLLM}{_V}|"
    rf"\b(?:since|in|on|with|using)\s+{_VLLM}{_V}|\bvllm\s*(?:==|version\s*)?\s*{_V}",
    re.IGNORECASE,
)
# "0.8.3 OOMs", "v0.8.3 fails", "0.8.3 crashes with out of memory"
_BAD_AFTER = re.compile(
    rf"{_V}\s*(?:\w+\s+){{0,2}}?(?:OOM|fail|crash|error|out\s+of\s+memory|breaks?\b|broke)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Regression:
    good: tuple[int, int, int] | None  # the release that worked, when said
    bad: tuple[int, int, int] | None  # the release that fails, when said
    line: str  # the text that says it


def _v(text: str | None) -> tuple[int, int, int] | None:
    return parse_version(text) if text else None


def regression_of_line(line: str) -> Regression | None:
    """The good and bad releases one line of text states, or None."""
    if not isinstance(line, str) or not line.strip():
        return None
    try:
        if split_prefix(line)[0] is not None:
            return None  # vLLM's own log line: its words are not a person's claim
    except Exception:  # untrusted text must not stop the doctor
        return None
    text = line[:2000]
    good = bad = None
    for m in _FROM_TO.finditer(text):
        a, b = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        good, bad = _v(a), _v(b)
        break
    goods = {m.start(): _v(m.group(1)) for m in _GOOD_BEFORE.finditer(text)}
    goods.update({m.start(): _v(m.group(1)) for m in _GOOD_AFTER.finditer(text)})
    good_versions = {g for g in goods.values() if g}
    if good is None and good_versions:
        good = min(good_versions)
    if bad is None:
        for pattern in (_BAD, _BAD_AFTER):
            for m in pattern.finditer(text):
                version = _v(next(g for g in m.groups() if g))
                if version and version not in good_versions:
                    bad = version
                    break
            if bad is not None:
                break
    if good is None and bad is None:
        return None
    if good is not None and bad is not None and good == bad:
        return None
    return Regression(good, bad, line.strip()[:300])


def stated_regression(lines: list[str]) -> Regression | None:
    """The first line that names both releases wins; else the first that names either."""
    partial = None
    for line in lines[:5000]:
        found = regression_of_line(line)
        if found is None:
            continue
        if found.good is not None and found.bad is not None:
            return found
        partial = partial or found
    return partial
