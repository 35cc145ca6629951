"""Per-step figures from request timings and server samples."""

from __future__ import annotations

import statistics

from hypothesis import given
from hypothesis import strategies as st

from headroom.bench.stats import (
    RequestResult,
    ServerSample,
    StepResult,
    percentile,
    summarise_step,
)


def test_percentile_matches_statistics_quantiles() -> None:
    data = [0.1, 0.5, 0.2, 0.9, 0.3, 0.7, 0.4]
    expected = statistics.quantiles(data, n=20, method="inclusive")[18]  # the 95th
    assert abs(percentile(data, 95) - expected) < 1e-12
    assert percentile(data, 50) == statistics.median(data)
    assert percentile([], 95) is None
    assert percentile([3.0], 95) == 3.0


@given(st.lists(st.floats(0, 1e6), min_size=1, max_size=50), st.floats(0, 100))
def test_percentile_lies_within_the_data(values, q) -> None:
    p = percentile(values, q)
    assert min(values) <= p <= max(values)


def _req(start, ttft, n, gap, prompt=10):
    r = RequestResult(started_at=start)
    r.first_token_at = start + ttft
    r.token_times = [start + ttft + i * gap for i in range(n)]
    r.finished_at = r.token_times[-1]
    r.output_tokens = n
    r.prompt_tokens = prompt
    return r


def test_summarise_step_figures() -> None:
    reqs = [_req(0.0, 0.1, 11, 0.02), _req(0.5, 0.3, 11, 0.04)]
    bad = RequestResult(started_at=0.2, finished_at=0.3, error="HTTP 500: boom")
    cut = _req(0.9, 0.05, 5, 0.01)
    cut.cut = True
    step = summarise_step(
        4,
        2.0,
        [*reqs, bad, cut],
        [ServerSample(0.2, 0, 1, 5.0, 100, 50.0), ServerSample(0.8, 3, 2, 9.0, 300, 70.0)],
        window=(0.0, 2.0),
    )
    assert step.requests == 2 and step.errors == 1 and step.cut == 1
    assert step.requests_per_s == 1.0
    assert step.output_tokens_per_s == (11 + 11 + 5) / 2.0  # the cut request's tokens count
    assert abs(step.ttft_p50 - 0.1) < 1e-9  # median of 0.1, 0.3, 0.05
    assert abs(step.e2e_p95 - percentile([0.3, 0.7], 95)) < 1e-9
    assert abs(step.itl_p50 - 0.02) < 1e-9
    assert abs(step.itl_mean - (10 * 0.02 + 10 * 0.04 + 4 * 0.01) / 24) < 1e-9
    assert step.kv_usage_peak == 0.8 and step.waiting_peak == 3 and step.preemptions == 4.0
    assert step.gpu_memory_peak_bytes == 300 and step.gpu_util_mean == 60.0
    assert step.error_examples == ("HTTP 500: boom",)
    assert StepResult.from_json(step.to_json()) == step


def test_tokens_outside_the_window_do_not_count() -> None:
    r = _req(0.0, 0.0, 10, 1.0)  # tokens at 0..9 s
    step = summarise_step(1, 5.0, [r], window=(0.0, 4.5))
    assert step.output_tokens_per_s == 5 / 5.0


def test_nothing_measured_is_none_not_zero() -> None:
    step = summarise_step(1, 1.0, [RequestResult(started_at=0, finished_at=1, error="x")])
    assert step.ttft_p95 is None and step.itl_p95 is None and step.e2e_p95 is None
    assert step.kv_usage_peak is None and step.preemptions is None
    assert step.gpu_memory_peak_bytes is None


def test_preemption_counter_reset_counts_from_zero() -> None:
    step = summarise_step(
        1, 1.0, [], [ServerSample(preemptions_total=50.0), ServerSample(preemptions_total=3.0)]
    )
    assert step.preemptions == 3.0
