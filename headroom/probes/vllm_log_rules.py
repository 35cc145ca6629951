"""The log reader's rules, built from the signature catalog (probes/vllm_catalog), in its order,
and the index that finds the few rules a line can match without testing them all.

A rule is found three ways, strongest first:
- a needle: a fixed piece of the text (the catalog's `needles`) is in the message;
- a fragment: a distinctive clause from the middle or end of a long text (`fragments`), for a
  paste that lost the text's start (a message wrapped by a terminal, a quote of its second
  sentence);
- a cut needle: the message ends with the first part of a long needle, for a line cut off
  by a thread title's limit or a copy ("Model architectures [...] are not supported for no");
- a lower-cased needle, for an error line someone lower-cased whole ("valueerror: loading x
  requires you to execute the configuration file ...", vllm-project/vllm#9531).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

from headroom.probes.vllm_catalog import SIGNATURES, Signature
from headroom.probes.vllm_log_fields import EXTRACTORS, num

__all__ = ["KINDS", "RULES", "candidates", "cut_needle_rules", "lowercase_rules"]


@dataclass(frozen=True)
class Rule:
    kind: str | None  # None: a recognised line that is never an event (client text)
    severity: str
    needles: tuple[str, ...]  # at least one must be a substring of the message
    regex: str | None = None  # compiled on first use: see `pattern`
    extract: Callable[[re.Match[str]], dict[str, object]] | None = None
    require_match: bool = True  # False: needles alone classify, the regex only adds fields
    printed_by: frozenset[str] = frozenset()  # logger texts: the files allowed in the prefix
    quoted: bool = False  # the text normally sits inside quotes
    id: str = ""
    fragments: tuple[str, ...] = ()  # clauses that identify the text without its start
    generic: bool = False  # matches any exception: a fragment of a specific text beats it

    @functools.cached_property
    def pattern(self) -> re.Pattern[str] | None:
        """The compiled regex, built the first time a line holds one of the rule's needles.
        Compiling all ~100 of the catalog's regexes took about 8 ms at import, on the path to
        the TUI's first painted dashboard (benchmarks/startup.py); a running server's log
        reaches only a handful of rules. (tests/probes/test_vllm_catalog.py compiles them all.)"""
        return re.compile(self.regex) if self.regex else None

    @functools.cached_property
    def pattern_ignoring_case(self) -> re.Pattern[str] | None:
        """The regex for a line someone lower-cased (see lowercase_rules)."""
        return re.compile(self.regex, re.IGNORECASE) if self.regex else None


def _groups(match: re.Match[str]) -> dict[str, object]:
    """Named groups, numbers converted: *_gib/_s/_pct floats, counts ints, rest strings."""
    out: dict[str, object] = {}
    for key, raw in match.groupdict().items():
        if raw is None:
            continue
        if key.endswith(("_gib", "_s", "_pct", "utilization", "concurrency", "_tps")):
            out[key] = num(raw)
        elif key in ("device", "reason", "url", "version", "model", "message", "op", "path",
                     "args", "process", "method", "arch", "gpu", "mode", "group"):  # fmt: skip
            out[key] = raw.strip()
        else:  # a count stays an int; "7.5" (a compute capability) is not truncated to 7
            value = num(raw)
            out[key] = raw if value is None else int(value) if value.is_integer() else value
    return out


def _rule_of(sig: Signature) -> Rule:
    regex = sig.pattern or None
    extract = EXTRACTORS[sig.extract] if sig.extract else (_groups if regex is not None else None)
    printed_by = frozenset(sig.printed_by) if sig.origin == "log" else frozenset()
    return Rule(sig.kind, sig.severity, sig.needles, regex, extract, sig.require_match,
                printed_by, sig.quoted, sig.id, sig.fragments, sig.generic)  # fmt: skip


RULES: tuple[Rule, ...] = tuple(_rule_of(sig) for sig in SIGNATURES)

KINDS: tuple[str, ...] = tuple(dict.fromkeys(rule.kind for rule in RULES if rule.kind))

# Short pieces of the needles: a line holds a needle only if it holds a piece of it, so a line
# with none of these (most lines of a running server) costs a couple of dozen `in` tests and
# no regex. Picked greedily (4-character pieces covering the most needles, less those common
# in a running server's lines; fewer keys beat rarer ones, measured with
# benchmarks/log_classify.py). A needle that none of them covers (a catalog entry added
# later) gets a piece picked the same way at import, shared with other such needles, so a
# new entry needs no new key to be found and adds at most one `in` test per line.
_KEYS = ("ing ", "emor", "not ", "rror", "han ", "tion", "able", "fail", "KV c", "mode", " blo",
         "size", "nter", "CCL ", "NET/", "has ", " une", "t le", "ceed", " arg", "ed o", " ver",
         " lef", "d, e", "gere", "Maxi", "Avg ", " (mo")  # fmt: skip


def _keys_for(needles: list[str]) -> list[str]:
    """The curated keys that cover some needle, plus greedy 4-character pieces for the rest."""
    keys = [k for k in _KEYS if any(k in n for n in needles)]
    left = [n for n in needles if not any(k in n for k in keys)]
    while left:
        pieces = sorted({n[i : i + 4] for n in left for i in range(max(1, len(n) - 3))})
        best = max(pieces, key=lambda k: sum(1 for n in left if k in n))
        keys.append(best)
        left = [n for n in left if best not in n]
    return keys


def _needle_index(pieces: set[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(key, the pieces filed under it): every needle or fragment under exactly one key."""
    ordered = sorted(pieces)
    keys = _keys_for(ordered)
    index: dict[str, list[str]] = {}
    for piece in ordered:
        key = next(k for k in keys if k in piece)
        index.setdefault(key, []).append(piece)
    return tuple((key, tuple(found)) for key, found in index.items())


# Client-text rules (kind None) need no key: they only matter on a line that holds some other
# rule's needle too.
_RULES_OF_NEEDLE: dict[str, tuple[int, ...]] = {}
_RULES_OF_FRAGMENT: dict[str, tuple[int, ...]] = {}
for _number, _r in enumerate(RULES):
    if _r.kind is None:
        continue
    for _needle in _r.needles:
        _RULES_OF_NEEDLE[_needle] = (*_RULES_OF_NEEDLE.get(_needle, ()), _number)
    for _fragment in _r.fragments:
        _RULES_OF_FRAGMENT[_fragment] = (*_RULES_OF_FRAGMENT.get(_fragment, ()), _number)
_NEEDLE_KEYS = _needle_index(set(_RULES_OF_NEEDLE) | set(_RULES_OF_FRAGMENT))


def candidates(line: str) -> tuple[list[int], list[int]]:
    """Numbers of the rules, in RULES order, with a needle somewhere in the line, and those
    with a fragment there (usually both empty)."""
    hits = [pieces for key, pieces in _NEEDLE_KEYS if key in line]
    if not hits:
        return _NONE, _NONE
    found = [piece for pieces in hits for piece in pieces if piece in line]
    if not found:
        return _NONE, _NONE
    by_needle = {n for piece in found for n in _RULES_OF_NEEDLE.get(piece, ())}
    if not _RULES_OF_FRAGMENT.keys() & found:
        return sorted(by_needle), _NONE
    by_fragment = {n for piece in found for n in _RULES_OF_FRAGMENT.get(piece, ())}
    return sorted(by_needle), sorted(by_fragment - by_needle)


_NONE: list[int] = []  # shared, never changed


# Cut needles: long needles by their first characters. A line that ends inside one of them
# (at least _MIN_CUT characters of it) was cut off there. Needles start a word, so only the
# word starts of the line's last _LONGEST characters are looked up: a few dict lookups.
_HEAD = 12
_MIN_CUT = 20  # "is not supported" alone says nothing; a cut must keep a distinctive part
_MIN_CUT_NEEDLE = 24
_CUT_HEADS: dict[str, tuple[tuple[str, int], ...]] = {}
for _needle, _numbers in _RULES_OF_NEEDLE.items():
    if len(_needle.strip()) >= _MIN_CUT_NEEDLE and _needle[:1].isalpha():
        _head = _needle[:_HEAD]
        _CUT_HEADS[_head] = (*_CUT_HEADS.get(_head, ()), *((_needle, n) for n in _numbers))
_LONGEST = max((len(n) for n, _ in (e for v in _CUT_HEADS.values() for e in v)), default=0)
_WORD_START = re.compile(r"(?<![\w.-])[A-Za-z]")


def cut_needle_rules(message: str) -> list[tuple[int, int]]:
    """(rule number, where the cut needle starts) for each long needle whose start ends the
    message, the longest cut first."""
    text = message.rstrip()
    found: dict[int, int] = {}
    for word in _WORD_START.finditer(text, max(0, len(text) - _LONGEST), len(text) - _MIN_CUT + 1):
        at = word.start()
        entries = _CUT_HEADS.get(text[at : at + _HEAD])
        if not entries:
            continue
        rest = text[at:]
        for needle, number in entries:
            if len(rest) < len(needle) and needle.startswith(rest):
                found.setdefault(number, at)
    # the longest cut text is the best evidence; then RULES order
    return sorted(found.items(), key=lambda hit: (hit[1], hit[0]))


# Lower-cased needles long enough to say something on their own (a short one such as "Error: "
# would match any lower-cased sentence), in RULES order.
_LOWER_NEEDLES: tuple[tuple[str, int], ...] = tuple(
    (needle.lower(), number)
    for number, rule in enumerate(RULES)
    if rule.kind is not None and not rule.generic
    for needle in rule.needles
    if len(needle.strip()) >= 16
)


def lowercase_rules(message: str) -> list[tuple[int, int]]:
    """(rule number, where its needle starts) for a message with no upper-case letter at all:
    its needles compared lower-cased, the rule with the longest needle found first. Only
    called for such lines (rare), so a scan of all."""
    found: dict[int, tuple[int, int]] = {}  # rule -> (longest needle found, where)
    for needle, number in _LOWER_NEEDLES:
        at = message.find(needle)
        if at >= 0 and len(needle) > found.get(number, (0, 0))[0]:
            found[number] = (len(needle), at)
    # without the case to tell texts apart, the longest needle found is the most specific
    return [(n, at) for n, (_, at) in sorted(found.items(), key=lambda hit: (-hit[1][0], hit[0]))]
