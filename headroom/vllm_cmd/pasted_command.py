"""The command line a pasted log carries above its error, when none is given after `--`.

People paste what their terminal shows: the line they typed (behind a shell prompt, `$ vllm
serve ...`, `(venv) user@host:~$ python -m vllm.entrypoints.openai.api_server ...`), often
over several lines with `\\` continuations, then vLLM's output. That line says the knobs in
force as well as a line after `--` would, and the doctor reads it the same way.

A line counts only when, after an optional prompt and environment assignments, it *starts*
with one of vLLM's own launchers: `vllm serve`, `python[3] -m vllm.entrypoints.*`, or a
container run of the vllm/vllm-openai image. A log line that merely names vLLM (a traceback's
`File ".../vllm/entrypoints/..."`, `INFO ... api_server.py:...`) never starts so. The first
such line wins (the one that started the failed run sits above its output); nothing here
raises, and the text's size bounds the work.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# A shell prompt before the typed line: `$ `, `# `, `> `, `user@host:~/dir$ `, `(venv) $ `,
# `PS C:\> `. Only text ending in the prompt character and a space.
_PROMPT = re.compile(
    r"^\s*(?:\([\w.\-]+\)\s*)?(?:[\w.\-]+@[\w.\-]+(?::[^\s$#>]*)?\s*)?(?:PS [^>]*)?[$#>%]\s+"
)
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=\S*")
# What the typed line starts with once the prompt and the assignments are gone.
_LAUNCHER = re.compile(
    r"^(?:(?:sudo(?: -E)?|nohup|exec|time|env|uv run|conda run -n \S+)\s+)*"
    r"(?:vllm\s+serve\b|python(?:3(?:\.\d+)?)?\s+-m\s+vllm\.entrypoints\.\S+"
    r"|(?:docker|podman)\s+run\b.*\bvllm/vllm-openai\b)"
)
# Lines looked at and characters kept: a command is at the top of what was pasted.
_MAX_LINES = 400
_MAX_CHARS = 8192


def _typed(line: str) -> str:
    """The line without a shell prompt before it (the line itself when it has none)."""
    found = _PROMPT.match(line)
    return line[found.end() :] if found else line.strip()


def _starts_a_launch(typed: str) -> bool:
    words = typed.split()
    k = 0
    while k < len(words) and _ASSIGNMENT.fullmatch(words[k]):
        k += 1
    return bool(_LAUNCHER.match(" ".join(words[k:])))


def command_in_text(lines: Iterable[str]) -> str | None:
    """The first command line in the text that starts one of vLLM's launchers, its `\\`
    continuation lines joined; None when there is none."""
    taken: list[str] = []
    for k, raw in enumerate(lines):
        if k >= _MAX_LINES:
            break
        line = str(raw).rstrip("\r\n")
        if not taken:
            typed = _typed(line)
            if not _starts_a_launch(typed):
                continue
            taken.append(typed)
        else:
            cont = line.strip()
            taken.append(cont[2:].strip() if cont.startswith("> ") else cont)  # PS2 prompt
        if not taken[-1].endswith("\\") or sum(map(len, taken)) > _MAX_CHARS:
            break
        taken[-1] = taken[-1][:-1].rstrip()
    if not taken:
        return None
    return " ".join(part for part in taken if part)[:_MAX_CHARS]
