"""Line-level recognition of vLLM (0.8 to 0.33), PyTorch and NCCL log lines.

Every rule is a cheap substring test first ("needles") and a regex only when a needle is
present, so a log that grows by megabytes costs little more than splitting it into lines.
Wordings come from vLLM's format strings (see ../shared/reference/vllm-facts.md sections
2 and 3), NCCL/PyTorch signatures (gpu-facts.md section 4) and the captured fixtures.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from headroom.probes.vllm_catalog import SIGNATURES, Signature
from headroom.probes.vllm_log_fields import EXTRACTORS, num, to_int

__all__ = ["KINDS", "LogEvent", "classify_line", "is_client_text", "split_prefix", "strip_ansi"]


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


_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")

# "(EngineCore_DP0 pid=12) INFO 11-29 11:24:21 [core.py:133] message" (0.9+), the older
# "(VllmWorkerProcess pid=236) ERROR 08-23 08:25:25 multiproc_worker_utils.py:226] message",
# "(VllmWorker rank=1 pid=9) ..." (0.8-0.9), Ray's "(RayWorkerWrapper pid=9, ip=10.0.0.2) ...",
# and all of them without the process part. VLLM_LOGGING_PREFIX or torch's "[rank0]: " may
# stand in front (catalog PREFIX_FORMS).
_PROC = r"\((?P<proc>[^()]{1,60}?) pid=(?P<pid>\d+)(?:, ip=[^()\s]+)?\)"
_PREFIX = re.compile(
    r"(?P<pre>.*?)(?:" + _PROC + r"\s+)?"
    r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+"
    r"\[?(?P<where>[\w./-]+:\d+)\]\s?"
)
# A traceback relayed line by line: "(EngineCore_DP0 pid=8884) torch.OutOfMemoryError: ...",
# "[rank0]: ValueError: ...", "(RayWorkerWrapper pid=9, ip=...) RuntimeError: ...".
_PROC_ONLY = re.compile(r"\s*(?:(?:\[rank\d+\]:|" + _PROC + r")\s?)+")
_LEVELS = ("DEBUG ", "INFO ", "WARNING ", "ERROR ", "CRITICAL ")


def strip_ansi(line: str) -> str:
    return _ANSI.sub("", line) if "\x1b" in line else line


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


def _message(line: str) -> str:
    """The line without its prefix (split_prefix's message, without building the parts)."""
    match = _prefix_match(line)
    return line if match is None else line[match.end() :]


# ---------------------------------------------------------------------------------------
# Rules: built from the signature catalog (probes/vllm_catalog), in its order.


@dataclass(frozen=True)
class _Rule:
    kind: str | None  # None: a recognised line that is never an event (client text)
    severity: str
    needles: tuple[str, ...]  # at least one must be a substring of the message
    regex: str | None = None  # compiled on first use: see `pattern`
    extract: Callable[[re.Match[str]], dict[str, object]] | None = None
    require_match: bool = True  # False: needles alone classify, the regex only adds fields
    printed_by: frozenset[str] = frozenset()  # logger texts: the files allowed in the prefix
    quoted: bool = False  # the text normally sits inside quotes
    id: str = ""

    @functools.cached_property
    def pattern(self) -> re.Pattern[str] | None:
        """The compiled regex, built the first time a line holds one of the rule's needles.
        Compiling all ~100 of the catalog's regexes took about 8 ms at import, on the path to
        the TUI's first painted dashboard (benchmarks/startup.py); a running server's log
        reaches only a handful of rules. (tests/probes/test_vllm_catalog.py compiles them all.)"""
        return re.compile(self.regex) if self.regex else None


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
        else:
            out[key] = to_int(raw) if to_int(raw) is not None else raw
    return out


def _rule_of(sig: Signature) -> _Rule:
    regex = sig.pattern or None
    extract = EXTRACTORS[sig.extract] if sig.extract else (_groups if regex is not None else None)
    printed_by = frozenset(sig.printed_by) if sig.origin == "log" else frozenset()
    return _Rule(sig.kind, sig.severity, sig.needles, regex, extract, sig.require_match,
                 printed_by, sig.quoted, sig.id)  # fmt: skip


RULES: tuple[_Rule, ...] = tuple(_rule_of(sig) for sig in SIGNATURES)

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


def _needle_index(rules: tuple[_Rule, ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(key, the needles filed under it): every needle under exactly one key, its first."""
    # Client-text rules (kind None) need no key: they only matter on a line that holds some
    # other rule's needle too.
    needles = sorted({n for rule in rules if rule.kind for n in rule.needles})
    keys = _keys_for(needles)
    index: dict[str, list[str]] = {}
    for needle in needles:
        key = next(k for k in keys if k in needle)
        index.setdefault(key, []).append(needle)
    return tuple((key, tuple(needles)) for key, needles in index.items())


_NEEDLE_KEYS = _needle_index(RULES)
_RULES_OF_NEEDLE: dict[str, tuple[int, ...]] = {}
for _number, _r in enumerate(RULES):
    for _needle in _r.needles:
        _RULES_OF_NEEDLE[_needle] = (*_RULES_OF_NEEDLE.get(_needle, ()), _number)


def _candidate_rules(line: str) -> list[int]:
    """Numbers of the rules, in RULES order, with a needle somewhere in the line."""
    hits = [needles for key, needles in _NEEDLE_KEYS if key in line]  # usually empty
    if not hits:
        return []
    found = {n for needles in hits for needle in needles if needle in line
             for n in _RULES_OF_NEEDLE[needle]}  # fmt: skip
    return sorted(found)


# Lines of a traceback body (source lines, carets) repeat the words of the errors; they must
# not count as the errors themselves.
_CODE_LINE = re.compile(r"^\s*(?:File \"|raise |\^|~|return |await |self\.|async with )")


def classify_line(line: str, lineno: int | None = None) -> LogEvent | None:
    """What one log line says, or None for a line that is not one Headroom knows (keep it)."""
    if not line:
        return None
    try:
        return _classify(line, lineno)
    except (RecursionError, MemoryError, ValueError, TypeError, OverflowError):
        return None  # never let one strange line stop the reader


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
    clean = strip_ansi(line)
    prefix = _prefix_match(clean)
    return bool(_CLIENT_TEXT.match(clean if prefix is None else clean[prefix.end() :]))


def _printer(match: re.Match[str] | None) -> str | None:
    """The file name in the prefix's [file:line], or None when the line has no logger prefix."""
    where = match.groupdict().get("where") if match is not None else None
    return where.rsplit(":", 1)[0].rsplit("/", 1)[-1] if where else None


# An opening quote: not an apostrophe inside a word ("model's", "it's").
_OPENING_QUOTE = re.compile(r"(?<![A-Za-z0-9])['\"]")


def _first_quote(message: str) -> int:
    if "'" not in message and '"' not in message:
        return -1
    found = _OPENING_QUOTE.search(message)
    return found.start() if found else -1


def _classify(line: str, lineno: int | None) -> LogEvent | None:
    clean = strip_ansi(line).rstrip("\r\n")
    if ' HTTP/1.1" ' in clean:  # uvicorn's access log: one line per request
        return None
    candidates = _candidate_rules(clean)
    if not candidates:  # most lines: no rule's needle at all
        return None
    prefix = _prefix_match(clean)
    message = clean if prefix is None else clean[prefix.end() :]
    if _CLIENT_TEXT.match(message):
        return None
    if _CODE_LINE.match(message):
        # A traceback's source line is not the error, unless a paste joined the error to it:
        # 'raise ValueError("...") ValueError: No available memory ...'
        joined = _JOINED_EXCEPTION.search(message)
        if joined is None:
            return None
        message = message[joined.start() + 1 :]
    if message.endswith("across cluster]"):
        message = _RAY_REPEATED.sub("", message)
    printer = _printer(prefix)
    quote = _first_quote(message)
    for number in candidates:  # a needle in the prefix alone does not count: test the message
        rule = RULES[number]
        at = min((i for needle in rule.needles if (i := message.find(needle)) >= 0), default=-1)
        if at < 0:
            continue
        # By structure: a logger's text counts only from the files that print it, and a text
        # quoted inside another message (a prompt, a config value) is not the event itself.
        if printer is not None and rule.printed_by and printer not in rule.printed_by:
            continue
        if 0 <= quote < at and not rule.quoted:
            continue
        fields: dict[str, object] = {}
        if rule.pattern is not None:
            match = rule.pattern.search(message)
            if match is None:
                if rule.require_match:
                    continue
            elif rule.extract is not None:
                fields = {k: v for k, v in rule.extract(match).items() if v is not None}
        if rule.kind is None:
            return None
        return LogEvent(rule.kind, rule.severity, clean, fields, lineno, rule.id)
    return None
