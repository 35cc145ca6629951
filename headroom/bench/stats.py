"""Per-request timings and the per-step figures computed from them.

A step's client-side figures (requests/s, output tokens/s, TTFT/ITL/e2e percentiles, errors)
come from what the bench itself measured; the server-side ones (KV usage peak, preemptions,
waiting peak, GPU memory and utilisation) from samples of /metrics and NVML taken during the
step. Anything that could not be measured is None, never a guess.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TypedDict


@dataclass
class RequestResult:
    """What one request did, in seconds of time.monotonic()."""

    started_at: float
    first_token_at: float | None = None
    finished_at: float | None = None
    token_times: list[float] = field(default_factory=list)  # arrival of each content chunk
    output_tokens: int = 0  # from `usage` when the server sends it, else chunk count
    prompt_tokens: int | None = None  # from `usage`
    error: str | None = None
    cut: bool = False  # still running when its step ended (aborted, not an error)

    @property
    def ttft(self) -> float | None:
        return None if self.first_token_at is None else self.first_token_at - self.started_at

    @property
    def e2e(self) -> float | None:
        if self.finished_at is None or self.error is not None or self.cut:
            return None
        return self.finished_at - self.started_at

    def inter_token_gaps(self) -> list[float]:
        times = self.token_times
        return [b - a for a, b in zip(times, times[1:], strict=False)]


@dataclass(frozen=True)
class ServerSample:
    """One reading of the server and GPUs during a step (None where unreadable)."""

    kv_usage: float | None = None
    waiting: float | None = None
    running: float | None = None
    preemptions_total: float | None = None
    gpu_memory_used_bytes: int | None = None  # summed over the GPUs read
    gpu_util: float | None = None  # mean over GPUs, percent


@dataclass(frozen=True)
class StepResult:
    """One concurrency step of the ramp; the `steps` objects of `bench --json`."""

    concurrency: int
    duration_s: float
    requests: int  # completed successfully
    errors: int
    cut: int  # still running at the step's end and aborted
    requests_per_s: float | None
    output_tokens_per_s: float | None
    mean_prompt_tokens: float | None
    mean_output_tokens: float | None
    ttft_p50: float | None
    ttft_p95: float | None
    itl_p50: float | None
    itl_p95: float | None
    e2e_p50: float | None
    e2e_p95: float | None
    kv_usage_peak: float | None = None
    preemptions: float | None = None
    waiting_peak: float | None = None
    gpu_memory_peak_bytes: int | None = None
    gpu_util_mean: float | None = None
    gpu_util_peak: float | None = None
    error_examples: tuple[str, ...] = ()
    itl_mean: float | None = None  # mean gap between tokens (steady, unlike p50 under bursts)

    def to_json(self) -> dict[str, object]:
        out = asdict(self)
        out["error_examples"] = list(self.error_examples)
        return out

    @classmethod
    def from_json(cls, data: dict) -> StepResult:
        known = {f for f in cls.__dataclass_fields__}
        kwargs = {k: v for k, v in data.items() if k in known}
        kwargs["error_examples"] = tuple(kwargs.get("error_examples") or ())
        return cls(**kwargs)


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated percentile (q in 0..100); None for no values."""
    clean = sorted(v for v in values if v is not None and not math.isnan(v))
    if not clean:
        return None
    if len(clean) == 1:
        return clean[0]
    rank = (len(clean) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(clean) - 1)
    return clean[low] + (clean[high] - clean[low]) * (rank - low)


def summarise_step(
    concurrency: int,
    duration_s: float,
    results: Iterable[RequestResult],
    samples: Sequence[ServerSample] = (),
    window: tuple[float, float] | None = None,
) -> StepResult:
    """Fold a step's request results and server samples into its figures.

    Output tokens count every token that arrived within the step window (`window`, monotonic
    start/end), including those of requests cut at the end, so tokens/s is the rate the server
    really sustained; requests/s counts only the requests that finished.
    """
    results = list(results)
    done = [r for r in results if r.error is None and not r.cut and r.finished_at is not None]
    errors = [r for r in results if r.error is not None]
    cut = [r for r in results if r.cut and r.error is None]
    tokens = sum(_tokens_in_window(r, window) for r in results if r.error is None)
    ttfts = [r.ttft for r in results if r.ttft is not None and r.error is None]
    gaps = [g for r in results if r.error is None for g in r.inter_token_gaps()]
    e2es = [r.e2e for r in done if r.e2e is not None]
    prompts = [r.prompt_tokens for r in done if r.prompt_tokens is not None]
    rate_ok = duration_s > 0
    return StepResult(
        concurrency=concurrency,
        duration_s=round(duration_s, 6),
        requests=len(done),
        errors=len(errors),
        cut=len(cut),
        requests_per_s=len(done) / duration_s if rate_ok else None,
        output_tokens_per_s=tokens / duration_s if rate_ok and results else None,
        mean_prompt_tokens=sum(prompts) / len(prompts) if prompts else None,
        mean_output_tokens=sum(r.output_tokens for r in done) / len(done) if done else None,
        ttft_p50=percentile(ttfts, 50),
        ttft_p95=percentile(ttfts, 95),
        itl_p50=percentile(gaps, 50),
        itl_p95=percentile(gaps, 95),
        e2e_p50=percentile(e2es, 50),
        e2e_p95=percentile(e2es, 95),
        **_server_figures(samples),
        error_examples=tuple(dict.fromkeys(r.error for r in errors if r.error))[:3],
        itl_mean=sum(gaps) / len(gaps) if gaps else None,
    )


def _tokens_in_window(result: RequestResult, window: tuple[float, float] | None) -> int:
    if window is None or not result.token_times:
        return result.output_tokens
    start, end = window
    if result.token_times[0] >= start and result.token_times[-1] <= end:
        # Whole request inside the window: trust the server's count (a chunk can hold >1 token).
        return max(result.output_tokens, len(result.token_times))
    return sum(1 for t in result.token_times if start <= t <= end)


def _max(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None


class _ServerFigures(TypedDict):
    """What the server said during a step; the keys are StepResult's field names."""

    kv_usage_peak: float | None
    preemptions: float | None
    waiting_peak: float | None
    gpu_memory_peak_bytes: int | None
    gpu_util_mean: float | None
    gpu_util_peak: float | None


def _server_figures(samples: Sequence[ServerSample]) -> _ServerFigures:
    preempt = [s.preemptions_total for s in samples if s.preemptions_total is not None]
    utils = [s.gpu_util for s in samples if s.gpu_util is not None]
    mem_peak = _max(s.gpu_memory_used_bytes for s in samples)
    # The counter only rises; a drop means the server restarted mid-step, so count from 0.
    preemptions = None
    if len(preempt) >= 2:
        preemptions = preempt[-1] - preempt[0] if preempt[-1] >= preempt[0] else preempt[-1]
    return {
        "kv_usage_peak": _max(s.kv_usage for s in samples),
        "preemptions": preemptions,
        "waiting_peak": _max(s.waiting for s in samples),
        "gpu_memory_peak_bytes": int(mem_peak) if mem_peak is not None else None,
        "gpu_util_mean": sum(utils) / len(utils) if utils else None,
        "gpu_util_peak": max(utils) if utils else None,
    }
