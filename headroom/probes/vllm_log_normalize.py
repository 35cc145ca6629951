"""Undo what a terminal, a log collector or an issue editor did to a vLLM line before it is read.

vLLM prints each message on one line behind its own prefix; the logs people paste have been
through other hands: a log collector's JSON record around the line ({"log": ...} of docker's
json-file driver, {"message": ...} of Kubernetes and cloud exports), colour codes (with or without their escape byte, "[36m(main_task
pid=1)" when a terminal copy dropped the ESC), Windows line ends and tqdm's carriage returns,
the prefix of the tool that collected the line (`docker compose`'s "vllm-1  | ", `docker logs
-t`'s and CI runners' ISO timestamps, Ray's "[2026-03-25 05:44:29,435 W 39 39]", glog's
"I0510 12:34:56.123456 1234 file.cc:12] ", journald's
"May 10 12:34:56 host vllm[12]: ", `kubectl logs --prefix`'s "[pod/x/y] "), a Markdown quote
("> "), HTML entities of a page copied as text ("&gt;", "&#39;"), typographic quotes and
no-break spaces of a rich-text editor, and pydantic's wrapper around a text vLLM raised in a
config validator ("Value error, ... [type=value_error, input_value=..., input_type=...]").

`normalize_line` removes those, so that the catalog's texts match whatever reached the
paste. Every step is guarded by a cheap test (a character present, the first character of the
line), so a clean vLLM line costs a handful of `in` tests; nothing here raises.
"""

from __future__ import annotations

import json
import re

__all__ = ["normalize_line", "strip_ansi"]

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
# A colour code whose ESC byte was lost in a copy: "[36m", "[0m", "[1;31m".
_ORPHAN_SGR = re.compile(r"\[(?:\d{1,3};)*\d{1,3}m")

# Foreign prefixes, at the start of the line, any number of them (a compose prefix before a
# timestamp before a Markdown quote...).
_FOREIGN_PREFIX = re.compile(
    r"(?:"
    r">+ "  # Markdown quote, Python REPL (">, {'GPU': 1}" is text, not a quote)
    r"|\[pod/[^\]\s]{1,200}\] "  # kubectl logs --prefix
    # ISO timestamps (docker logs -t, GitHub Actions, Buildkite, python logging), bracketed or
    # not; Ray's own "[2026-03-25 05:44:29,435 W 39 39] " adds a level and two ids.
    r"|\[?\d{4}[-/]\d\d[-/]\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?"
    r"(?: [A-Z] \d+ \d+)?\]? ?[:|]? ?"
    # glog (Ray's and PyTorch's C++ logs): "I0510 12:34:56.123456  1234 file.cc:12] "
    r"|[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{1,9} +\d+ [\w.-]{1,80}:\d+\] "
    # journald / syslog: "May 10 12:34:56 host vllm[1234]: "
    r"|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d [\w.-]{1,64} [\w.@/-]{1,64}(?:\[\d{1,10}\])?: "
    # docker compose: "vllm-1  | ", "vllm_openai_1    | " (a service name, then a bar)
    r"|[A-Za-z0-9][\w.-]{0,63} *\| ?"
    r")"
)
_FIRST_CHARS = ">[0123456789ADEFIJMNOSW"  # what a prefix above starts with, bar compose

_ENTITY = re.compile(r"&(?:lt|gt|amp|quot|apos|nbsp|#39|#x27|#34|#x22|#96|#x60|#124);")
_ENTITIES = {"&lt;": "<", "&gt;": ">", "&amp;": "&", "&quot;": '"', "&apos;": "'",
             "&nbsp;": " ", "&#39;": "'", "&#x27;": "'", "&#34;": '"', "&#x22;": '"',
             "&#96;": "`", "&#x60;": "`", "&#124;": "|"}  # fmt: skip
# Rich-text editors: no-break and thin spaces, zero-width characters, typographic quotes.
_UNICODE = str.maketrans(
    {"\xa0": " ", "\u2009": " ", "\u202f": " ", "\u2007": " ", "\u200b": None, "\u200c": None,
     "\u200d": None, "\u2060": None, "\ufeff": None, "\u2018": "'", "\u2019": "'",
     "\u201c": '"', "\u201d": '"', "\u2032": "'"}
)  # fmt: skip
# pydantic's tail after the text of an exception raised in a validator.
_PYDANTIC_TAIL = re.compile(
    r"\s*\[type=[a-z_]{1,40}(?:, input_value=.*?)?(?:, input_type=\w*)?\]?\s*$"
)
_MAX_PREFIXES = 4


def strip_ansi(line: str) -> str:
    return _ANSI.sub("", line) if "\x1b" in line else line


# Collectors that store each line as JSON: docker's json-file driver ({"log": ...}), Kubernetes
# and cloud log exports ({"message": ...}, {"msg": ...}, {"textPayload": ...}).
_JSON_TEXT_KEYS = ("log", "message", "msg", "textPayload")
_MAX_JSON_LINE = 64 * 1024


def _json_payload(line: str) -> str | None:
    """The text a JSON log record carries, or None when the line is not one."""
    if len(line) > _MAX_JSON_LINE or not any(f'"{key}"' in line for key in _JSON_TEXT_KEYS):
        return None
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(record, dict):
        return None
    for key in _JSON_TEXT_KEYS:
        text = record.get(key)
        if isinstance(text, str) and text.strip():
            # one record may hold several lines (a traceback): its last says what failed
            return next(part for part in reversed(text.splitlines()) if part.strip())
    return None


def normalize_line(line: str) -> str:
    """The line as vLLM printed it, as far as that can be told (see the module docstring)."""
    if line[:2] == '{"':
        payload = _json_payload(line.strip())
        if payload is not None:
            line = payload
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    if "\r" in line:
        line = line.rstrip("\r\n")
        if "\r" in line:  # a progress bar redrawn in place: what the terminal showed last
            line = next((part for part in reversed(line.split("\r")) if part.strip()), "")
    elif line[-1:] == "\n":
        line = line.rstrip("\n")
    if not line.isascii():
        line = line.translate(_UNICODE)
    if ("[0m" in line or "[39m" in line) and _ORPHAN_SGR.search(line):
        line = _ORPHAN_SGR.sub("", line)  # a colour code is always closed by a reset
    if "&" in line and ";" in line:
        line = _ENTITY.sub(lambda m: _ENTITIES[m.group(0)], line)
    if _may_have_prefix(line):
        line = _strip_foreign_prefixes(line)
    if "[type=" in line:
        line = _PYDANTIC_TAIL.sub("", line)
    return line


def _may_have_prefix(line: str) -> bool:
    """A cheap test before the regex: a first character a foreign prefix starts with (glog's
    level letter only before a digit, so vLLM's own "INFO 05-09 ..." costs no regex)."""
    first = line[:1]
    if first in _FIRST_CHARS and first and (first not in "IWE" or line[1:2].isdigit()):
        return True
    return line.find("|", 0, 72) >= 0


def _strip_foreign_prefixes(line: str) -> str:
    for _ in range(_MAX_PREFIXES):
        if not _may_have_prefix(line):
            return line
        found = _FOREIGN_PREFIX.match(line)
        if found is None or found.end() == 0 or found.end() == len(line):
            return line
        line = line[found.end() :]
    return line
