"""Re-adopt a server an earlier Headroom started (after an SSH drop or a detach), from its
state file: same process group, same log, same journal record."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import psutil

from headroom.supervisor.journal import Journal
from headroom.supervisor.process import ManagedProcess, process_create_time
from headroom.supervisor.secret_store import read_secrets, restore
from headroom.supervisor.settings import SupervisorSettings
from headroom.supervisor.statefile import ServerRecord, list_states, read_state
from headroom.supervisor.supervisor import EventListener, Supervisor
from headroom.vllm_cmd import CommandLineError, VllmCommand, parse_command
from headroom.vllm_cmd.config_file import with_config_file_if_readable

REDACTED_MARK = "***"


class AdoptError(RuntimeError):
    """The state file points at a server that cannot be re-adopted, with the reason."""


def group_is_the_servers(pid: int, pgid: int) -> bool:
    """Does process group `pgid` hold only `pid` and its descendants (a server started in a
    group of its own: by Headroom, by an interactive shell's job control, by systemd)?"""
    try:
        tree = {pid, *(c.pid for c in psutil.Process(pid).children(recursive=True))}
    except psutil.Error:
        return False
    for proc in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.pid not in tree:
                return False
        except OSError:
            continue
    return True


def group_to_stop(pid: int) -> int:
    """The process group a stop of server `pid` signals; `pid` itself (not a group leader: the
    server and what it started are signalled one by one) when its group is ours, or is shared
    with other programs (servers started side by side by one script share its group: stopping
    one took the others down). Raises OSError when the process is gone."""
    pgid = os.getpgid(pid)
    if pgid == os.getpgid(0) or not group_is_the_servers(pid, pgid):
        return pid
    return pgid


def adopt(
    record: ServerRecord,
    settings: SupervisorSettings | None = None,
    *,
    journal: Journal | None = None,
    on_event: EventListener | None = None,
    nvml_probe: object | None = None,
) -> Supervisor:
    """A Supervisor bound to the running server of `record`; call `await sup.watch()`.

    The stored command line and env are redacted; the secrets a later relaunch needs come
    from the side file next to the state file. settings.launcher is taken from the record.
    """
    process = ManagedProcess.adopt(record.pid, record.pgid, record.create_time)
    if process is None:
        raise AdoptError(f"the server of {record.url} (pid {record.pid}) is no longer running")
    settings = _with_launcher(settings, record.launcher)
    # The secrets a relaunch needs come back from the 0600 side file (secret_store.py);
    # what cannot come back stays redacted, and a relaunch with it is refused.
    flags, env = restore(record.flags, record.env, read_secrets(record.port, settings.state_dir))
    argv = ["vllm", "serve", *([record.model] if record.model else []), *flags]
    try:
        command = with_config_file_if_readable(parse_command(argv))
    except CommandLineError as exc:
        raise AdoptError(f"the state file's command line cannot be read: {exc}") from exc
    env = {k: v for k, v in env.items() if REDACTED_MARK not in v}
    sup = Supervisor(
        command, settings, env=env, journal=journal, on_event=on_event, nvml_probe=nvml_probe
    )
    sup.adopt_running(
        process,
        run_id=record.run_id,
        log_path=Path(record.log_path),  # the whole log: rebuilds the digest's start-up facts
        started_at=record.started_at,
    )
    return sup


def _with_launcher(settings: SupervisorSettings | None, launcher: str) -> SupervisorSettings:
    return replace(settings or SupervisorSettings(), launcher=launcher)


def find_adoptable(port: int | None = None, state_dir: Path | None = None) -> ServerRecord | None:
    """The live server on `port` (or the only live one when port is None)."""
    if port is not None:
        record = read_state(port, state_dir)
        return record if record is not None and record.alive() else None
    live = list_states(state_dir)
    return live[0] if len(live) == 1 else None


def listener_pid(port: int) -> int | None:
    """The pid listening on a local TCP port, when this user may see it (else None)."""
    try:
        connections = psutil.net_connections(kind="tcp")
    except (psutil.Error, OSError):
        return None
    for conn in connections:
        if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port:
            return conn.pid
    return None


def adopt_unmanaged(
    command: VllmCommand,
    settings: SupervisorSettings | None = None,
    *,
    journal: Journal | None = None,
    on_event: EventListener | None = None,
    nvml_probe: object | None = None,
) -> Supervisor:
    """Take over a server Headroom did not start, to be able to restart it: the caller says
    how it was launched (`command` as parsed from its launch line, and settings.launcher).
    Its process is found by the port it listens on. Its log is not Headroom's: until the
    first restart only /health and the process are watched (follow its log with `attach`).
    Raises AdoptError when nothing (visible) listens on the port.
    """
    sup = Supervisor(command, settings, journal=journal, on_event=on_event, nvml_probe=nvml_probe)
    pid = listener_pid(sup.port)
    if pid is None:
        raise AdoptError(
            f"no process of this user listens on port {sup.port} (a container or another "
            "user's server cannot be stopped from here; restart it with its own tools)"
        )
    try:
        pgid = group_to_stop(pid)
    except OSError as exc:
        raise AdoptError(f"cannot read the process group of pid {pid}: {exc}") from exc
    process = ManagedProcess.adopt(pid, pgid, process_create_time(pid))
    if process is None:
        raise AdoptError(f"pid {pid} on port {sup.port} exited meanwhile")
    sup.adopt_running(process)
    return sup
