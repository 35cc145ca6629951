"""Which lines of a log are vLLM's own error (or warning) messages, read whole.

The fix reader (vllm_hints) must only ever read vLLM's words: a fix a person wrote ("I tried
increasing gpu_memory_utilization"), a client's quoted prompt (the request logger) or a
traceback's source line (`raise ValueError("... Try increasing ...")`, which the exception
line below it repeats) is not vLLM telling what to change. A message is vLLM's when it is:

- a logger record at WARNING or above ("ERROR 05-09 00:49:33 [core.py:123] ..."), the text
  after the prefix;
- an exception as Python prints it ("ValueError: ...", "torch.OutOfMemoryError: ...", behind
  a process tag or "[rank0]:", or after other words on a pasted title line: "[Bug]:
  RuntimeError: ..."; a paste that lowered the case, "valueerror: ...", counts too);
- the JSON error body the OpenAI server returns, as a client prints it
  ({"object":"error","message":"..."}).

A message a terminal or an editor wrapped goes on over the lines after it that start no
record of their own (at most _MAX_CONTINUED). Never raises; the work is bounded by the
lines read (_MAX_LINES), their length (_MAX_CHARS) and the messages kept (_MAX_MESSAGES).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from headroom.probes.vllm_log_patterns import is_client_text, prefix_match

__all__ = ["VllmMessage", "vllm_messages"]

_MAX_LINES = 20000
_MAX_CHARS = 4000
_MAX_CONTINUED = 4
_MAX_MESSAGES = 64


@dataclass(frozen=True)
class VllmMessage:
    """One message of vLLM's: where it starts, how bad, its text (wrapped lines joined)."""

    lineno: int
    severity: str  # "error" | "warning"
    text: str
    line: str  # the line it starts on


# "ValueError: ...", "torch.OutOfMemoryError: ...", "vllm.v1.engine.exceptions.X: ...".
_EXCEPTION = re.compile(
    r"(?:^|(?<=[\s:\[(\"'>]))(?P<name>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:error|exception))"
    r"\s*:\s+(?P<text>\S.*)",
    re.IGNORECASE,
)
_JSON_ERROR = re.compile(r"\"message\"\s*:\s*\"(?P<text>(?:[^\"\\]|\\.){8,2000})\"", re.IGNORECASE)
# A source line of a traceback, or code: never the message itself.
_CODE = re.compile(
    r"^\s*(?:File \"|raise |\^|~|return |assert |if |elif |except |def |\w+\s*=[^=])"
)
# What starts a record of its own (and so continues no message).
_RECORD = re.compile(
    r"^\s*(?:Traceback \(|File \"|During handling|The above exception|\^|~|[-=*#]{3}|\[rank\d|"
    r"\(\w[^()]{0,60}pid=\d|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\b|\{|\[\w)"
)
_LEVELS = {"WARNING": "warning", "ERROR": "error", "CRITICAL": "error"}


def vllm_messages(lines: Iterable[object], first_lineno: int = 1) -> list[VllmMessage]:
    """vLLM's own messages in `lines` (normalised log lines), in order, the last
    _MAX_MESSAGES of them. Never raises."""
    kept = [line[:_MAX_CHARS] if isinstance(line, str) else "" for _, line in
            zip(range(_MAX_LINES), lines, strict=False)]  # fmt: skip
    # the last messages: a failure is at the end of a long log, after its start's warnings
    out: deque[VllmMessage] = deque(maxlen=_MAX_MESSAGES)
    for index, line in enumerate(kept):
        try:
            found = _message_of(line)
        except (RecursionError, MemoryError, ValueError, TypeError):
            found = None
        if found is None:
            continue
        severity, text = found
        text = _continued(text, kept, index)
        out.append(VllmMessage(first_lineno + index, severity, text.strip(), line))
    return list(out)


# Every message above holds one of these (an exception's name, a level, the JSON body): the
# cheap test before any regex, for the many lines of a running server that hold none.
_NEEDLES = ("rror", "RROR", "xception", "XCEPTION", "WARNING", "CRITICAL", '"object"')


def _message_of(line: str) -> tuple[str, str] | None:
    if not any(needle in line for needle in _NEEDLES) or is_client_text(line):
        return None
    prefix = prefix_match(line)
    rest = line[prefix.end() :] if prefix is not None else line
    level = prefix.groupdict().get("level") if prefix is not None else None
    if _CODE.match(rest):  # a traceback's source line, relayed behind a prefix or not
        return None
    if level is not None:
        severity = _LEVELS.get(level)
        if severity is None:  # INFO / DEBUG: vLLM saying what it does
            return None
        exception = _EXCEPTION.match(rest)
        return severity, exception.group("text") if exception else rest
    exception = _EXCEPTION.search(rest, 0, 400)
    if exception is not None:
        return "error", exception.group("text")
    if '"object"' in rest and "error" in rest.lower():
        body = _JSON_ERROR.search(rest)
        if body is not None:
            return "error", body.group("text").replace('\\"', '"')
    return None


def _continued(text: str, lines: list[str], index: int) -> str:
    """The message with the lines that continue it (a wrap cut it mid-sentence)."""
    for line in lines[index + 1 : index + 1 + _MAX_CONTINUED]:
        if text.rstrip().endswith((".", "!", "?", ")")) or not line.strip():
            break
        if _RECORD.match(line) or _EXCEPTION.match(line.lstrip()) or _CODE.match(line):
            break
        text = f"{text.rstrip()} {line.strip()}"
    return text
