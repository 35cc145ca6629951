"""The vLLM child process: spawned in its own process group with its output going straight
to a log file, stopped group-wide with escalating signals, checked for orphans with psutil.

A pipe is never used for vLLM's output: if Headroom were slow or gone, a full pipe would
block vLLM's logging and with it the serving loop. The file is tailed instead.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from headroom.supervisor.paths import private_dir

# psutil is imported inside the functions that use it: its import (~20 ms, the Linux tables)
# would otherwise sit on the path to the TUI's first painted dashboard (benchmarks/startup.py),
# which imports this module through the restart driver but looks up no process.
if TYPE_CHECKING:
    import psutil


class LaunchError(RuntimeError):
    """The process could not be started at all (binary missing, not executable...)."""


def _sigint_ignored() -> bool:
    return signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def _sigint_back_to_default() -> None:
    """In the child, before exec. A Headroom started in the background by a script (`cmd &`
    without job control, some service managers) inherits SIGINT ignored, and so would vLLM:
    our graceful stop (SIGINT) would be lost and every stop escalate to SIGTERM. Handlers
    reset at exec but an ignored signal stays ignored, so only that case needs this; it is
    set only then because a preexec_fn costs subprocess its fast vfork path."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@dataclass(frozen=True)
class StopReport:
    """How a stop went: the signals that were needed and anything that had to be killed."""

    signals: tuple[str, ...]
    exit_code: int | None
    orphans_killed: tuple[int, ...] = ()
    seconds: float = 0.0
    pids: tuple[int, ...] = ()  # every pid that belonged to the server (for the memory wait)


@dataclass
class ManagedProcess:
    """A server process we started (popen set) or re-adopted from a state file (popen None)."""

    pid: int
    pgid: int
    create_time: float | None
    popen: subprocess.Popen | None = None
    seen_pids: set[int] = field(default_factory=set)
    # pid -> create_time of every process seen in the server: a worker that setsid()'d
    # and lost its parent is neither in the group nor a descendant any more.
    _seen: dict[int, float] = field(default_factory=dict)

    @classmethod
    def spawn(
        cls, argv: Sequence[str], env: Mapping[str, str], log_path: Path, cwd: Path | None = None
    ) -> ManagedProcess:
        private_dir(log_path.parent)
        # 0600: vLLM prints its non-default args (an --api-key among them) into this log.
        fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with open(fd, "ab", buffering=0) as log:
            try:
                popen = subprocess.Popen(  # noqa: S603 - argv list, never a shell
                    list(argv),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=dict(env),
                    cwd=cwd,
                    start_new_session=True,  # own session and process group
                    close_fds=True,
                    preexec_fn=_sigint_back_to_default if _sigint_ignored() else None,
                )
            except FileNotFoundError as exc:
                raise LaunchError(
                    f"cannot start {argv[0]!r}: not found on PATH (choose another launcher, "
                    "e.g. --launcher api_server, or set [serve] launcher in the config file)"
                ) from exc
            except PermissionError as exc:
                raise LaunchError(f"cannot start {argv[0]!r}: permission denied") from exc
            except OSError as exc:
                raise LaunchError(f"cannot start {argv[0]!r}: {exc.strerror}") from exc
        return cls(
            pid=popen.pid,
            pgid=popen.pid,
            create_time=process_create_time(popen.pid),
            popen=popen,
            seen_pids={popen.pid},
        )

    @classmethod
    def adopt(cls, pid: int, pgid: int, create_time: float | None) -> ManagedProcess | None:
        """Re-attach to a server started by an earlier Headroom; None if it is gone."""
        proc = cls(pid=pid, pgid=pgid, create_time=create_time, seen_pids={pid})
        return proc if proc.alive() else None

    def alive(self) -> bool:
        if self.popen is not None:
            return self.popen.poll() is None
        import psutil  # here, not at the top: see the note on the imports

        try:
            p = psutil.Process(self.pid)
            if self.create_time is not None and abs(p.create_time() - self.create_time) > 1.0:
                return False  # the pid was reused by another program
            return p.status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False

    @property
    def exit_code(self) -> int | None:
        return self.popen.poll() if self.popen is not None else None

    def members(self) -> list[psutil.Process]:
        """Live processes of the server: its process group plus any descendants that left it."""
        import psutil  # here, not at the top: see the note on the imports

        found: dict[int, psutil.Process] = {}
        try:
            root = psutil.Process(self.pid)
            if self.create_time is None or abs(root.create_time() - self.create_time) <= 1.0:
                found[root.pid] = root
                for child in root.children(recursive=True):
                    found[child.pid] = child
        except psutil.Error:
            pass
        for p in psutil.process_iter(["pid"]):
            try:
                if os.getpgid(p.pid) == self.pgid:
                    found[p.pid] = p
            except (ProcessLookupError, PermissionError, psutil.Error, OSError):
                continue
        for pid, created in list(self._seen.items()):
            if pid in found:
                continue
            try:
                p = psutil.Process(pid)
                if abs(p.create_time() - created) <= 1.0:
                    found[pid] = p
            except psutil.Error:
                del self._seen[pid]
        live = []
        for pid, p in found.items():
            try:
                if p.status() != psutil.STATUS_ZOMBIE:
                    live.append(p)
                    self.seen_pids.add(pid)
                    self._seen.setdefault(pid, p.create_time())
            except psutil.Error:
                continue
        return live

    def signal_group(self, sig: int) -> None:
        if self.pgid == self.pid and self.popen is None and not _leads_its_group(self.pid):
            # an adopted server that shares its group with other programs (adopt.py): the
            # server and what it started, one by one, never the group
            for member in self.members():
                try:
                    member.send_signal(sig)
                except Exception:  # noqa: BLE001 - psutil.Error, gone meanwhile
                    continue
            return
        try:
            os.killpg(self.pgid, sig)
        except ProcessLookupError:
            pass
        except PermissionError:
            try:
                os.kill(self.pid, sig)
            except OSError:
                pass

    async def stop(self, grace_int_s: float = 20.0, grace_term_s: float = 10.0) -> StopReport:
        """SIGINT, then SIGTERM, then SIGKILL to the whole group; then kill stragglers."""
        started = time.monotonic()
        self.members()  # remember every pid before they start to vanish
        sent: list[str] = []
        for sig, grace in ((signal.SIGINT, grace_int_s), (signal.SIGTERM, grace_term_s)):
            if not self._any_left():
                break
            self.signal_group(sig)
            sent.append(sig.name)
            await self._wait_gone(grace)
        orphans: list[int] = []
        if self._any_left():
            self.signal_group(signal.SIGKILL)
            sent.append("SIGKILL")
            await self._wait_gone(5.0)
        import psutil  # here, not at the top: see the note on the imports

        # Anything that escaped the group (setsid'd workers) is killed one by one.
        for p in self.members():
            try:
                p.kill()
                orphans.append(p.pid)
            except psutil.Error:
                pass
        if orphans:
            await self._wait_gone(5.0)
        code = None
        if self.popen is not None:
            try:
                code = await asyncio.to_thread(self.popen.wait, 5.0)
            except subprocess.TimeoutExpired:
                code = None
        return StopReport(
            signals=tuple(sent),
            exit_code=code,
            orphans_killed=tuple(orphans),
            seconds=time.monotonic() - started,
            pids=tuple(sorted(self.seen_pids)),
        )

    def anything_left(self) -> bool:
        """Is any process of the server still there (the leader or what it started)?"""
        return self._any_left()

    def _any_left(self) -> bool:
        if self.popen is not None:
            self.popen.poll()  # reap so a dead leader does not linger as a zombie
        return bool(self.members())

    async def _wait_gone(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if not self._any_left():
                return
            await asyncio.sleep(0.1)


def process_create_time(pid: int) -> float | None:
    import psutil  # here, not at the top: see the note on the imports

    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def _leads_its_group(pid: int) -> bool:
    try:
        return os.getpgid(pid) == pid
    except OSError:
        return False
