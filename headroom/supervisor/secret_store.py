"""What a relaunch needs that must not be written in clear: the secret flag values (an
--api-key) and secret environment overrides (HF_TOKEN) of a running server.

The state file keeps its command line redacted like everything else Headroom writes; the
real values go to a side file beside it, `server-PORT.secrets`, mode 0600 in the 0700 state
folder, removed with the state file. Why a side file and not a reference to an environment
variable: the key is often given on Headroom's own command line (`headroom serve M --api-key
K`), so the Headroom that re-adopts the server after an SSH drop has no variable to read it
from; vLLM's `--api-key` takes several keys, which one VLLM_API_KEY cannot hold; and a vLLM
release that does not read VLLM_API_KEY would start without any authentication, silently.
Without the side file (deleted, unreadable, or an older Headroom's state), the redacted
command line is kept and a relaunch is refused with the reason (never `--api-key ***`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from headroom.probes.untrusted_json import load_json_file
from headroom.supervisor.paths import private_dir, state_dir
from headroom.vllm_cmd import STARS, redact_argv, redact_env

MAX_SECRETS_BYTES = 1 << 20


@dataclass(frozen=True)
class RelaunchSecrets:
    flags: tuple[str, ...]  # the real vLLM flag tokens; redact_argv(flags) is the state file's
    env: dict[str, str]  # real values of the secret environment overrides


def secrets_path(port: int, base: Path | None = None) -> Path:
    return (base or state_dir()) / f"server-{port}.secrets"


def write_secrets(
    port: int, flags: Sequence[str], env: Mapping[str, str], base: Path | None = None
) -> Path | None:
    """Keep the real values of the secrets in `flags` and `env` (None: there are none, and
    an old side file is removed)."""
    secret_env = {k: v for k, v in env.items() if redact_env({k: v})[k] != v}
    if list(redact_argv(flags)) == list(flags) and not secret_env:
        remove_secrets(port, base)
        return None
    path = secrets_path(port, base)
    private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, json.dumps({"flags": list(flags), "env": secret_env}).encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return path


def read_secrets(port: int, base: Path | None = None) -> RelaunchSecrets | None:
    """The side file of the server on `port`; None when absent, unreadable or malformed."""
    try:
        data = load_json_file(secrets_path(port, base), max_bytes=MAX_SECRETS_BYTES)
    except (OSError, ValueError, TypeError, RecursionError, OverflowError):
        return None
    if not isinstance(data, dict):
        return None
    flags, env = data.get("flags"), data.get("env")
    if not isinstance(flags, list) or not all(isinstance(t, str) for t in flags):
        return None
    if not isinstance(env, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in env.items()
    ):
        return None
    return RelaunchSecrets(tuple(flags), dict(env))


def remove_secrets(port: int, base: Path | None = None) -> None:
    try:
        secrets_path(port, base).unlink()
    except FileNotFoundError:
        pass


def restore(
    flags: Sequence[str], env: Mapping[str, str], secrets: RelaunchSecrets | None
) -> tuple[list[str], dict[str, str]]:
    """The state file's redacted flags and env with the real values put back from the side
    file, where it matches them; what cannot be restored stays redacted."""
    out_flags = list(flags)
    if secrets is not None and list(redact_argv(secrets.flags)) == out_flags:
        out_flags = list(secrets.flags)
    out_env = dict(env)
    for key, value in env.items():
        if value == STARS and secrets is not None and key in secrets.env:
            out_env[key] = secrets.env[key]
    return out_flags, out_env


def refusal(missing: Sequence[str]) -> str:
    """Why a relaunch with these redaction markers is refused, and what to do."""
    return (
        f"cannot relaunch: the command line has a secret Headroom does not know "
        f"({', '.join(missing)}; the state file keeps it redacted and the side file with "
        "the real value is gone). Stop the server and start it again with the real value, "
        "e.g. `headroom serve MODEL --api-key ...`"
    )


def redacted_parts(argv: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """The redaction markers in a command line and environment about to be launched, each
    with its flag ("--api-key ***", "HF_TOKEN=***"); empty when there are none."""
    found = []
    for index, token in enumerate(argv):
        if token == STARS:
            before = argv[index - 1] if index else ""
            found.append(f"{before} {token}" if before.startswith("-") else token)
        elif token.endswith("=" + STARS):
            found.append(token)
    found += [f"{k}={STARS}" for k, v in env.items() if v == STARS]
    return found
