"""The knee finder on throughput curves whose knee is known by construction."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from headroom.bench.knee import LatencyTargets, find_knee, marginal_efficiency
from headroom.bench.stats import StepResult


def step(c, tok_s, e2e=1.0, ttft=0.1, itl=0.02, ok=10, errors=0) -> StepResult:
    return StepResult(
        concurrency=c,
        duration_s=10,
        requests=ok,
        errors=errors,
        cut=0,
        requests_per_s=ok / 10,
        output_tokens_per_s=tok_s,
        mean_prompt_tokens=None,
        mean_output_tokens=None,
        ttft_p50=ttft,
        ttft_p95=ttft,
        itl_p50=itl,
        itl_p95=itl,
        e2e_p50=e2e,
        e2e_p95=e2e,
    )


def saturating(ramp, slots, per_stream=100.0):
    """T(c) = per_stream * min(c, slots); latency grows once requests queue."""
    return [step(c, per_stream * min(c, slots), e2e=1.0 * max(1, c / slots)) for c in ramp]


@pytest.mark.parametrize("slots", [1, 2, 4, 8, 16])
def test_knee_lands_where_throughput_saturates(slots: int) -> None:
    knee = find_knee(saturating((1, 2, 4, 8, 16, 32), slots))
    assert knee.concurrency == slots
    assert knee.kind == "gain"
    assert f"from {slots} to {slots * 2}" in knee.reason


def test_efficiency_definition() -> None:
    assert marginal_efficiency(step(4, 400), step(8, 800)) == pytest.approx(1.0)
    assert marginal_efficiency(step(4, 400), step(8, 400)) == pytest.approx(0.0)
    assert marginal_efficiency(step(2, 200), step(3, 250)) == pytest.approx(0.5)
    assert marginal_efficiency(step(2, None), step(4, 100)) is None


def test_still_growing_says_extend_the_ramp() -> None:
    knee = find_knee(saturating((1, 2, 4), 64))
    assert knee.concurrency is None and knee.kind == "none"
    assert "extend the ramp" in knee.reason


def test_latency_target_stops_before_throughput_flattens() -> None:
    steps = [step(1, 100, e2e=1.0), step(2, 200, e2e=1.5), step(4, 400, e2e=3.0)]
    knee = find_knee(steps, targets=LatencyTargets(e2e_p95=2.0))
    assert knee.concurrency == 2 and knee.kind == "latency"
    assert "E2E p95 3000 ms > target 2000 ms" in knee.reason


def test_ttft_target_breached_at_the_first_step() -> None:
    knee = find_knee([step(1, 100, ttft=0.5)], targets=LatencyTargets(ttft_p95=0.2))
    assert knee.concurrency is None and knee.kind == "latency"
    assert "already past" in knee.reason


def test_errors_mark_the_knee() -> None:
    steps = [step(1, 100), step(2, 200), step(4, 390, ok=5, errors=5)]
    knee = find_knee(steps)
    assert knee.concurrency == 2 and knee.kind == "errors"


def test_threshold_is_respected() -> None:
    steps = [step(1, 100), step(2, 160)]  # efficiency 0.6
    assert find_knee(steps, gain_threshold=0.5).concurrency is None
    assert find_knee(steps, gain_threshold=0.7).concurrency == 1


def test_no_steps_or_one_step() -> None:
    assert find_knee([]).concurrency is None
    assert "only one step" in find_knee([step(1, 100)]).reason


@given(
    st.lists(st.floats(1, 1e5), min_size=1, max_size=8),
    st.floats(0.01, 1.0),
)
def test_knee_is_a_measured_step_and_the_next_one_did_not_pay(tputs, threshold) -> None:
    ramp = [2**i for i in range(len(tputs))]
    steps = [step(c, t) for c, t in zip(ramp, tputs, strict=True)]
    knee = find_knee(steps, gain_threshold=threshold)
    if knee.concurrency is None:
        # Every step paid its way.
        for a, b in zip(steps, steps[1:], strict=False):
            assert marginal_efficiency(a, b) >= threshold
    else:
        i = knee.step_index
        assert steps[i].concurrency == knee.concurrency
        assert marginal_efficiency(steps[i], steps[i + 1]) < threshold
        for a, b in zip(steps[:i], steps[1 : i + 1], strict=False):
            assert marginal_efficiency(a, b) >= threshold
