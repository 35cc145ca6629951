"""Terminal escape sequences an untrusted text may carry (issue 14, item 4), and the check
that shown text carries none of them raw; shared by tests/hostile and tests/tui."""

from __future__ import annotations

import re

TITLE = "\x1b]0;pwned\x07"  # sets the terminal title
WIPE = "\x1b[2J"  # wipes the screen
EVIL = f"{TITLE}{WIPE}\x9b31m\u202eevil"  # plus a C1 CSI and a bidi override
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def is_clean(text: str) -> bool:
    """No control character, C1 code or bidi override left raw in `text`."""
    return RAW.search(text) is None
