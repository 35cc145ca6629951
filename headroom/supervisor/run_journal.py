"""The run journal writer and the state file: what the supervisor records about each run.

Order matters (issue 14, item 6): a launch is journaled and its state file written from
facts Headroom already holds (command, pid, log path) before anything that reads the model
or the GPUs, so a crafted model directory that makes that reading fail or crawl can never
leave a running server without a state file (an orphan no later Headroom can re-adopt).
The context (model shape, GPUs, topology) is added afterwards, off the event loop, and a
failure there is a notice, never an error.

A full disk must not stop the server from being watched: every write is best effort and
says what went wrong through the `notice` callback.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from headroom.probes.topology import read_topology
from headroom.supervisor import statefile
from headroom.supervisor.gpus import GpuAccess
from headroom.supervisor.journal import Journal, RunRecord, new_run_id
from headroom.supervisor.run_state import Run
from headroom.supervisor.run_stats import gpus_from_snapshot, model_shape_dict, topology_summary
from headroom.supervisor.secret_store import remove_secrets, write_secrets

Notice = Callable[[str], None]


class RunJournal:
    """Writes one record per run (and its updates) and the state file of the running server."""

    def __init__(self, journal: Journal, state_dir: Path | None, notice: Notice) -> None:
        self.journal = journal
        self.state_dir = state_dir
        self.notice = notice

    # -- journal ------------------------------------------------------------------------
    def begin(self, record: RunRecord) -> str:
        """Append the record of a run that just launched; returns its run id."""
        record.run_id = record.run_id or new_run_id()
        self._safely("could not write the run journal", self.journal.append, record)
        return record.run_id

    def update(self, run_id: str | None, **fields: object) -> None:
        if run_id:
            self._safely("could not write the run journal", self.journal.update, run_id, **fields)

    def _safely(self, what: str, fn: Callable, *args: object, **kwargs: object) -> None:
        try:
            fn(*args, **kwargs)
        except OSError as exc:  # a full disk must not stop the server from being watched
            self.notice(f"{what}: {exc}")
        except (ValueError, TypeError, OverflowError, RecursionError) as exc:
            # A value that cannot be written (e.g. a 5,000-digit number read from a crafted
            # model file): the run goes on without that record change.
            self.notice(f"{what}: {type(exc).__name__}: {str(exc)[:200]}")

    async def add_context(
        self,
        run_id: str | None,
        model: str | None,
        gpus: GpuAccess,
        env: dict[str, str],
        world: int = 0,
    ) -> None:
        """GPUs, model shape and topology for the run's record, read off the event loop.
        `world` (GPUs the run takes on this node, 0 = unknown) keeps the record to the GPUs
        vLLM uses, the first `world` visible ones: a TP 2 run on a 4-GPU host is 2 GPUs."""
        if not run_id:
            return
        fields: dict[str, object] = {}
        try:
            shape = await asyncio.to_thread(model_shape_dict, model)
        except Exception as exc:  # a crafted model directory: say so, keep supervising
            self.notice(f"could not read the model's shape for the journal: {exc!r}"[:300])
            shape = None
        if shape is not None:
            fields["model_shape"] = shape
        indices = GpuAccess.indices(env)
        try:
            snapshot = await gpus.read()
        except Exception:
            snapshot = None
        if snapshot is not None:
            used = gpus_from_snapshot(snapshot, indices)
            if indices is not None:  # CUDA_VISIBLE_DEVICES' order is vLLM's rank order
                order = {index: rank for rank, index in enumerate(indices)}
                used.sort(key=lambda g: order.get(int(g["index"]), len(order)))
            if world and len(used) > world:
                used = used[:world]
                indices = [int(g["index"]) for g in used]  # the topology of the same GPUs
            fields["gpus"] = used
        if fields:
            self.update(run_id, **fields)
        if gpus.probe() is None:
            return  # no GPUs to describe
        try:
            matrix = await read_topology(gpus.nvml_module)
        except Exception:
            return
        summary = topology_summary(matrix, indices)
        if summary:
            self.update(run_id, topology=summary)

    def last_good_start(self, model: str | None) -> float | None:
        """Seconds the last good start of this model took, from the journal."""
        try:
            records = self.journal.records()
        except OSError:
            return None
        for record in reversed(records):
            if record.model == model and record.time_to_ready_s:
                try:
                    return float(record.time_to_ready_s)
                except (TypeError, ValueError):
                    continue
        return None

    def record_launch(
        self,
        run: Run,
        *,
        model: str | None,
        argv: list[str],
        flags: list[str],
        real_flags: list[str],
        env_overrides: Mapping[str, str],
        launcher: str,
        template: str,
        env: dict[str, str],
        port: int,
        url: str,
    ) -> None:
        """The journal record and the state file of a run just launched (argv, flags and
        env come redacted), from what is known already: nothing here reads the model. The
        secrets a relaunch needs (real_flags, env_overrides) go to the 0600 side file."""
        process = run.process
        if process is None or run.log_path is None:
            return
        record = RunRecord(
            run_id=run.run_id or new_run_id(),
            model=model,
            command=argv,
            flags=flags,
            launcher=launcher,
            env=env,
            port=port,
            log_path=str(run.log_path),
            trigger=run.trigger,
            parent_run_id=run.parent_run_id,
            changes=run.changes,
        )
        run.run_id = self.begin(record)
        try:
            write_secrets(port, real_flags, env_overrides, self.state_dir)
        except OSError as exc:
            self.notice(f"could not keep the server's secrets for a relaunch: {exc}")
        self.write_state(
            statefile.ServerRecord(
                pid=process.pid,
                pgid=process.pgid,
                port=port,
                url=url,
                model=model,
                argv=argv,
                flags=flags,
                launcher=template,
                env=env,
                log_path=str(run.log_path),
                started_at=time.time(),
                create_time=process.create_time,
                run_id=run.run_id,
                headroom_pid=os.getpid(),
            )
        )

    # -- state file ---------------------------------------------------------------------
    def write_state(self, record: statefile.ServerRecord) -> None:
        try:
            statefile.write_state(record, self.state_dir)
        except (OSError, ValueError, TypeError) as exc:
            self.notice(f"could not write the state file (no re-adoption after a drop): {exc}")

    def remove_state(self, port: int) -> None:
        try:
            statefile.remove_state(port, self.state_dir)
            remove_secrets(port, self.state_dir)
        except OSError as exc:
            self.notice(f"could not remove the state file: {exc}")

    def read_state(self, port: int) -> statefile.ServerRecord | None:
        return statefile.read_state(port, self.state_dir)


def prune_logs(folder: Path, keep: int = 200) -> int:
    """Delete all but the newest `keep` per-run logs (run ids sort by time); returns how many."""
    try:
        logs = sorted(p for p in folder.glob("*.log") if p.is_file())
    except OSError:
        return 0
    removed = 0
    for path in logs[: max(len(logs) - keep, 0)]:
        try:
            path.unlink()
            removed += 1
        except OSError:
            pass
    return removed
