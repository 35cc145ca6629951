"""What a restart with changed knobs would launch (the preview), and the one knob
--auto-fix may change. The restarting itself is restarter.Restarter.

A change map mixes vLLM engine-arg names (max_model_len, kv_cache_memory_bytes...) with
environment variables (UPPER_CASE names such as NCCL_P2P_DISABLE); both show in the diff.
REMOVE (a doctor "unset") drops a flag in every spelling, or one of Headroom's environment
overrides; a variable inherited from Headroom's own environment cannot be dropped (refused).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from headroom.doctor import Action, Diagnosis, Finding, plan_to_changes
from headroom.supervisor.states import RELEVANT_ENV, FlagChangeView
from headroom.vllm_cmd import (
    REMOVE,
    STARS,
    VllmCommand,
    apply_changes,
    diff_flags,
    is_secret_name,
    redact_argv,
    redact_env,
    render,
)

ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")


def split_changes(changes: Mapping[str, object]) -> tuple[dict[str, object], dict[str, object]]:
    """(flag changes, env changes): UPPER_CASE names are environment variables."""
    flags = {k: v for k, v in changes.items() if not ENV_NAME.match(k)}
    env = {k: v for k, v in changes.items() if ENV_NAME.match(k)}
    return flags, env


def apply_env(env: Mapping[str, str], changes: Mapping[str, object]) -> dict[str, str]:
    out = dict(env)
    for key, value in changes.items():
        if value is None or value is REMOVE:
            out.pop(key, None)
        else:
            out[key] = str(value)
    return out


@dataclass(frozen=True)
class RestartPreview:
    """What a restart with `changes` would launch: the one place a new command line is made.

    The restart dialog shows exactly this diff, and Restarter.restart launches exactly this
    command and environment.
    """

    changes: Mapping[str, object]
    command: VllmCommand
    env: dict[str, str]  # the child's environment overrides (not os.environ)
    diff: tuple[FlagChangeView, ...]
    argv: tuple[str, ...]  # the new command line, redacted, for "restart it yourself"


def preview_restart(
    command: VllmCommand,
    env: Mapping[str, str],
    changes: Mapping[str, object],
    *,
    relevant_env: Callable[[Mapping[str, str]], Mapping[str, str]],
    argv_for: Callable[[VllmCommand], Sequence[str]],
) -> RestartPreview:
    """The command, env and diff a restart with these changes would use (nothing runs).

    relevant_env(overrides): the redacted environment that matters for the child with these
    overrides (the diff's "env NAME" rows); argv_for(command): its full command line.
    Raises the command module's ValueError for a change it cannot apply.
    """
    flag_changes, env_changes = split_changes(changes)
    new_cmd = apply_changes(command, flag_changes) if flag_changes else command
    new_env = apply_env(env, env_changes)
    diff = [_shown(c.name, c.old, c.new) for c in diff_flags(command, new_cmd)]
    old_rel, new_rel = relevant_env(env), relevant_env(new_env)
    for key, value in env_changes.items():
        if (value is None or value is REMOVE) and key in new_rel:
            # Only Headroom's own overrides can be taken away: a variable the child inherits
            # from the environment Headroom runs in would still reach vLLM.
            raise ValueError(
                f"{key} comes from the environment Headroom was started in, not from its "
                f"overrides: unset it there (`unset {key}`) and start again"
            )
    for key in sorted(set(old_rel) | set(new_rel)):
        if old_rel.get(key) != new_rel.get(key):
            diff.append(FlagChangeView(f"env {key}", old_rel.get(key), new_rel.get(key)))
    argv = tuple(redact_argv(argv_for(new_cmd)))
    return RestartPreview(dict(changes), new_cmd, new_env, tuple(diff), argv)


def _shown(name: str, old: object, new: object) -> FlagChangeView:
    """A diff row; a secret's values (an --api-key change) as "***"."""
    if not is_secret_name(name):
        return FlagChangeView(name, old, new)
    return FlagChangeView(name, None if old is None else STARS, None if new is None else STARS)


def journaled_changes(changes: Mapping[str, object]) -> dict[str, object]:
    """A change map as the journal and the events keep it: plain values, secrets hidden."""
    return {k: STARS if is_secret_name(k) else plain(v) for k, v in changes.items()}


def preview_for_command(
    command: VllmCommand, changes: Mapping[str, object], env: Mapping[str, str] | None = None
) -> RestartPreview:
    """The same preview for a command line without a Supervisor (a recorded demo server,
    or a server only attached to): the new command line as vLLM would be given it."""
    return preview_restart(
        command,
        dict(env or {}),
        changes,
        relevant_env=lambda overrides: redact_env(
            {k: v for k, v in sorted(overrides.items()) if RELEVANT_ENV.match(k)}
        ),
        argv_for=render,
    )


def auto_fix_changes(
    diagnosis: Diagnosis | None, command: VllmCommand | None = None, root_line: str | None = None
) -> tuple[dict[str, object], Finding, Action] | None:
    """The top finding's first action that has a value: (changes, finding, action), or None.

    One knob per restart. When the start-up failure's root-cause line is known, the
    findings that cite it come first (a side remark the doctor ranked higher, e.g. a slow
    start, is not what stopped vLLM). An action that would leave the command as it is
    (already set, e.g. by an earlier auto-fix) is passed over for the next one.
    """
    if diagnosis is None:
        return None
    findings = list(diagnosis.findings)
    if root_line:
        root = root_line.strip()
        citing = [f for f in findings if any(root in e or e in root for e in f.evidence if e)]
        findings = citing + [f for f in findings if f not in citing]
    for finding in findings:
        for action in finding.actions:
            if not action.applicable:
                continue
            try:
                changes = plan_to_changes(action)
            except (ValueError, TypeError, KeyError):
                continue
            if command is not None and all(
                not ENV_NAME.match(k) and _already(command, k, v) for k, v in changes.items()
            ):
                continue  # already so: trying it again would only repeat the failure
            if changes:
                return dict(changes), finding, action
    return None


def _already(command: VllmCommand, knob: str, value: object) -> bool:
    """The command line is already so: the knob at this value, or absent for a removal."""
    if value is REMOVE:
        return not command.has(knob)
    return command.get(knob) == value


def plain(value: object) -> object:
    if value is REMOVE:
        return None
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)
