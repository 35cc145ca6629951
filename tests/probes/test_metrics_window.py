"""Counters into rates and histograms into windowed quantiles (pure functions, no HTTP)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.probes.metrics_window import (
    HistogramState,
    WindowTracker,
    counter_increment,
    histogram_from_parts,
    histogram_increment,
    latency_from,
    merge_histograms,
    quantile,
)

ITL_BOUNDS = (0.01, 0.025, 0.05, 0.075, 0.1, math.inf)


def _hist(counts_per_bucket: list[float], bounds=ITL_BOUNDS, mean: float = 0.03) -> HistogramState:
    cumulative, running = [], 0.0
    for count in counts_per_bucket:
        running += count
        cumulative.append(running)
    return HistogramState(tuple(bounds), tuple(cumulative), running * mean, running)


def test_counter_increment_survives_a_reset() -> None:
    assert counter_increment(100.0, 130.0) == 30.0
    assert counter_increment(100.0, 7.0) == 7.0  # restarted, then counted 7


def test_quantile_interpolates_inside_the_bucket() -> None:
    state = _hist([0, 50, 50, 0, 0, 0])
    value, low = quantile(0.5, state)
    assert value == pytest.approx(0.025) and not low
    value, _ = quantile(0.75, state)
    assert value == pytest.approx(0.025 + 0.025 * 0.5)


def test_quantile_in_the_inf_bucket_is_the_last_finite_bound() -> None:
    value, _ = quantile(0.99, _hist([0, 0, 0, 0, 10, 90]))
    assert value == 0.1


def test_below_first_bucket_reports_the_mean_not_a_made_up_quantile() -> None:
    state = _hist([100, 0, 0, 0, 0, 0], mean=0.004)
    latency = latency_from(state)
    assert latency.p50 is None and latency.p95 is None
    assert latency.below_first_bucket is True
    assert latency.first_bucket_s == 0.01
    assert latency.mean == pytest.approx(0.004)
    assert latency.count == 100


def test_mostly_fast_with_a_slow_tail_keeps_the_tail_quantiles() -> None:
    latency = latency_from(_hist([90, 0, 0, 0, 10, 0]))
    assert latency.p50 is None and latency.below_first_bucket
    assert latency.p95 is not None and 0.075 < latency.p95 <= 0.1


def test_empty_window_has_no_quantiles() -> None:
    latency = latency_from(_hist([0, 0, 0, 0, 0, 0]))
    assert (latency.p50, latency.mean, latency.count) == (None, None, 0)
    assert latency_from(None).count == 0


def test_merge_sums_buckets_instead_of_averaging_quantiles() -> None:
    fast = _hist([0, 100, 0, 0, 0, 0])  # all at <= 25 ms
    slow = _hist([0, 0, 0, 0, 100, 0])  # all at 75-100 ms
    merged = merge_histograms([fast, slow])
    assert merged is not None and merged.count == 200
    p95, _ = quantile(0.95, merged)
    # averaging the two p95s would give ~0.06; the merged distribution's p95 is in the slow bucket
    assert p95 is not None and p95 > 0.09


def test_merge_keeps_only_common_bounds() -> None:
    a = _hist([1, 1, 1, 1, 1, 1])
    b = _hist([1, 1, 1], bounds=(0.01, 0.05, math.inf))
    merged = merge_histograms([a, b])
    assert merged is not None and merged.bounds == (0.01, 0.05, math.inf)
    assert merged.counts == (2.0, 3.0 + 2.0, 9.0)


def test_histogram_increment_and_reset() -> None:
    before = _hist([10, 10, 0, 0, 0, 0])
    after = _hist([10, 15, 5, 0, 0, 0])
    step = histogram_increment(before, after)
    assert step.counts == (0.0, 5.0, 10.0, 10.0, 10.0, 10.0)
    restarted = _hist([1, 0, 0, 0, 0, 0])
    assert histogram_increment(after, restarted) == restarted


def test_histogram_from_parts_drops_unusable_buckets() -> None:
    state = histogram_from_parts({0.1: 1.0, math.inf: 2.0, math.nan: 3.0, 0.5: math.nan}, 1.0, 2.0)
    assert state is not None and state.bounds == (0.1, math.inf)
    assert histogram_from_parts({}, None, None) is None


def test_tracker_rates_between_the_last_two_scrapes() -> None:
    tracker = WindowTracker(window_s=60)
    tracker.update(0.0, {"c": 100.0}, {})
    assert tracker.rate("c") is None  # one scrape: no rate yet
    tracker.update(2.0, {"c": 110.0}, {})
    assert tracker.rate("c") == pytest.approx(5.0)
    tracker.update(4.0, {"c": 4.0}, {})  # server restarted
    assert tracker.rate("c") == pytest.approx(2.0)


def test_tracker_ignores_a_clock_that_did_not_move() -> None:
    tracker = WindowTracker()
    tracker.update(5.0, {"c": 1.0}, {})
    tracker.update(5.0, {"c": 50.0}, {})
    tracker.update(6.0, {"c": 3.0}, {})
    assert tracker.rate("c") == pytest.approx(2.0)


def test_tracker_window_slides() -> None:
    tracker = WindowTracker(window_s=30)
    empty = _hist([0, 0, 0, 0, 0, 0])
    tracker.update(0.0, {}, {"h": empty})
    tracker.update(10.0, {}, {"h": _hist([0, 10, 0, 0, 0, 0])})  # 10 fast
    tracker.update(20.0, {}, {"h": _hist([0, 10, 0, 0, 10, 0])})  # +10 slow
    window = tracker.window_histogram("h")
    assert window is not None and window.count == 20
    tracker.update(45.0, {}, {"h": _hist([0, 10, 0, 0, 10, 0])})  # nothing new
    window = tracker.window_histogram("h")
    assert window is not None and window.count == 10  # the fast ones left the window
    assert quantile(0.5, window)[0] > 0.075
    tracker.update(100.0, {}, {"h": _hist([0, 10, 0, 0, 10, 0])})
    assert tracker.window_histogram("h").count == 0  # type: ignore[union-attr]


def test_tracker_window_across_a_restart() -> None:
    tracker = WindowTracker(window_s=60)
    tracker.update(0.0, {}, {"h": _hist([0, 100, 0, 0, 0, 0])})
    tracker.update(1.0, {}, {"h": _hist([0, 120, 0, 0, 0, 0])})
    tracker.update(2.0, {}, {"h": _hist([0, 0, 5, 0, 0, 0])})  # restarted: 5 new
    window = tracker.window_histogram("h")
    assert window is not None and window.count == 25


@st.composite
def _monotone_histograms(draw) -> HistogramState:
    per_bucket = draw(
        st.lists(st.floats(0, 1e6), min_size=len(ITL_BOUNDS), max_size=len(ITL_BOUNDS))
    )
    return _hist(per_bucket)


@settings(max_examples=200, deadline=None)
@given(_monotone_histograms())
def test_quantiles_are_ordered_and_inside_the_bounds(state: HistogramState) -> None:
    latency = latency_from(state)
    values = [v for v in (latency.p50, latency.p95, latency.p99) if v is not None]
    assert values == sorted(values)
    assert all(0 <= v <= 0.1 for v in values)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=8),
    st.one_of(st.none(), st.floats()),
)
def test_any_bucket_values_never_raise(counts: list[float], total: float | None) -> None:
    bounds = [0.01 * (i + 1) for i in range(len(counts) - 1)] + [math.inf]
    state = histogram_from_parts(dict(zip(bounds, counts, strict=True)), total, total)
    latency_from(state)
    if state is not None:
        merge_histograms([state, state])
