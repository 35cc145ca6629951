"""Line-level recognition of vLLM (0.2 to 0.33), PyTorch, NCCL and Ray log lines.

A line is first normalised (vllm_log_normalize: colour codes, other tools' prefixes, HTML
entities, pydantic's wrapper), then split into vLLM's prefix and the message, then matched
against the catalog's rules (vllm_log_rules): a cheap substring test first ("needles",
"fragments") and a regex only when one is present, so a log that grows by megabytes costs
little more than splitting it into lines. The wordings are vLLM's own (probes/vllm_catalog,
read from its wheels), PyTorch's, NCCL's and Ray's (from captured fixtures).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from headroom.probes.vllm_log_normalize import normalize_line, strip_ansi
from headroom.probes.vllm_log_rules import (
    KINDS,
    RULES,
    Rule,
    candidates,
    cut_needle_rules,
    lowercase_rules,
)

__all__ = [
    "KINDS",
    "RULES",
    "LogEvent",
    "classify_line",
    "classify_normalized",
    "is_client_text",
    "normalize_line",
    "split_prefix",
    "strip_ansi",
]


@dataclass(frozen=True)
class LogEvent:
    """One recognised log line: what it means (`kind`), how bad, and the numbers in it."""

    kind: str
    severity: str  # "info" | "warning" | "error"
    line: str  # the line as read, colour codes removed
    fields: Mapping[str, object] = field(default_factory=dict)
    lineno: int | None = None
    # The catalog entry that recognised it (vllm_catalog.SIGNATURES id); not part of equality.
    signature: str | None = field(default=None, compare=False)
    # Read from a traceback's raise statement, not from the message: the message's own line,
    # when the paste has it, replaces this event (LogDigest).
    from_source: bool = field(default=False, compare=False)


# "(EngineCore_DP0 pid=12) INFO 11-29 11:24:21 [core.py:133] message" (0.9+), the older
# "(VllmWorkerProcess pid=236) ERROR 08-23 08:25:25 multiproc_worker_utils.py:226] message",
# "(VllmWorker rank=1 pid=9) ..." (0.8-0.9), Ray's "(RayWorkerWrapper pid=9, ip=10.0.0.2) ...",
# and all of them without the process part. VLLM_LOGGING_PREFIX or torch's "[rank0]: " may
# stand in front (catalog PREFIX_FORMS).
# Ray names a task without an actor class "(pid=1234)" or "(pid=1234, ip=10.0.0.2)".
_PROC = r"\((?:(?P<proc>[^()]{1,60}?) )?pid=(?P<pid>\d+)(?:, ip=[^()\s]+)?\)"
_PREFIX = re.compile(
    r"(?P<pre>.*?)(?:" + _PROC + r"\s+)?"
    r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+"
    r"\[?(?P<where>[\w./-]+:\d+)\]\s?"
)
# A traceback relayed line by line: "(EngineCore_DP0 pid=8884) torch.OutOfMemoryError: ...",
# "[rank0]: ValueError: ...", "(RayWorkerWrapper pid=9, ip=...) RuntimeError: ...".
_PROC_ONLY = re.compile(r"\s*(?:(?:\[rank\d+\]:|" + _PROC + r")\s?)+")
_LEVELS = ("DEBUG ", "INFO ", "WARNING ", "ERROR ", "CRITICAL ")


def split_prefix(line: str) -> tuple[dict[str, str] | None, str]:
    """(prefix parts or None, message) for one vLLM log line."""
    match = _prefix_match(line)
    if match is None:
        return None, line
    parts = {k: v for k, v in match.groupdict().items() if v is not None and k != "pre"}
    # a relayed traceback line keeps its indentation after the prefix: keep it for _CODE_LINE
    return parts, line[match.end() :]


def _prefix_match(line: str) -> re.Match[str] | None:
    match = None
    if (
        "INFO " in line
        or "WARNING " in line
        or "ERROR " in line
        or any(
            level in line
            for level in _LEVELS[::4]  # DEBUG, CRITICAL: rare, tested last
        )
    ):
        match = _PREFIX.match(line, 0, min(len(line), 300))  # the prefix is short: bound the work
        if match is not None and len(match.group("pre")) > 40:
            match = None
    if match is None and ("pid=" in line or "[rank" in line):
        match = _PROC_ONLY.match(line)
    return match


def prefix_match(line: str) -> re.Match[str] | None:
    """The match of the line's vLLM prefix (logger or process tag), or None."""
    return _prefix_match(line)


def has_logger_prefix(match: re.Match[str] | None) -> bool:
    """True for a logger line's prefix (level, time, file): a record of its own."""
    return match is not None and match.groupdict().get("level") is not None


# Lines of a traceback body (source lines, carets) repeat the words of the errors; they must
# not count as the errors themselves.
_CODE_LINE = re.compile(r"^\s*(?:File \"|raise |\^|~|return |await |self\.|async with )")


def classify_line(line: str, lineno: int | None = None) -> LogEvent | None:
    """What one log line says, or None for a line that is not one Headroom knows (keep it)."""
    if not line:
        return None
    try:
        return _classify(normalize_line(line), _UNKNOWN, lineno)
    except (RecursionError, MemoryError, ValueError, TypeError, OverflowError):
        return None  # never let one strange line stop the reader


def classify_normalized(clean: str, lineno: int | None = None) -> LogEvent | None:
    """classify_line for a line already through normalize_line."""
    if not clean:
        return None
    try:
        return _classify(clean, _UNKNOWN, lineno)
    except (RecursionError, MemoryError, ValueError, TypeError, OverflowError):
        return None


# Lines that carry a client's text (request logger): never an event, whatever they quote.
_CLIENT_TEXT = re.compile(
    r"\s*(?:" + "|".join(rule.regex for rule in RULES if rule.kind is None and rule.regex)
    + ")"
)  # fmt: skip
_JOINED_EXCEPTION = re.compile(r"[)\"'] (?=(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception): )")
_RAY_REPEATED = re.compile(r" \[repeated \d+x across cluster\]$")


def is_client_text(line: str) -> bool:
    """True for a request-logger line (a client's prompt, body or output, quoted): whatever it
    says, it is not vLLM's own. For readers of raw lines (the doctor's regex rules)."""
    if "equest" not in line and "esponse" not in line:  # most lines: no regex at all
        return False
    clean = normalize_line(line)
    prefix = _prefix_match(clean)
    return bool(_CLIENT_TEXT.match(clean if prefix is None else clean[prefix.end() :]))


def _printer(match: re.Match[str] | None) -> str | None:
    """The file name in the prefix's [file:line], or None when the line has no logger prefix."""
    where = match.groupdict().get("where") if match is not None else None
    return where.rsplit(":", 1)[0].rsplit("/", 1)[-1] if where else None


# An opening quote: not an apostrophe inside a word ("model's", "it's"), and not the quote of
# an exception's repr ("RayTaskError(ValueError('No available memory ...'))", as frameworks
# that wrap vLLM print it): that text is the exception's own, not a quoted client's.
_OPENING_QUOTE = re.compile(r"(?<![A-Za-z0-9])(?<!Error\()(?<!Exception\()['\"]")


def _first_quote(message: str) -> int:
    if "'" not in message and '"' not in message:
        return -1
    found = _OPENING_QUOTE.search(message)
    return found.start() if found else -1


# "not computed yet" (never a real prefix)
_UNKNOWN: re.Match[str] | None = re.compile("").match("")


def _classify(clean: str, prefix: re.Match[str] | None, lineno: int | None) -> LogEvent | None:
    if ' HTTP/1.1" ' in clean:  # uvicorn's access log: one line per request
        return None
    by_needle, by_fragment = candidates(clean)
    # Only a bare error line (no vLLM prefix: a paste, a thread title) is scanned for a
    # needle cut off at its end; a server's own lines are never cut.
    may_be_cut = "rror" in clean or "ssert" in clean
    if not by_needle and not by_fragment and not may_be_cut:  # most lines: nothing to test
        return None
    if prefix is _UNKNOWN:
        prefix = _prefix_match(clean)
    may_be_cut = may_be_cut and prefix is None
    if not by_needle and not by_fragment and not may_be_cut:
        return None
    message = clean if prefix is None else clean[prefix.end() :]
    if _CLIENT_TEXT.match(message):
        return None
    if _CODE_LINE.match(message):
        # A traceback's source line is not the error, unless a paste joined the error to it:
        # 'raise ValueError("...") ValueError: No available memory ...'
        joined = _JOINED_EXCEPTION.search(message)
        if joined is None:
            # relayed by a logger or a process tag, the line is a log's traceback frame; a bare
            # one may be code a person quotes to discuss it
            return None if prefix is None else _raised_literal(clean, message, by_needle, lineno)
        message = message[joined.start() + 1 :]
    if message.endswith("across cluster]"):
        message = _RAY_REPEATED.sub("", message)
    line = _Line(
        clean, message, _printer(prefix), _first_quote(message), lineno, bare=prefix is None
    )
    weaker: list[tuple[int, int]] | None = None
    for number in by_needle:  # a needle in the prefix alone does not count: test the message
        rule = RULES[number]
        if rule.generic and weaker is None:
            # a fragment or a cut needle of a specific text is worth more than "some error"
            weaker = _weaker_hits(message, by_fragment, may_be_cut)
            event = _first_event(line, weaker, relaxed=True)
            if event is not _NO_MATCH:
                return event
        at = min((i for needle in rule.needles if (i := message.find(needle)) >= 0), default=-1)
        event = _event(rule, line, at, relaxed=False)
        if event is not _NO_MATCH:
            return event
    if weaker is None:
        event = _first_event(line, _weaker_hits(message, by_fragment, may_be_cut), relaxed=True)
        if event is not _NO_MATCH:
            return event
    if may_be_cut and message.islower():  # a whole error line lower-cased by someone
        lowered = _Line(clean, message, line.printer, line.quote, lineno, True, line.bare)
        event = _first_event(lowered, lowercase_rules(message), relaxed=True)
        if event is not _NO_MATCH:
            return event
    return None


# A traceback's last frame quoting the raise itself, its message a literal: '(EngineCore_DP0
# pid=223840) ERROR 10-25 13:08:43 [core.py:708]     raise ValueError("No available memory for
# the cache blocks. "' (vllm-project/vllm#27508). A paste cut after that frame has no error
# line; the literal is the message vLLM raised (its first words).
_RAISE_LITERAL = re.compile(r"\s*raise\s+[A-Za-z_][\w.]*\(\s*[rRfFbBuU]{0,2}[\"'](?P<text>.+)$")


def _raised_literal(
    clean: str, message: str, by_needle: list[int], lineno: int | None
) -> LogEvent | None:
    """The event of a raised text quoted in its raise statement, None otherwise. Only texts
    an exception carries count (a logger's text has files that print it; a generic entry
    matches any error), read with their numbers optional: a literal holds none."""
    raised = _RAISE_LITERAL.match(message)
    if raised is None:
        return None
    text = raised.group("text")
    line = _Line(clean, text, None, -1, lineno, bare=True)
    for number in by_needle:
        rule = RULES[number]
        if rule.generic or rule.printed_by or rule.kind is None:
            continue
        at = min((i for needle in rule.needles if (i := text.find(needle)) >= 0), default=-1)
        event = _event(rule, line, at, relaxed=True)
        if event is not _NO_MATCH and event is not None:
            # a literal's "{error_str}" is no number: the event says the kind alone
            return LogEvent(event.kind, event.severity, clean, {}, lineno, rule.id, True)
    return None


@dataclass(frozen=True)
class _Line:
    clean: str
    message: str
    printer: str | None
    quote: int
    lineno: int | None
    ignore_case: bool = False
    bare: bool = False  # no vLLM prefix: a paste, a thread title, a person's sentence


# A line that starts with an exception's header ("ValueError: ..."): a quote inside it may hold
# text a client supplied, so it keeps the quote rule.
_EXCEPTION_HEAD = re.compile(
    r"\s*(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Warning)\b", re.I
)
# What may stand between a person's opening quote and the needle: the text before it (an
# exception's type, "CUDA error:", a number), no other quote.
_QUOTED_HEAD = re.compile(r"(?:[^'\"]|(?<=[A-Za-z])'(?=[A-Za-z])){0,400}")  # "model's" is no quote
_CLOSING_QUOTE = {q: re.compile(r"(?<![A-Za-z])" + q + r"|" + q + r"(?![A-Za-z])") for q in "'\""}


def _quotes_the_error(line: _Line, at: int) -> bool:
    """A person quoting the error in their own words ("... docker image raise 'CUDA error: no
    kernel image is available ...' for Llama4", a thread title): a bare line, not JSON, not an
    exception's own message, whose quote opens the text (the needle within its first words)."""
    message, quote = line.message, line.quote
    head = message.lstrip()[:2]
    if (
        not line.bare
        or head[:1] == "{"
        or head in ('["', "['", "[{")
        or _EXCEPTION_HEAD.match(message)
    ):
        return False  # JSON (a request body) or an exception's own message
    return _QUOTED_HEAD.fullmatch(message, quote + 1, at) is not None


_NO_MATCH = LogEvent("", "", "")  # a rule that does not apply (None: a line that is no event)


def _weaker_hits(message: str, by_fragment: list[int], may_be_cut: bool) -> list[tuple[int, int]]:
    """(rule number, where its text starts) for fragments, then cut needles, in RULES order."""
    hits = []
    for number in by_fragment:
        at = min(
            (i for piece in RULES[number].fragments if (i := message.find(piece)) >= 0), default=-1
        )
        if at >= 0:
            hits.append((number, at))
    if may_be_cut:
        hits += [hit for hit in cut_needle_rules(message) if hit[0] not in dict(hits)]
    return hits


def _first_event(line: _Line, hits: list[tuple[int, int]], *, relaxed: bool) -> LogEvent | None:
    for number, at in hits:
        event = _event(RULES[number], line, at, relaxed=relaxed)
        if event is not _NO_MATCH:
            return event
    return _NO_MATCH


def _event(rule: Rule, line: _Line, at: int, *, relaxed: bool) -> LogEvent | None:
    """The rule's event for the line, None for a recognised line that is no event, _NO_MATCH
    when the rule does not apply. `relaxed`: found by a fragment or a cut needle, so the
    regex adds fields when it matches but is not required to."""
    if at < 0:
        return _NO_MATCH
    # By structure: a logger's text counts only from the files that print it, and a text
    # quoted inside another message (a prompt, a config value) is not the event itself.
    if line.printer is not None and rule.printed_by and line.printer not in rule.printed_by:
        return _NO_MATCH
    text = line.message
    if 0 <= line.quote < at and not rule.quoted:
        if not _quotes_the_error(line, at):
            return _NO_MATCH
        # the regex reads the quoted text alone, as vLLM printed it
        closing = _CLOSING_QUOTE[text[line.quote]].search(text, at)
        text = text[line.quote + 1 : closing.start() if closing else len(text)]
    fields: dict[str, object] = {}
    pattern = rule.pattern_ignoring_case if line.ignore_case else rule.pattern
    if pattern is not None:
        match = pattern.search(text)
        if match is None:
            if rule.require_match and not relaxed:
                return _NO_MATCH
        elif rule.extract is not None:
            fields = {k: v for k, v in rule.extract(match).items() if v is not None}
    if rule.kind is None:
        return None
    return LogEvent(rule.kind, rule.severity, line.clean, fields, line.lineno, rule.id)
