"""Restart with changed knobs, roll back to the last good configuration, back off crash
loops, and pick the one knob --auto-fix may change.

A change map mixes vLLM engine-arg names (max_model_len, kv_cache_memory_bytes...) with
environment variables (UPPER_CASE names such as NCCL_P2P_DISABLE); both show in the diff.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from headroom.supervisor.states import FlagChangeView, RestartOutcome, ServerState
from headroom.vllm_cmd import REMOVE, VllmCommand, apply_changes, diff_flags

if TYPE_CHECKING:
    from headroom.supervisor.supervisor import Supervisor

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


def preview(
    sup: Supervisor, changes: Mapping[str, object]
) -> tuple[VllmCommand, dict[str, str], tuple[FlagChangeView, ...]]:
    """The command, env and diff a restart with these changes would use (nothing runs).

    Raises the cmdline module's ValueError for a change it cannot apply.
    """
    flag_changes, env_changes = split_changes(changes)
    new_cmd = apply_changes(sup.command, flag_changes) if flag_changes else sup.command
    new_env = apply_env(sup.env, env_changes)
    diff = [FlagChangeView(c.name, c.old, c.new) for c in diff_flags(sup.command, new_cmd)]
    old_rel, new_rel = sup.relevant_env(sup.env), sup.relevant_env(new_env)
    for key in sorted(set(old_rel) | set(new_rel)):
        if old_rel.get(key) != new_rel.get(key):
            diff.append(FlagChangeView(f"env {key}", old_rel.get(key), new_rel.get(key)))
    return new_cmd, new_env, tuple(diff)


async def restart_with_changes(
    sup: Supervisor, changes: Mapping[str, object], *, reason: str = "restart"
) -> RestartOutcome:
    from headroom.supervisor.process import LaunchError
    from headroom.supervisor.supervisor import PreflightError

    try:
        new_cmd, new_env, diff = preview(sup, changes)
    except ValueError as exc:
        return RestartOutcome(ok=False, reason=f"the change cannot be applied: {exc}")
    sup.emit(
        "restart",
        f"{reason}: " + ("; ".join(str(d) for d in diff) or "same configuration"),
        diff=[str(d) for d in diff],
        changes={k: _plain(v) for k, v in changes.items()},
    )
    parent = sup.run_id
    if sup.process is not None and sup.process.alive():
        await sup.stop(outcome="restarted")
    else:
        await sup.close()
    sup.command, sup.env = new_cmd, new_env
    sup._run_reason, sup._run_parent = reason, parent
    sup._run_changes = {k: _plain(v) for k, v in changes.items()}
    try:
        await sup.start(reason=reason)
        ok = await sup.wait_ready()
    except (PreflightError, LaunchError, RuntimeError) as exc:
        ok = False
        sup.failure_reason = sup.failure_reason or str(exc)
    finally:
        sup._run_changes = None
    if ok:
        return RestartOutcome(ok=True, reason="ready", diff=diff, run_id=sup.run_id)
    why = sup.failure_reason or "the new configuration did not become ready"
    failed_log, failed_run = sup.log_path, sup.run_id
    if sup.last_good is None or (sup.last_good == new_cmd and sup.last_good_env == new_env):
        return RestartOutcome(
            ok=False,
            reason=f"{why} (no earlier good configuration to go back to)",
            diff=diff,
            failed_log_path=failed_log,
            run_id=failed_run,
        )
    sup.emit(
        "rollback",
        f"the new configuration failed ({why[:200]}); restoring the last good one "
        f"(failed run's log kept: {failed_log})",
        failed_log_path=str(failed_log),
    )
    if failed_run:
        sup.journal.update(failed_run, outcome="rolled_back")
    rollback_ok = await _start_config(
        sup, sup.last_good, sup.last_good_env or {}, reason="rollback", parent=failed_run
    )
    return RestartOutcome(
        ok=False,
        reason=why,
        diff=diff,
        rolled_back=True,
        rollback_ok=rollback_ok,
        failed_log_path=failed_log,
        run_id=failed_run,
    )


async def _start_config(
    sup: Supervisor, command: VllmCommand, env: Mapping[str, str], *, reason: str, parent
) -> bool:
    from headroom.supervisor.process import LaunchError
    from headroom.supervisor.supervisor import PreflightError

    if sup.process is not None and sup.process.alive():
        await sup.stop(outcome="stopped")
    else:
        await sup.close()
    sup.command, sup.env = command, dict(env)
    sup._run_reason, sup._run_parent = reason, parent
    try:
        await sup.start(reason=reason)
    except (PreflightError, LaunchError, RuntimeError):
        return False
    return await sup.wait_ready()


async def after_crash(sup: Supervisor, why: str, *, stop_first: bool = False) -> None:
    """A server that was serving died: journal it, then restart with back-off, up to a limit."""
    from headroom.supervisor import ending

    sup.failure_kind = sup.failure_kind or "crash"
    await ending.finish_failed(sup, why, outcome="crashed")
    if sup.crash_count >= sup.max_crash_restarts or sup.detached:
        if sup.max_crash_restarts:
            sup.emit(
                "notice",
                f"crashed {sup.crash_count + 1} times; not restarting again "
                f"(limit {sup.max_crash_restarts}); last reason: {why[:200]}",
            )
        return
    delay = sup.crash_backoff_s * (2**sup.crash_count)
    sup.crash_count += 1
    sup.emit(
        "crash_backoff",
        f"the server crashed ({why[:200]}); restart {sup.crash_count} of "
        f"{sup.max_crash_restarts} in {delay:.0f} s",
        delay_s=delay,
        attempt=sup.crash_count,
    )
    sup.restart_pending = True
    sup._crash_task = asyncio.get_running_loop().create_task(_delayed_restart(sup, delay))


async def _delayed_restart(sup: Supervisor, delay: float) -> None:
    try:
        await asyncio.sleep(delay)
        if sup.state != ServerState.FAILED or sup.detached:
            return  # someone else acted meanwhile (stop, restart, quit)
        async with sup._restart_lock:
            await _start_config(
                sup, sup.command, sup.env, reason="crash restart", parent=sup.run_id
            )
    finally:
        sup.restart_pending = False


def auto_fix_changes(
    diagnosis, command: VllmCommand | None = None, root_line: str | None = None
) -> tuple[dict[str, object], object, object] | None:
    """The top finding's first action that has a value: (changes, finding, action), or None.

    One knob per restart. When the start-up failure's root-cause line is known, the
    findings that cite it come first (a side remark the doctor ranked higher, e.g. a slow
    start, is not what stopped vLLM). An action that would leave the command as it is
    (already set, e.g. by an earlier auto-fix) is passed over for the next one.
    """
    if diagnosis is None:
        return None
    try:
        from headroom.doctor import plan_to_changes
    except ImportError:
        return None
    findings = list(diagnosis.findings)
    if root_line:
        root = root_line.strip()
        citing = [f for f in findings if any(root in e or e in root for e in f.evidence if e)]
        findings = citing + [f for f in findings if f not in citing]
    for finding in findings:
        for action in finding.actions:
            if action.value is None:
                continue
            try:
                changes = plan_to_changes(action)
            except (ValueError, TypeError, KeyError):
                continue
            if command is not None and all(
                not ENV_NAME.match(k) and command.get(k) == v for k, v in changes.items()
            ):
                continue  # already so: trying it again would only repeat the failure
            if changes:
                return dict(changes), finding, action
    return None


def _plain(value: object) -> object:
    if value is REMOVE:
        return None
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)
