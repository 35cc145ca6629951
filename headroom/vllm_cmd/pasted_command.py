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
    r"|(?:docker|podman)\s+run\b.*\bvllm/vllm-openai\S*)"
)
# Lines looked at and characters kept: a command is at the top of what was pasted.
_MAX_LINES = 400
_MAX_CHARS = 8192


def _typed(line: str) -> str:
    """The line without a shell prompt before it (the line itself when it has none)."""
    found = _PROMPT.match(line)
    return line[found.end() :] if found else line.strip()


# A sentence, not a command: CJK text or full-width punctuation ("vllm serve Qwen/...到底需要
# 多大显存？", a title), a question mark at the end.
_SENTENCE = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]|\?\s*$")


def _starts_a_launch(typed: str) -> bool:
    if _SENTENCE.search(typed):
        return False
    words = typed.split()
    k = 0
    while k < len(words) and _ASSIGNMENT.fullmatch(words[k]):
        k += 1
    found = _LAUNCHER.match(" ".join(words[k:]))
    if not found:
        return False
    rest = " ".join(words[k:])[found.end() :].split()
    if found.group(0).rstrip().endswith("serve") and rest and not rest[0].startswith("-"):
        rest = rest[1:]  # the model
    return _flags_only(rest)


def _flags_only(words: list[str]) -> bool:
    """Whether what follows the launcher reads as flags and their values: a bare word after
    a value or at the start is a sentence going on ("vllm serve X fails with OOM")."""
    after_flag = False
    for word in words:
        if word.startswith("-") or word == "\\":
            after_flag = word.startswith("-") and "=" not in word
            continue
        if not after_flag:
            return False
        after_flag = False
    return True


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


def command_line_indexes(lines: list[str]) -> set[int]:
    """The indexes of the lines that are a typed launch of vLLM (and their `\\`
    continuations): what the user typed, not what anything printed or said."""
    out: set[int] = set()
    continuing = False
    for k, raw in enumerate(lines[:_MAX_LINES]):
        line = str(raw).rstrip("\r\n")
        if continuing or _starts_a_launch(_typed(line)):
            out.add(k)
            continuing = line.rstrip().endswith("\\")
    return out
