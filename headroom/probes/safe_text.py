"""The one sanitizer for untrusted text on its way to a terminal (TUI or plain output).

    safe_text("llama\x1b]0;pwned\x07")           -> 'llama\\x1b]0;pwned\\x07'
    safe_text("line one\nline two", multiline=True)  keeps the newline

A model name from /metrics, a log line, a config.json string or a journal entry can hold
escape sequences: printed raw, `ESC ] 0 ; ... BEL` sets the terminal's title, `ESC [ 2 J`
wipes the screen, C1 `\x9b` is a one-byte CSI on some terminals, and bidi overrides
(U+202E) make text read other than it is. Every such character is shown as its Python
escape instead (`\x1b`, `\x9b`, `\u202e`), so the text stays readable and inert. Tab stays
(harmless and meaningful); newline stays only with `multiline=True`; a trailing `\r` (CRLF
line ends) is dropped. Rich markup is a separate concern: the TUI escapes it with
`rich.markup.escape` where it builds markup; this function does not touch `[`.

Imported by every layer that shows text (cli, tui), so it lives at the bottom (probes) and
needs nothing but `re`.
"""

from __future__ import annotations

import re

# C0 controls except tab and newline, DEL, C1 controls, and the bidi embedding/override and
# isolate characters (Trojan-source style reordering).
_UNSAFE_CLASS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069"
_UNSAFE_MULTILINE = re.compile(f"[{_UNSAFE_CLASS}]")
_UNSAFE_ONE_LINE = re.compile(f"[{_UNSAFE_CLASS}\n]")
_NAMED = {"\n": "\\n", "\r": "\\r"}


def safe_text(text: object, *, multiline: bool = False) -> str:
    """`text` with every control character shown escaped; never raises (None -> "")."""
    if text is None:
        return ""
    if not isinstance(text, str):
        text = str(text)
    if text.endswith("\r"):
        text = text.rstrip("\r")
    pattern = _UNSAFE_MULTILINE if multiline else _UNSAFE_ONE_LINE
    if multiline and "\r\n" in text:
        text = text.replace("\r\n", "\n")
    if pattern.search(text) is None:  # the common case: nothing to do, no copy
        return text
    return pattern.sub(_escape, text)


def safe_optional(text: str | None) -> str | None:
    """safe_text for a value that may be unknown (None stays None)."""
    return None if text is None else safe_text(text)


def is_safe(text: str, *, multiline: bool = False) -> bool:
    """True when `text` holds nothing safe_text would escape."""
    pattern = _UNSAFE_MULTILINE if multiline else _UNSAFE_ONE_LINE
    return pattern.search(text) is None


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"
