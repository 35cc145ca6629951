"""The literal text every match of a regex must contain, read from the regex itself: a
prefilter that lets a caller skip `pattern.search` on a line that cannot match.

A refusal's pattern ("(?:torch\\.)?(?P<dtype>\\w+) is not supported for quantization method
...") tried on every line of a flood costs the regex engine a scan per start position, and
`\\w+` on a 1,023-character word is quadratic (last session: 30 s of a 48 s `headroom doctor
--log` on 4,000 such lines). `" is not supported for quantization method " in line` costs one
substring search. The literals are derived, not written beside each pattern, so a rule module
keeps its pattern as the one place its text is said, and a new rule gets the prefilter free.

Conservative: when the pattern holds no literal that every match must contain (an
alternation whose branch has none, a case-insensitive pattern, a bytes pattern), the answer is
None and the caller searches every line as before. Exactness is the property test's
(tests/doctor/test_pattern_literals.py): a text without any of the literals never matches.
"""

from __future__ import annotations

import re
from functools import lru_cache

# re's own parser (sre_parse until 3.11, re._parser since; the same tree in both) reads the
# pattern exactly as the engine will: no hand-written regex grammar to drift from it.
try:
    from re import _parser as _sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python < 3.11
    import sre_parse as _sre_parse

_c = _sre_parse  # the opcode constants are re-exported by the parser module
_REPEATS = {_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", _c.MAX_REPEAT)}
_ATOMIC = getattr(_c, "ATOMIC_GROUP", None)
# A literal this short is in nearly every line: checking it first would only add work.
_MIN_USEFUL = 3

Needs = frozenset[str]


@lru_cache(maxsize=1024)
def required_literals(pattern: re.Pattern[str]) -> Needs | None:
    """Strings of which every match of `pattern` contains at least one, or None when no
    such set is known (or it is too short to be worth checking)."""
    if not isinstance(pattern.pattern, str) or pattern.flags & re.IGNORECASE:
        return None  # case folding (and bytes) would need the engine's own rules: not guessed
    try:
        parsed = _sre_parse.parse(pattern.pattern, pattern.flags)
    except Exception:  # a pattern re compiled always parses; never stop the caller on it
        return None
    if parsed.state.flags & re.IGNORECASE:  # an inline (?i) at the start
        return None
    found = _best(list(parsed))
    if found is None or min(len(text) for text in found) < _MIN_USEFUL:
        return None
    return found


def could_match(needs: Needs | None, text: str) -> bool:
    """False only when `text` holds none of `needs` (then the pattern cannot match it)."""
    return needs is None or any(literal in text for literal in needs)


def _best(items: list) -> Needs | None:
    """The most selective requirement of a sequence: every match of the sequence matches
    each item in order, so any one item's requirement is the whole sequence's."""
    candidates = _requirements(_flattened(items))
    if not candidates:
        return None
    return max(candidates, key=lambda alts: (min(len(t) for t in alts), -len(alts)))


def _flattened(items: list) -> list:
    """The sequence with plain groups opened in place: a group's text sits between its
    neighbours' in the match, so literals run on across its edges."""
    out: list = []
    for op, arg in items:
        if op is _c.SUBPATTERN and not arg[1] and not arg[2]:  # no (?i:...) flag change
            out.extend(_flattened(list(arg[3])))
        elif _ATOMIC is not None and op is _ATOMIC:
            out.extend(_flattened(list(arg)))
        else:
            out.append((op, arg))
    return out


def _requirements(items: list) -> list[Needs]:
    """Each run of literal characters, each alternation every branch of which requires
    something, and each repeat that must match at least once."""
    found: list[Needs] = []
    run: list[str] = []

    def end_run() -> None:
        if run:
            found.append(frozenset({"".join(run)}))
            run.clear()

    for op, arg in items:
        if op is _c.LITERAL:
            run.append(chr(arg))
            continue
        end_run()
        if op is _c.BRANCH:
            branches = [_best(list(branch)) for branch in arg[1]]
            if all(b is not None for b in branches):
                found.append(frozenset().union(*branches))  # type: ignore[arg-type]
        elif op in _REPEATS and arg[0] >= 1:
            inner = _best(list(arg[2]))
            if inner is not None:
                found.append(inner)
        # anything else (a class, a lookaround, an anchor, a backreference) matches text
        # this reading does not know: it only ends the run
    end_run()
    return found
