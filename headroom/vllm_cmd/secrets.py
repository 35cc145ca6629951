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
