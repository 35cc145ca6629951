"""Run a sweep: each configuration in turn under the supervisor, the same ramp against it,
then stop and wait for the GPU memory before the next.

Per configuration: preflight and start (the supervisor's own), ready, the bench's warm-up
and ramp with a fixed seed (so every configuration sees the same requests), the per-GPU
memory and utilization sampled meanwhile, notes from what was seen (one GPU idling,
preemptions, warnings and errors in the log, steps with errors or cut short), the row and
the bench written to the run's journal record under one sweep id. A sweep run again with
the same id skips the configurations it already finished, so an interrupted sweep resumes.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from headroom.bench.journal import record_bench
from headroom.bench.ramp import BenchConfig, BenchError, BenchResult, run_bench
from headroom.probes.vllm_log import classify_line
from headroom.supervisor.journal import Journal
from headroom.supervisor.settings import SupervisorSettings
from headroom.supervisor.states import PreflightError
from headroom.supervisor.supervisor import Supervisor
from headroom.sweep.configs import SweepTry
from headroom.sweep.resume import finished_rows
from headroom.sweep.table import DEFAULT_MEMORY_MARGIN, SweepRow, row_json
from headroom.vllm_cmd import VllmCommand, apply_changes

__all__ = ["GpuSampler", "SweepProgress", "new_sweep_id", "run_sweep"]

GIB = 1024**3
UTIL_SKEW_POINTS = 30.0  # a GPU this far below the busiest one is idling


def new_sweep_id() -> str:
    return "sw-" + secrets.token_hex(4)


@dataclass
class GpuSampler:
    """Per-GPU memory peak and mean utilization while a ramp runs (NVML, or its stand-in)."""

    probe: object | None
    interval_s: float = 0.5
    peak_bytes: dict[int, int] = field(default_factory=dict)
    total_bytes: dict[int, int] = field(default_factory=dict)
    util_sum: dict[int, float] = field(default_factory=dict)
    samples: int = 0

    async def run(self) -> None:
        read = getattr(self.probe, "read", None)
        if read is None:
            return
        while True:
            snapshot = await asyncio.to_thread(read)
            for gpu in getattr(snapshot, "gpus", ()):
                if gpu.memory_used is not None:
                    self.peak_bytes[gpu.index] = max(
                        self.peak_bytes.get(gpu.index, 0), gpu.memory_used
                    )
                if gpu.memory_total:
                    self.total_bytes[gpu.index] = gpu.memory_total
                if gpu.util_gpu is not None:
                    self.util_sum[gpu.index] = self.util_sum.get(gpu.index, 0.0) + gpu.util_gpu
            self.samples += 1
            await asyncio.sleep(self.interval_s)

    def fullest(self) -> tuple[float | None, float | None]:
        """(peak GiB, total GiB) of the GPU that came closest to its limit."""
        if not self.peak_bytes:
            return None, None
        index = max(
            self.peak_bytes, key=lambda i: self.peak_bytes[i] / (self.total_bytes.get(i) or 1)
        )
        total = self.total_bytes.get(index)
        return self.peak_bytes[index] / GIB, (total / GIB if total else None)

    def used_gpus(self) -> list[int]:
        """The GPUs this server holds: a tenth of their memory or more at the peak (a GPU
        outside the configuration stays near its idle few hundred MiB)."""
        return [
            i for i, peak in self.peak_bytes.items()
            if self.total_bytes.get(i) and peak >= 0.1 * self.total_bytes[i]
        ]  # fmt: skip

    def skew_note(self) -> str | None:
        if not self.samples:
            return None
        used = self.used_gpus()
        means = {i: s / self.samples for i, s in self.util_sum.items() if i in used}
        if len(means) < 2:
            return None
        busiest, idlest = max(means, key=means.__getitem__), min(means, key=means.__getitem__)
        if means[busiest] - means[idlest] >= UTIL_SKEW_POINTS:
            return (
                f"GPU {idlest} idles: {means[idlest]:.0f}% utilization vs "
                f"{means[busiest]:.0f}% on GPU {busiest}"
            )
        return None


@dataclass(frozen=True)
class SweepProgress:
    index: int  # 0-based configuration index
    total: int
    label: str
    phase: str  # "skipped" | "starting" | "ready" | "bench" | "stopping" | "done" | "failed" | "resumed"
    row: SweepRow | None = None
    text: str = ""


def _log_notes(lines: Sequence[str]) -> list[str]:
    warnings = errors = 0
    first_error = None
    for line in lines:
        event = classify_line(line)
        if event is None:
            continue
        if event.severity == "error":
            errors += 1
            first_error = first_error or event.kind
        elif event.severity == "warning":
            warnings += 1
    notes = []
    if errors:
        notes.append(f"{errors} error line(s) in the log (first: {first_error})")
    if warnings:
        notes.append(f"{warnings} warning line(s) in the log")
    return notes


def _bench_notes(result: BenchResult) -> list[str]:
    notes = []
    preempted = sum(s.preemptions or 0 for s in result.steps)
    if preempted:
        notes.append(f"{preempted:g} preemptions during the ramp")
    # (requests cut at a step's end are normal: the step's clock ran out, not the server)
    for step in [s for s in result.steps if s.errors][:2]:
        example = f" ({step.error_examples[0]})" if step.error_examples else ""
        notes.append(f"concurrency {step.concurrency}: {step.errors} errors{example}")
    if result.stopped_reason:
        notes.append(f"ramp stopped: {result.stopped_reason}")
    return notes


def row_from(
    item: SweepTry,
    result: BenchResult,
    sampler: GpuSampler,
    *,
    run_id: str | None,
    kv_tokens: int | None,
    log_lines: Sequence[str],
    memory_margin: float,
) -> SweepRow:
    steps = result.steps
    peak = max(
        (s for s in steps if s.output_tokens_per_s),
        key=lambda s: s.output_tokens_per_s or 0,
        default=None,
    )
    c1 = next((s for s in steps if s.concurrency == 1), None)
    op = next((s for s in steps if s.concurrency == result.knee.concurrency), None) or peak
    notes = _bench_notes(result) + _log_notes(log_lines)
    skew = sampler.skew_note()
    if skew:
        notes.append(skew)
    peak_gib, total_gib = sampler.fullest()
    if peak_gib is not None and total_gib and 1 - peak_gib / total_gib < memory_margin:
        notes.append(
            f"memory peak leaves {1 - peak_gib / total_gib:.1%} (< {memory_margin:.0%}): starts, "
            "but long requests will OOM"
        )
    return SweepRow(
        label=item.label,
        gpus=item.gpus,
        outcome="done",
        run_id=run_id,
        throughput_tok_s=peak.output_tokens_per_s if peak else None,
        p95_e2e_c1_s=c1.e2e_p95 if c1 else None,
        p95_e2e_s=op.e2e_p95 if op else None,
        ttft_p95_s=op.ttft_p95 if op else None,
        itl_p95_s=op.itl_p95 if op else None,
        knee_concurrency=result.knee.concurrency,
        kv_capacity_tokens=kv_tokens,
        memory_peak_gib=round(peak_gib, 2) if peak_gib is not None else None,
        memory_total_gib=round(total_gib, 2) if total_gib is not None else None,
        notes=tuple(notes),
    )


async def run_sweep(
    base: VllmCommand,
    tries: Sequence[SweepTry],
    *,
    bench: BenchConfig,
    settings: SupervisorSettings,
    journal: Journal,
    sweep_id: str,
    env: Mapping[str, str] | None = None,
    nvml_factory: Callable[[], object | None] = lambda: None,
    memory_margin: float = DEFAULT_MEMORY_MARGIN,
    ready_timeout_s: float | None = None,
    on_progress: Callable[[SweepProgress], None] = lambda p: None,
) -> list[SweepRow]:
    rows: list[SweepRow] = []
    earlier = finished_rows(journal, sweep_id)
    for index, item in enumerate(tries):

        def say(phase: str, text: str = "", row: SweepRow | None = None) -> None:
            on_progress(SweepProgress(index, len(tries), item.label, phase, row, text))  # noqa: B023

        if item.skip_reason:
            rows.append(SweepRow(item.label, item.gpus, "skipped", notes=(item.skip_reason,)))
            say("skipped", item.skip_reason, rows[-1])
            continue
        if item.label in earlier:
            rows.append(earlier[item.label])
            say("resumed", "finished in an earlier run of this sweep", rows[-1])
            continue
        rows.append(
            await _run_one(
                base, item, bench, settings, journal, sweep_id, env, nvml_factory,
                memory_margin, ready_timeout_s, say,
            )
        )  # fmt: skip
    return rows


async def _run_one(
    base, item, bench, settings, journal, sweep_id, env, nvml_factory, memory_margin,
    ready_timeout_s, say,
) -> SweepRow:  # fmt: skip
    command = apply_changes(base, item.changes)
    probe = nvml_factory()
    sup = Supervisor(command, settings, env=env, journal=journal, nvml_probe=probe)
    say("starting", " ".join(command.tokens))
    try:
        await sup.start(reason=f"sweep {sweep_id}: {item.label}")
    except PreflightError as exc:
        row = SweepRow(item.label, item.gpus, "failed", notes=(f"preflight: {exc}",))
        say("failed", str(exc), row)
        return row
    run_id = sup.run.run_id
    try:
        row = await _measure(
            sup, item, bench, nvml_factory, run_id, journal, memory_margin, ready_timeout_s, say
        )
    finally:
        # Also when interrupted: the server goes and its memory is released; the journal
        # then holds no finished row for it, so a resumed sweep runs it again.
        say("stopping")
        await sup.stop(outcome="stopped")
        await sup.close()
    journal.update(run_id, sweep={"id": sweep_id, "label": item.label, "row": row_json(row, None)})
    say(row.outcome, "; ".join(row.notes) if row.outcome != "done" else "", row)
    return row


async def _measure(
    sup, item, bench, nvml_factory, run_id, journal, memory_margin, ready_timeout_s, say
) -> SweepRow:
    if not await sup.wait_ready(ready_timeout_s):
        why = sup.run.failure_reason or f"not ready ({sup.state.value})"
        return SweepRow(item.label, item.gpus, "failed", run_id, notes=(str(why),))
    say("ready")
    # A probe of its own, made now: one made before the server wrote anything may have
    # found no GPUs yet and would wait out its retry interval.
    sampler = GpuSampler(nvml_factory())
    sampling = asyncio.create_task(sampler.run())
    try:
        say("bench")
        result = await run_bench(replace(bench, url=sup.url, label=item.label))
    except BenchError as exc:
        return SweepRow(item.label, item.gpus, "failed", run_id, notes=(f"bench: {exc}",))
    finally:
        sampling.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sampling
    metrics = await sup.metrics.latest(sup.url, max_age_s=0.0)  # the one shared reader
    kv = metrics.total.kv_capacity_tokens
    record_bench(result, journal, run_id)
    return row_from(
        item, result, sampler, run_id=run_id, kv_tokens=kv,
        log_lines=sup.read_log(), memory_margin=memory_margin,
    )  # fmt: skip
