"""A command line as people paste it from a shell, a script or a container file, reduced
to the one command that starts the engine and the environment it runs with.

What a pasted line carries besides the command: variable assignments
(`CUDA_VISIBLE_DEVICES=0,1 python ...`, `export A=B; ...`), wrappers that run the command
(`nohup`, `sudo -E`, `env`, `time`, `conda run -n ENV`, `uv run`, `bash -c "..."`),
redirections and job control (`> log 2>&1 &`, `| tee log`), several commands in a row
(`cd /x && python ...`), and the line continuations of a multi-line paste (a lone `\\`).
None of that is vLLM's; `command_segments` takes it away and says what the environment
was. Reading never raises: whatever cannot be told apart stays a token of the command.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*", re.DOTALL)
# The variables that change what the engine does (devices, vLLM's, NCCL's, PyTorch's); the
# rest of a pasted environment (tokens, paths, proxies) is no part of the reading.
ENGINE_ENV = re.compile(
    r"(CUDA_\w+|VLLM_\w+|NCCL_\w+|PYTORCH_\w+|TORCH_\w+|NVIDIA_VISIBLE_DEVICES|"
    r"HIP_VISIBLE_DEVICES|ROCR_VISIBLE_DEVICES|OMP_NUM_THREADS|GLOO_\w+|HF_HUB_OFFLINE)"
)
# A token for the end of a line of a pasted multi-line text (a character no pasted line
# holds: shlex.split itself leaves a lone "\n" token for a `\\` continuation).
NEWLINE = "\x1e"
_CONTROL = {"&&", "||", ";", "|", "&", "|&", ";;", NEWLINE}
# `>log`, `2>&1`, `&>log`, `1>>x`, `<in`: redirections glued to their target.
_REDIRECT_GLUED = re.compile(r"(\d*|&)(>>?|<)(&?\S+)")
_REDIRECT_ALONE = re.compile(r"(\d*|&)(>>?|<)&?")
# `<model>`, `<path/to/weights>`: a placeholder a thread writes for its own value (a quoted
# token, as pasted lines quote it), not input redirected from a file named `model>`.
_PLACEHOLDER = re.compile(r"<[^<>\s]+>")
# Wrappers that run the rest of the line, and which of their options take a value.
_WRAPPERS: dict[str, set[str]] = {
    "nohup": set(),
    "time": set(),
    "exec": set(),
    "command": set(),
    "builtin": set(),
    "sudo": {"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U"},
    "nice": {"-n"},
    "ionice": {"-c", "-n"},
    "stdbuf": {"-i", "-o", "-e"},
    "timeout": {"-s", "-k"},
    "taskset": set(),  # its mask/CPU list is the first operand, taken below
    "numactl": set(),  # options glued (--cpunodebind=0) or taken below
    "chrt": set(),
    "srun": {"-N", "-n", "-c", "-p", "-w", "-t", "-J", "--gres", "--partition"},
}
_WRAPPER_OPERANDS = {"timeout": 1, "taskset": 1, "chrt": 1}
# `conda run -n ENV CMD`, `uv run CMD`, `poetry run CMD`, `pipenv run CMD`, `pdm run CMD`
_RUNNERS = {"conda", "mamba", "micromamba", "uv", "poetry", "pipenv", "pdm", "rye", "hatch"}
_RUNNER_VALUE_OPTIONS = {"-n", "--name", "-p", "--prefix", "--with", "--python", "-e", "--env"}


@dataclass(frozen=True)
class ShellCommand:
    """One command of the line: its words, and the variables set for it."""

    words: tuple[str, ...]
    env: tuple[tuple[str, str], ...]  # in the order they were set; a later one wins

    def engine_env(self) -> tuple[tuple[str, str], ...]:
        """The assignments that matter to the engine, the last of each name."""
        last = {name: value for name, value in self.env if ENGINE_ENV.fullmatch(name)}
        return tuple(last.items())

    def env_value(self, name: str) -> str | None:
        found = [value for key, value in self.env if key == name]
        return found[-1] if found else None


def split_pasted(argv: Sequence[str] | str) -> list[str]:
    """The tokens of a pasted line: a list as given (one token holding a whole line, as
    when a person quotes the line after `--`, is split like a shell would), a string split
    like a shell; quotes that do not close are split on spaces rather than refused. A text
    of several lines keeps each line's end as a NEWLINE token (a shell runs them as
    separate commands); `\\` continuations join lines, `#` comments go."""
    if isinstance(argv, str):
        return _split_text(argv)
    tokens = [str(a) for a in argv]
    if len(tokens) == 1 and (" " in tokens[0] or "\n" in tokens[0]):
        return _split_text(tokens[0])
    return tokens


def _split_text(text: str) -> list[str]:
    tokens: list[str] = []
    for line in _logical_lines(text[: 1 << 20]):
        try:
            words = shlex.split(line)
        except ValueError:  # an unclosed quote in a pasted fragment
            words = line.split()
        if words:
            tokens.extend([*words, NEWLINE])
    return tokens[:-1] if tokens else tokens


def _logical_lines(text: str) -> list[str]:
    lines, buffer = [], ""
    for line in text.replace("\r\n", "\n").split("\n"):
        if not buffer and line.strip().startswith("#"):
            continue
        if line.rstrip().endswith("\\") and not line.rstrip().endswith("\\\\"):
            buffer += line.rstrip()[:-1] + " "
            continue
        buffer += line
        if _open_quote(buffer):
            buffer += "\n"  # a quoted value over several lines (bash -c "...")
            continue
        lines.append(_without_comment(buffer))
        buffer = ""
    if buffer:
        lines.append(buffer)
    return lines


def _open_quote(text: str) -> bool:
    quote, escaped = "", False
    for ch in text:
        if escaped:
            escaped = False
        elif ch == "\\" and quote != "'":
            escaped = True
        elif quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
    return bool(quote)


def _without_comment(line: str) -> str:
    """The line without a trailing ` # comment` (outside quotes; `a#b` is no comment)."""
    quote, previous = "", " "
    for k, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and previous in " \t":
            return line[:k]
        previous = ch
    return line


def command_segments(tokens: Sequence[str]) -> list[ShellCommand]:
    """The commands of the line, wrappers and redirections taken away, each with the
    variables in force for it (`export` and a leading `A=B` both count; an `export` holds
    for the commands after it, an assignment before a command for that command alone)."""
    exported: list[tuple[str, str]] = []
    out: list[ShellCommand] = []
    for raw in _split_on_control(tokens):
        words = _without_redirections(raw)
        if not words:
            continue
        if words[0] in ("export", "set") or (words[0] == "declare" and "-x" in words):
            exported.extend(_assignments(words[1:]))
            continue
        env: list[tuple[str, str]] = []
        while words and _ASSIGNMENT.fullmatch(words[0]):
            name, value = words[0].split("=", 1)
            env.append((name, value))
            words = words[1:]
        words, inner_env = _unwrap(words)
        env.extend(inner_env)
        known = dict([*exported, *env])
        words = [_expand(w, known) for w in words] if known else words
        if not words:
            exported.extend(env)  # `A=B` alone sets a shell variable for what follows
            continue
        if words[0] in ("cd", "pushd", "source", ".", "echo", "sleep", "wait", "mkdir"):
            continue
        out.append(ShellCommand(tuple(words), tuple([*exported, *env])))
    return out


VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def _expand(word: str, known: dict[str, str]) -> str:
    """`${MODEL_PATH}` / `$TP` replaced by what the pasted text set them to (a script's
    `MODEL_PATH=...` line); a variable it does not set stays as written."""
    if "$" not in word:
        return word
    return VARIABLE.sub(lambda m: known.get(m.group(1) or m.group(2), m.group(0)), word)


def _split_on_control(tokens: Sequence[str]) -> list[list[str]]:
    parts: list[list[str]] = [[]]
    for token in tokens:
        if token in ("\\", "", "\n"):
            continue  # a line continuation left over from a multi-line paste
        if token in _CONTROL:
            parts.append([])
            continue
        if token.endswith(";") and not token.endswith("\\;") and len(token) > 1:
            parts[-1].append(token[:-1])
            parts.append([])
            continue
        parts[-1].append(token)
    return [p for p in parts if p]


def _without_redirections(words: list[str]) -> list[str]:
    kept: list[str] = []
    skip_next = False
    for word in words:
        if skip_next:
            skip_next = False
            continue
        if _REDIRECT_ALONE.fullmatch(word):
            skip_next = not word.endswith("&")  # `2>&` then `1`: rare; `>` then its file
            continue
        if (
            _REDIRECT_GLUED.fullmatch(word)
            and not word.startswith("-")
            and not _PLACEHOLDER.fullmatch(word)
        ):
            continue
        kept.append(word)
    return kept


def _assignments(words: Sequence[str]) -> list[tuple[str, str]]:
    pairs = []
    for word in words:
        if _ASSIGNMENT.fullmatch(word):
            name, value = word.split("=", 1)
            pairs.append((name, value))
    return pairs


def _unwrap(words: list[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """Take away the wrappers in front of the command (any number, in any order)."""
    env: list[tuple[str, str]] = []
    for _ in range(16):  # a wrapper of a wrapper ...; bounded so no input loops
        if not words:
            break
        program = os.path.basename(words[0])
        if program == "env":
            i = 1
            while i < len(words) and (words[i].startswith("-") or _ASSIGNMENT.fullmatch(words[i])):
                if _ASSIGNMENT.fullmatch(words[i]):
                    name, value = words[i].split("=", 1)
                    env.append((name, value))
                elif words[i] in ("-u", "--unset", "-C", "--chdir") and i + 1 < len(words):
                    i += 1
                i += 1
            words = words[i:]
        elif program in ("bash", "sh", "zsh", "dash") and "-c" in words[1:3]:
            at = words.index("-c")
            if at + 1 >= len(words):
                return [], env
            script = words[at + 1]
            if not any(c.isspace() for c in script) and at + 2 < len(words):
                # the quotes around the script were lost in the paste (`bash -c vllm serve m`):
                # bash would run the bare first word; the person meant the whole rest
                script = shlex.join(words[at + 1 :])
            inner = command_segments(split_pasted(script))
            if not inner:
                return [], env
            best = inner[-1]
            env.extend(best.env)
            words = list(best.words)
        elif program in _WRAPPERS:
            takes = _WRAPPERS[program]
            i = 1
            while i < len(words) and words[i].startswith("-"):
                i += 2 if words[i] in takes else 1
            i += _WRAPPER_OPERANDS.get(program, 0)
            words = words[i:]
        elif program == "kubectl" and len(words) > 1 and words[1] == "exec" and "--" in words:
            words = words[words.index("--") + 1 :]  # kubectl exec POD -- CMD: the pod runs CMD
        elif program in _RUNNERS and len(words) > 1 and words[1] == "run":
            i = 2
            while i < len(words) and words[i].startswith("-"):
                i += 2 if words[i] in _RUNNER_VALUE_OPTIONS else 1
            words = words[i:]
        else:
            break
    return words, env
