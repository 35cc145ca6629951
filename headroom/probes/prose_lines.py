"""A person's sentences rejoined where an editor, a mail client or a terminal wrapped them.

An issue body pasted from a wrapped editor, a forum post or a mailing list carries one sentence
over two or three lines ("the memory of" / "my GPUs is rapidly clogging up", "the token
generation on A6000 ... is very" / "slow (11.2 tokes/s)"). The words readers (probes.
symptom_speed, symptom_growth, symptom_throughput, symptom_hang ...) read one sentence at a
time; a sentence cut in two says half of it on each line and neither half reads.

A line continues the one before when the one before is prose that did not end its sentence
(no . ! ? : ; at its end) and ran to its width (the next line's first word would not have
fitted after it within _MIN_WIDTH columns: a wrapper breaks only there), and the line itself
starts with a lower-case word or a number, as a wrapped sentence goes on: never an indented
line (code, a traceback's source), a logger or process header, a traceback, an exception name
("torch.cuda.OutOfMemoryError: ...") or a list item. Joined with one space; every other line
is kept as it was, one entry per line. Never raises; at most _MAX_LINES lines are read.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["rejoined_prose", "said_unnegated", "sentences"]

_MAX_LINES = 400
_MAX_JOINED = 2000  # a sentence is never this long; a paragraph past it starts anew
_MIN_WIDTH = 60  # the narrowest wrap width of editors and terminals read as one
# A line that starts a record or a block of its own, not a sentence going on.
_RECORD = re.compile(
    r"(?:\s|(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\b|Traceback\b|File\s\"|\(|\[|[-*>#|$]|"
    r"\d{2,4}[-/:]\d\d|"  # a timestamp
    r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|"  # a dotted name: a module, an exception's path
    r"[A-Za-z_]\w*(?:Error|Exception|Warning)\b)"
)
_CONTINUES = re.compile(r"[a-z0-9]")
_SENTENCE_DONE = re.compile(r"[.!?:;。！？：；]\s*$")


def _continues(before: str, first: str, line: str) -> bool:
    """Whether `line` goes on with the sentence the physical line `before` cut (`first`: the
    paragraph's first line, which decides whether it is prose at all)."""
    words = line.split(None, 1)
    if not words or len(before.rstrip()) + 1 + len(words[0]) <= _MIN_WIDTH:
        return False
    if _SENTENCE_DONE.search(before) or not _CONTINUES.match(line) or _RECORD.match(line):
        return False
    return not _RECORD.match(first)  # a log record's line is whole; its next line is another


def rejoined_prose(lines: object) -> list[str]:
    """The lines with each wrapped sentence rejoined into one entry (module doc); any other
    line as it was. Never raises."""
    try:
        out: list[str] = []
        first = before = ""
        for raw in list(lines)[:_MAX_LINES]:  # type: ignore[call-overload]
            line = str(raw)
            if out and len(out[-1]) < _MAX_JOINED and _continues(before, first, line):
                out[-1] = out[-1].rstrip() + " " + line.strip()
            else:
                out.append(line)
                first = line
            before = line
        return out
    except Exception:  # a reader of untrusted text must not stop the doctor
        return []


# Where a person's sentence ends: ; ! ? (and their full-width forms), a line break, or a full
# stop before a space or the end (not the dot of "0.8.5" or "config.json").
_SENTENCE_END = re.compile(r"(?<=[;!?。；！？])|\n|\.(?=\s|$)")


def sentences(text: str, max_chars: int | None = None) -> list[str]:
    """The text's sentences (the first `max_chars` characters when given), empty ones left
    out: what every words reader matches one at a time, so a cue and a negation are read in
    the same sentence and never across two."""
    head = text if max_chars is None else text[:max_chars]
    return [s for s in _SENTENCE_END.split(head) if s and s.strip()]


def said_unnegated(
    text: object,
    said: re.Pattern[str],
    negated: re.Pattern[str],
    *,
    max_chars: int,
    skip: tuple[re.Pattern[str], ...] = (),
    keep: Callable[[re.Match[str]], bool] | None = None,
) -> bool:
    """Whether a sentence of the text says `said` with no `negated` before it in the same
    sentence: what every words reader asks. Sentences any `skip` pattern finds are not read;
    `keep` may refuse a match by its own text. Never raises (the text is untrusted)."""
    if not isinstance(text, str) or not text.strip():
        return False
    try:
        for sentence in sentences(text, max_chars):
            if any(pattern.search(sentence) for pattern in skip):
                continue
            for match in said.finditer(sentence):
                if keep is not None and not keep(match):
                    continue
                if not negated.search(sentence[: match.start()]):
                    return True
        return False
    except Exception:  # a reader of untrusted text must not stop the doctor
        return False
