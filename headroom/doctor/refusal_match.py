"""A refusal's numbers in the log, for the rules that read one: the log reader's event of
the catalog's kind (headroom/probes/vllm_catalog), or a pattern on the raw lines, one at a
time and then joined (a message a terminal or a paste wrapped over lines). Both give the
fields under the catalog's names, so a rule gets the same numbers by either path.
"""

from __future__ import annotations

import re

from headroom.doctor.pattern_literals import could_match, required_literals


def first_match(ctx, pattern: re.Pattern[str]) -> tuple[dict, str] | None:
    """The pattern's groups and the line, on the raw lines (one at a time, then joined)."""
    # Only a line holding the pattern's literal text is searched, and each distinct line once:
    # a flood of long lines (a progress bar, `x` * 1023) otherwise costs every pattern a scan
    # of every line, quadratic where the pattern opens on `\w+` (pattern_literals).
    needs = required_literals(pattern)
    seen: set[str] = set()
    for line in ctx.raw_lines:
        if line in seen:
            continue
        seen.add(line)
        if not could_match(needs, line):
            continue
        match = pattern.search(line)
        if match:
            return match_groups(match), line.strip()
    # A message wrapped over lines by a terminal or a pasted block: read the lines joined,
    # at the words (an editor's wrap), then where a hard wrap cut inside a word.
    for joined in _joined_tail(ctx):
        match = pattern.search(joined) if could_match(needs, joined) else None
        if match:
            return match_groups(match), joined[max(match.start() - 40, 0) : match.end() + 40]
    return None


def _joined_tail(ctx) -> tuple[str, str]:
    """The last 400 raw lines joined at the words and at a hard wrap, built once per context
    (a dozen rules read them; each join of a flood is half a megabyte)."""
    lines = ctx.raw_lines
    cached = getattr(ctx, "__dict__", {}).get("_refusal_joined_tail")
    if cached is not None and cached[0] is lines:
        return cached[1]
    tail = lines[-400:]
    joined = (" ".join(line.strip() for line in tail), hard_wrap_joined(tail))
    try:
        ctx.__dict__["_refusal_joined_tail"] = (lines, joined)
    except AttributeError:  # a context without a __dict__ (a test's stand-in): no cache
        pass
    return joined


# A terminal (or `fold -w`) cuts a long line every W columns, inside a word as often as not:
# every piece but the last is exactly W long. Widths below this are not a terminal's.
_MIN_WRAP_WIDTH = 40
# A glued word longer than this is not a message's word cut by a wrap but a flood of equal
# lines (a base64 dump, a progress bar, `x` * 1023 a line): gluing those into one word of
# 400 lines made every `\w+ ...` pattern quadratic on it (the supervisor's log-flood test
# took over 300 s in one rule). vLLM's messages carry no word near this long.
_MAX_GLUED_WORD = 512


def hard_wrap_joined(lines: list[str]) -> str:
    """The lines joined where a fixed-width cut split them: a line as long as the longest
    line (at least _MIN_WRAP_WIDTH) runs on into the next with nothing between, spaces at
    the cut kept; other lines join with a space."""
    width = max((len(line.rstrip("\r\n")) for line in lines), default=0)
    if width < _MIN_WRAP_WIDTH:
        return " ".join(line.strip() for line in lines)
    parts: list[str] = []
    cut_before = False
    word = 0  # the length of the word the joined text ends in
    for k, line in enumerate(lines):
        bare = line.rstrip("\r\n")
        cut = len(bare) == width and k + 1 < len(lines)
        glue = cut_before and word + _leading_word(bare) <= _MAX_GLUED_WORD
        piece = bare if glue else bare.lstrip()
        if parts and not glue:
            parts.append(" ")
        text = piece if cut else piece.rstrip()
        parts.append(text)
        ends_word = _trailing_word(text)
        word = word + len(text) if glue and ends_word == len(text) else ends_word
        cut_before = cut
    return "".join(parts).strip()


_LEADING_WORD = re.compile(r"^\S+")
_TRAILING_WORD = re.compile(r"\S+$")


def _leading_word(text: str) -> int:
    found = _LEADING_WORD.search(text)
    return len(found.group()) if found else 0


def _trailing_word(text: str) -> int:
    found = _TRAILING_WORD.search(text)
    return len(found.group()) if found else 0


def match_groups(match: re.Match[str]) -> dict:
    out: dict = {"pattern": match.re}
    for name, value in match.groupdict().items():
        if value is not None:
            out[name] = int(value) if value.isdigit() else value
    return out


def catalog_event(ctx, kind: str, *signatures: str, needs: tuple[str, ...] = ()):
    """The fields and line of the first event of the catalog's `kind` (from `signatures`)
    that carries every field in `needs`."""
    for event in ctx.of(kind):
        if signatures and event.signature not in signatures:
            continue
        if all(event.fields.get(name) is not None for name in needs):
            return dict(event.fields), event.line.strip()
    return None
