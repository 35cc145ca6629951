"""Messages wrapped over several lines: a terminal's width, an issue editor, a paste.

vLLM prints a message on one line, but what reaches Headroom may have it over two or more
("... stored in KV cache (\\n3984). Try increasing ...", vllm-project/vllm#7526). The log
reader keeps the current *paragraph*: the last line that started a record, plus the lines
that continue it. A line continues it when it is not a record of its own (no logger or
process prefix, no traceback or exception start, no NCCL line, no list item). The paragraph
joined with the line (with a space, or none where the wrap cut a word or a number in two) is
read again; when that reading says more than the paragraph alone and than the line alone, it
replaces the paragraph's reading when that was the same failure or only "some exception",
and stands beside it otherwise.

The work per line is bounded: a paragraph holds at most _MAX_LINES lines and _MAX_CHARS
characters, and a line that continues nothing costs one regex match.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from headroom.probes.vllm_catalog import SIGNATURES
from headroom.probes.vllm_log_patterns import LogEvent
from headroom.probes.vllm_log_rules import RULES, candidates

__all__ = ["Joined", "Paragraph"]

_MAX_LINES = 16
_MAX_CHARS = 1600  # vLLM's longest error texts are ~600 characters, a prefix ~80
# A line that starts a record of its own (and so continues nothing): a logger or process
# prefix ("INFO 05-09 ...", "(EngineCore_DP0 pid=1) ...", "[rank0]: ..."; a terminal's wrap
# never repeats a prefix), a traceback's lines, an exception, an NCCL line.
_RECORD_START = re.compile(
    r"\s*(?:Traceback \(|File \"|During handling|The above exception|raise |[~^]+\s*$|[-=*#]{3}|[-*] "
    r"|\([^()]{1,60}? pid=\d|\[rank\d|/\S+\.py:\d+: |\[[WEIF]\d{4} \d\d:|\((?:raylet|autoscaler|gcs_server)\b"
    r"|(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Warning|Interrupt|Exit)\b"
    r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\b|\S+:\d+:\d+ \[\d+\] NCCL)"
)
# The start of an INFO or DEBUG record without a process tag (V0's logger, uvicorn's).
_INFO_HEADS = ("INFO ", "INFO:", "DEBUG")
# A record that nothing continues: a traceback's "File" line, a Python warning's location.
_NO_CONTINUATION = re.compile(r'(?:^|[)\]:] )\s*(?:File "|\S+\.py:\d+: )|^\s*[-*] ')
_NO_SPACE_AFTER = "([{_"
_NO_SPACE_BEFORE = ")]},;.:_\u2026"
_DEVICES = ("cuda:", "cpu:", "xpu:", "npu:", "hpu:", "gpu:", "rocm:", "device:")
# A reading that only says "some exception" adds nothing to a paragraph.
_GENERIC = frozenset(sig.id for sig in SIGNATURES if sig.generic)


@dataclass(frozen=True)
class Joined:
    """A wrapped message read whole: its event, and the paragraph's earlier event it replaces."""

    event: LogEvent
    replaces: LogEvent | None


Classify = Callable[[str, "int | None"], "LogEvent | None"]


class Paragraph:
    """The record being read and the lines that continue it (see the module docstring)."""

    def __init__(self, classify: Classify) -> None:
        self._classify = classify
        self.text: str | None = None
        self.lineno: int | None = None
        self.lines = 0
        self.event: LogEvent | None = None  # what the paragraph was last read as
        self.tag = ""  # the process tag or logger header the paragraph's first line began with
        self.last = ""  # the paragraph's last line as read

    def add(
        self, clean: str, lineno: int, event: LogEvent | None, *, record: bool = False
    ) -> Joined | None:
        """Take the next (normalised) line and its own reading; returns the whole message's
        reading when the line continues the paragraph and the whole says more. `record`: the
        raw line began with a timestamp (normalised away): a logging system's new record, which
        no terminal wrap produces."""
        head = clean[:5]
        tag = _line_tag(clean) if head[:1] in "(DEIWC[" else ""
        if tag and self.text is not None and tag == self.tag and self._tagged_goes_on(clean, tag):
            clean = clean[len(tag) :]  # the message's next line behind its own repeated tag
        elif head[:1] == "(" and clean.find("pid=", 0, 72) > 0 or head == "[rank":
            # vLLM's own lines (a process tag, [rankN]): the common case, kept cheap; whether
            # anything may continue it (not an INFO or DEBUG record) is told when a line does.
            self.text, self.lineno, self.lines, self.event = clean, lineno, 1, event
            self.tag, self.last = tag, clean
            return None
        if head in _INFO_HEADS:
            self.text = None
            return None
        if not clean or clean.isspace():
            self.text = None
            return None
        if self.text is None or record or not self._continues(clean):
            self._start(clean, lineno, event)
            return None
        joined, found = self._read_joined(clean)
        # the line's trailing space stays: the next join needs to know it was there
        self.text, self.lines = joined + (" " if clean[-1:].isspace() else ""), self.lines + 1
        self.last = clean
        if found is None or found.signature in _GENERIC:
            return None
        if _same(found, self.event) or _same(found, event):
            return None
        return Joined(found, self.event)

    def _tagged_goes_on(self, clean: str, tag: str) -> bool:
        """Whether a line behind the paragraph's own tag goes on with its message: indented or
        in lower case, and no record of its own (vLLM's logger repeats its header on each line
        of a message, vllm/logger.py NewLineFormatter; its multiproc workers, torch's [rankN]
        and Ray tag every line a process prints)."""
        rest = clean[len(tag) :]
        if not rest.strip() or not (rest[:1].isspace() or rest[:1].islower()):
            return False
        return self._continues(rest)

    def _start(self, clean: str, lineno: int, event: LogEvent | None) -> None:
        if ('File "' in clean or clean.lstrip()[:1] in "/-*") and _NO_CONTINUATION.search(
            clean[:300]
        ):
            self.text = None
            return
        self.text, self.lineno, self.lines, self.event = clean[:_MAX_CHARS], lineno, 1, event
        self.tag = _line_tag(clean) if clean[:1] in "DEIWC" else ""
        self.last = clean

    def _continues(self, line: str) -> bool:
        text = self.text or ""
        if self.lines >= _MAX_LINES or len(text) + len(line) > _MAX_CHARS:
            return False
        if _RECORD_START.match(line) is not None:
            return False
        # vLLM's INFO or DEBUG record (behind its process tag) is a running server's own,
        # whole: nothing continues it.
        if (
            self.lines == 1
            and text[:1] == "("
            and (text.find(" INFO ", 0, 90) > 0 or text.find(" DEBUG ", 0, 90) > 0)
        ):
            return False
        # a new sentence after a finished one, and nothing in the paragraph still waits for its
        # end: another message (a cheap test that keeps junk lines unjoined)
        return not (
            text.rstrip()[-1:] in ".!?" and line.lstrip()[:1].isupper() and not self._pending(text)
        )

    def _pending(self, text: str) -> bool:
        """Whether the paragraph may still be one message: an error in it, or a catalog
        needle found but not yet read as an event (its numbers wrapped to later lines)."""
        if "rror" in text or "ssert" in text or "xception" in text or "ailed" in text:
            return True
        event = self.event
        if event is not None and event.severity == "error" and event.signature not in _GENERIC:
            return True
        if event is not None:
            return False
        # a distinctive needle (a short one such as "Model " is in many lines)
        return any(
            len(needle) >= 16 and needle in text
            for number in candidates(text)[0]
            for needle in RULES[number].needles
        )

    def _read_joined(self, line: str) -> tuple[str, LogEvent | None]:
        raw = self.text or ""
        text, part = raw.rstrip(), line.strip()
        # a space the terminal kept at the end of a line or the start of the next is real
        glue = " " if raw[-1:].isspace() or line[:1].isspace() else _glue(text, part)
        joined = text + glue + part
        found = self._classify(joined, self.lineno)
        if found is None or found.signature in _GENERIC:
            # the other reading of the cut: a space the wrap took, or a word it split
            other = text + (" " if not glue else "") + part
            second = self._classify(other, self.lineno)
            if second is not None and second.signature not in _GENERIC:
                return other, second
            if self.lines >= 2 and self.last:
                # a message that began on the paragraph's last line, not its first (a wrapped
                # traceback line ran on into it): the two lines alone, read only where the
                # wrap cut a catalog needle in two (a needle the pair holds and the line lacks)
                before = self.last.rstrip()
                space = self.last[-1:].isspace() or line[:1].isspace()
                pair = before + (" " if space else _glue(before, part)) + part
                needles = candidates(pair)[0]
                if needles and needles != candidates(part)[0]:
                    third = self._classify(pair, self.lineno)
                    if third is not None and third.signature not in _GENERIC:
                        return joined, third
        return joined, found


# What vLLM and its launchers put before each line a process prints: a process tag
# ("(VllmWorkerProcess pid=3230) ", "(RayWorkerWrapper pid=345, ip=10.42.9.225) "), torch's
# "[rank0]: ", a logger header ("ERROR 04-17 15:10:09 [engine.py:448] "), or a tag and a header.
_TAG = re.compile(
    r"(?:\([^()]{1,60}? pid=\d+(?:, ip=[\d.]+)?\) |\[rank\d+\]: )?"
    r"(?:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d [\d:.]+ \[?[\w.]+\.py:\d+\] )?"
)


def _line_tag(line: str) -> str:
    found = _TAG.match(line)
    return found.group(0) if found else ""


_WORD_END = re.compile(r"\w+$")
_HEX = re.compile(r"[0-9a-f]+")
_WORD_START = re.compile(r"\w+")
# The words of the catalog's texts: a wrap that cut one of them in two is told from a wrap
# between two words by whether the two pieces make one of them.
_VOCABULARY = frozenset(
    word.lower()
    for sig in SIGNATURES
    for text in (*sig.needles, *sig.fragments, *sig.examples)
    for word in _WORD_START.findall(text)
)


def _glue(text: str, part: str) -> str:
    """What the wrap took away between the two pieces: a space, or nothing."""
    last, first = text[-1:], part[:1]
    if not last or not first:
        return " "
    if last in _NO_SPACE_AFTER or first in _NO_SPACE_BEFORE:
        return ""  # inside brackets, before punctuation
    if last in "=<>" or first in "=<>":  # "x = 1", "len > 32K" keep their spaces; "OpType=" not
        return " " if text[-2:-1] == " " or part[1:2] == " " else ""
    if first.isdigit() and (last.isdigit() or (last in ".,-x" and text[-2:-1].isdigit())):
        return ""  # a number, a version, an address cut in two ("(3" / "984)", "10." / "0.0.51")
    if first.isdigit() and last == ":":
        # "cuda:" / "0", "custom_all_reduce.cuh:" / "307"; but "address:" / "10.0.0.51"
        token = text.rsplit(None, 1)[-1].lower()
        return "" if "." in token or token in _DEVICES else " "
    if (first == "'" and part[1:3] in ("s ", "t ")) or (last == "'" and part[:2] in ("s ", "t ")):
        return ""  # "there" / "'s not enough", "there'" / "s not enough"
    if first == "/" or last == "/":  # a path cut in two, or a path after a word
        token = text.rsplit(None, 1)[-1] if text.strip() else ""
        return "" if last == "/" or "/" in token else " "
    right = _WORD_START.match(part)
    if last == "." and right is not None and text[-2:-1].isalnum():
        # "PreemptionMode." / "RECOMPUTE", "torch." / "bfloat16": a name; "space." / "This": prose
        word = right.group(0)
        return "" if word[0].islower() or (len(word) > 1 and word.isupper()) else " "
    left = _WORD_END.search(text)
    if first == "(" and left is not None and left.group(0)[:1].isupper() and part[1:2].isalpha():
        return ""  # a call or a name: "Timeout" / "(ms)=600000", "WorkNCCL" / "(SeqNum=2"
    if left is None or right is None:
        return " "
    a, b = left.group(0), right.group(0)
    if (any(c.isdigit() for c in a) and any(c.isdigit() for c in b)) or (
        len(a + b) >= 8 and _HEX.fullmatch(a + b) and any(c.isdigit() for c in a + b)
    ):
        return ""  # an id cut in two ("e8013585" / "f5e8cca8", "e" / "8013585f5e")
    whole = (a + b).lower()
    if whole in _VOCABULARY and (len(whole) >= 5 or not (_is_word(a) and _is_word(b))):
        return ""  # a word cut in two ("KV ca" / "che", "Preempt" / "ionMode", "be" / "cause")
    return " "


# Words of one or two letters; any other such piece is part of a longer word.
_SHORT_WORDS = frozenset("a an as at be by do if in is it no of on or so to up we x".split())


def _is_word(piece: str) -> bool:
    lower = piece.lower()
    return lower in _SHORT_WORDS if len(lower) <= 2 else lower in _VOCABULARY


def _same(a: LogEvent | None, b: LogEvent | None) -> bool:
    return (
        a is not None
        and b is not None
        and a.signature == b.signature
        and dict(a.fields) == dict(b.fields)
    )
