"""Secrets out of vLLM command lines and environments before anything is logged or journaled."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from headroom.vllm_cmd.flags import lookup_option
from headroom.vllm_cmd.scan import looks_like_flag

_SECRET_FLAGS = {"api_key", "hf_token"}
_SECRET_ENV = re.compile(
    r"(^|_)(TOKEN|API_KEY|KEY|SECRET|PASSWORD|PASSWD)($|_)|SECRET|PASSWORD|^AUTHORIZATION$",
    re.IGNORECASE,
)
_NOT_SECRET_ENV = {"SSH_AUTH_SOCK", "KEYTIMEOUT"}
ENV_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", re.DOTALL)
_BEARER = re.compile(r"(?i)(authorization:\s*(?:bearer\s+)?|bearer\s+)\S+")
STARS = "***"


def _is_secret_env(name: str) -> bool:
    return name.upper() not in _NOT_SECRET_ENV and bool(_SECRET_ENV.search(name))


def _is_secret_flag(option: str) -> bool:
    name = option.lstrip("-").replace("-", "_").lower()
    return name in _SECRET_FLAGS or name.endswith(("_api_key", "_token", "_secret", "password"))


def redact_argv(argv: Sequence[str]) -> list[str]:
    """A copy of argv with secrets replaced by "***": every value of --api-key (it takes one
    or more), --hf-token and other *-token/*-secret flags, `NAME=value` environment
    assignments with secret names, and bearer tokens."""
    out: list[str] = []
    hide_left = 0  # how many more following value tokens to hide
    for token in map(str, argv):
        if hide_left and not looks_like_flag(token):
            out.append(STARS)
            hide_left -= 1
            continue
        hide_left = 0
        option, eq, _ = token.partition("=")
        if token.startswith("-") and _is_secret_flag(option):
            if eq:
                out.append(f"{option}={STARS}")
            else:
                out.append(token)
                spec = lookup_option(option)
                hide_left = len(argv) if spec is not None and spec.nargs == "+" else 1
            continue
        match = ENV_ASSIGNMENT.fullmatch(token)
        if match and _is_secret_env(match.group(1)):
            out.append(f"{match.group(1)}={STARS}")
            continue
        out.append(_BEARER.sub(lambda m: m.group(1) + STARS, token))
    return out


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of env with HF_TOKEN, *_TOKEN, *_API_KEY, *_KEY, *SECRET*, passwords -> "***"."""
    return {k: (STARS if _is_secret_env(k) else v) for k, v in env.items()}


# A secret's value in text: `'api_key': ['k1', 'k2']` / `"hf_token": "v"` (vLLM's
# "non-default args" dict, JSON), `--api-key k` / `--hf-token=v` (a command line in a log
# line), `HF_TOKEN=v` (an environment assignment).
_SECRET_NAME = r"(?:api[_-]?key|hf[_-]?token|[\w-]*(?:_|-)(?:token|secret|password|api[_-]key))"
_QUOTED = r"""(?:'[^']*'|"[^"]*")"""
_KEY_VALUE = re.compile(
    rf"""(?ix)
    (?P<head>['"]{_SECRET_NAME}['"]\s*:\s*)
    (?P<value>\[\s*{_QUOTED}(?:\s*,\s*{_QUOTED})*\s*\]|{_QUOTED}|[^\s,}}\]]+)
    """
)
_FLAG_VALUE = re.compile(rf"(?i)(?P<head>--{_SECRET_NAME}(?:=|\s+))(?P<value>[^\s'\"]+)")
_ENV_VALUE = re.compile(
    r"(?P<head>\b[A-Za-z_]*(?:TOKEN|API_KEY|SECRET|PASSWORD|PASSWD)[A-Za-z0-9_]*=)"
    r"(?P<value>[^\s'\"]+)"
)
_HINT = re.compile(r"(?i)key|token|secret|passw|bearer|authorization")
# Values shorter than this are not searched for as text: they would match ordinary words (an
# HF_HUB_DISABLE_IMPLICIT_TOKEN=true is "secret" by its name). By-name redaction still hides
# them after --api-key, in vLLM's non-default args and in NAME=value.
MIN_SECRET_VALUE = 8


def searchable(value: str) -> bool:
    """Worth looking for as text: long enough and not a plain number."""
    return len(value) >= MIN_SECRET_VALUE and not value.isdigit()


def _stars_for(match: re.Match[str]) -> str:
    value = match.group("value")
    if value.startswith("["):
        count = max(value.count("'") + value.count('"'), 2) // 2
        return match.group("head") + "[" + ", ".join(["'***'"] * count) + "]"
    if value[:1] in "'\"":
        return match.group("head") + value[0] + STARS + value[0]
    return match.group("head") + STARS


def redact_text(text: str, values: Sequence[str] = ()) -> str:
    """`text` (a log line, a message) with secrets replaced by "***": the given secret
    `values` wherever they appear, then anything that looks like a secret by its name
    (vLLM's `non-default args: {'api_key': [...]}`, `--api-key k`, `HF_TOKEN=v`) and bearer
    tokens. Cheap for the usual line that has none of these."""
    for value in values:
        if searchable(value) and value in text:
            text = text.replace(value, STARS)
    if not _HINT.search(text):
        return text
    text = _KEY_VALUE.sub(_stars_for, text)
    text = _FLAG_VALUE.sub(lambda m: m.group("head") + STARS, text)
    text = _ENV_VALUE.sub(
        lambda m: m.group("head") + (STARS if _is_secret_env(m.group("head")[:-1]) else m["value"]),
        text,
    )
    return _BEARER.sub(lambda m: m.group(1) + STARS, text)


def secret_values(argv: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """The secret values on a command line (what redact_argv hides) and in an environment
    (what redact_env hides), longest first, so they can be found in text."""
    found: set[str] = set()
    for token, shown in zip(map(str, argv), redact_argv(argv), strict=True):
        if shown == STARS:  # a value token of --api-key and the like
            found.add(token)
        elif shown.endswith("=" + STARS):  # --api-key=k, HF_TOKEN=v
            found.add(token.partition("=")[2])
    found.update(v for k, v in env.items() if _is_secret_env(k) and v and v != STARS)
    return sorted(found - {"", STARS}, key=len, reverse=True)


def is_secret_name(name: str) -> bool:
    """A knob or environment variable whose value must not be shown (api_key, HF_TOKEN)."""
    return _is_secret_flag(name) or _is_secret_env(name)
