"""Counters into rates and histograms into windowed quantiles, across scrapes.

Prometheus counters and histogram buckets are cumulative since the server started, so a
lifetime quantile mostly describes the past. Like PromQL's `rate()`/`histogram_quantile()`,
Headroom works on *increments*: each scrape's increment over the previous one is remembered
for `window_s` seconds and summed on demand. A value that goes down means the server
restarted (counter reset); the increment is then the new value itself, as in PromQL.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

INF = math.inf


@dataclass(frozen=True)
class Latency:
    """Quantiles of one latency histogram over the recent window.

    A quantile that falls in the first bucket is None and `below_first_bucket` is True: the
    histogram cannot say how far below `first_bucket_s` it is, so only `mean` (from
    `_sum`/`_count`) is reported instead of an interpolated guess.
    """

    p50: float | None
    p95: float | None
    p99: float | None
    mean: float | None
    count: int
    below_first_bucket: bool
    first_bucket_s: float | None = None  # upper bound of the first bucket (10 ms for ITL)

    @classmethod
    def empty(cls) -> Latency:
        return cls(None, None, None, None, 0, False, None)


@dataclass(frozen=True)
class HistogramState:
    """Cumulative bucket counts of one histogram series (or an increment of them)."""

    bounds: tuple[float, ...]  # ascending `le` values, the last one +Inf
    counts: tuple[float, ...]  # cumulative count per bound
    sum: float | None
    count: float | None

    @property
    def total(self) -> float:
        if self.count is not None:
            return self.count
        return self.counts[-1] if self.counts else 0.0


def histogram_from_parts(
    buckets: Mapping[float, float], total_sum: float | None, total_count: float | None
) -> HistogramState | None:
    """Build a state from `le -> count`; None when there are no usable buckets."""
    clean = {le: c for le, c in buckets.items() if not math.isnan(le) and _finite(c)}
    if not clean:
        return None
    bounds = tuple(sorted(clean))
    counts = tuple(clean[b] for b in bounds)
    total_sum = total_sum if _finite(total_sum) else None
    total_count = total_count if _finite(total_count) else None
    return HistogramState(bounds, counts, total_sum, total_count)


def sum_if_all_known(values: Sequence[float | None]) -> float | None:
    """The sum, or None when any value is unknown (a partial sum would read as a real one)."""
    known = [v for v in values if v is not None]
    return sum(known) if len(known) == len(values) else None


def counter_increment(previous: float, current: float) -> float:
    """Increase of a counter between two scrapes; a drop means a restart from zero."""
    return current if current < previous else current - previous


def histogram_increment(previous: HistogramState, current: HistogramState) -> HistogramState:
    """Increase between two cumulative states, reset-aware (and bucket-layout-change-aware)."""
    if previous.bounds != current.bounds or _went_down(previous, current):
        return current
    counts = tuple(c - p for c, p in zip(current.counts, previous.counts, strict=True))
    total_sum = _difference(current.sum, previous.sum)
    total_count = _difference(current.count, previous.count)
    return HistogramState(current.bounds, counts, total_sum, total_count)


def merge_histograms(states: Iterable[HistogramState | None]) -> HistogramState | None:
    """Sum several series bucket by bucket (never average quantiles).

    Only bounds every series has are kept, so a series with different custom buckets cannot
    make a cumulative count go down.
    """
    present = [s for s in states if s is not None]
    if not present:
        return None
    if len(present) == 1:
        return present[0]
    common = set(present[0].bounds)
    for state in present[1:]:
        common &= set(state.bounds)
    bounds = tuple(sorted(common))
    if not bounds:
        return None
    positions = [{b: i for i, b in enumerate(s.bounds)} for s in present]
    counts = [
        sum(s.counts[where[bound]] for s, where in zip(present, positions, strict=True))
        for bound in bounds
    ]
    sums = [s.sum for s in present]
    total_counts = [s.count for s in present]
    return HistogramState(
        bounds,
        tuple(counts),
        sum_if_all_known(sums),
        sum_if_all_known(total_counts),
    )


def quantile(q: float, state: HistogramState) -> tuple[float | None, bool]:
    """(value, in_first_bucket) for quantile q, interpolating linearly inside a bucket.

    Landing in the +Inf bucket gives the last finite bound, as PromQL does.
    """
    if not state.counts:
        return None, False
    total = state.counts[-1]
    if not total > 0:
        return None, False
    rank = q * total
    index = next((i for i, cumulative in enumerate(state.counts) if cumulative >= rank), None)
    if index is None:  # counts not monotonic: trust nothing
        return None, False
    cumulative = state.counts[index]
    if index == 0:
        return None, True
    upper = state.bounds[index]
    lower = state.bounds[index - 1]
    if upper == INF:
        return lower, False
    below = state.counts[index - 1]
    in_bucket = cumulative - below
    if in_bucket <= 0:
        return upper, False
    return lower + (upper - lower) * (rank - below) / in_bucket, False


def latency_from(state: HistogramState | None) -> Latency:
    """Window quantiles and mean of a (window increment) histogram."""
    if state is None:
        return Latency.empty()
    first_bound = state.bounds[0] if state.bounds and state.bounds[0] != INF else None
    total = state.total
    if not total > 0:
        return Latency(None, None, None, None, 0, False, first_bound)
    p50, p50_low = quantile(0.50, state)
    p95, _ = quantile(0.95, state)
    p99, _ = quantile(0.99, state)
    mean = state.sum / total if state.sum is not None and state.sum >= 0 else None
    return Latency(p50, p95, p99, mean, int(round(total)), p50_low, first_bound)


class WindowTracker:
    """Remembers the increments of the last `window_s` seconds of scrapes, per series key.

    Keys are any hashable, e.g. (metric, model_name, engine). Call `update()` once per scrape
    with every cumulative value seen; then ask for `rate()` (last two scrapes) or
    `window_histogram()` / `window_increment()` (sum over the window).
    """

    def __init__(self, window_s: float = 60.0) -> None:
        self.window_s = window_s
        self._last_time: float | None = None
        self._last_counters: dict[Hashable, float] = {}
        self._last_histograms: dict[Hashable, HistogramState] = {}
        self._rates: dict[Hashable, float] = {}
        self._window_cache: dict[Hashable, HistogramState | None] = {}
        self._history: deque[
            tuple[float, dict[Hashable, float], dict[Hashable, HistogramState]]
        ] = deque()

    def update(
        self,
        now: float,
        counters: Mapping[Hashable, float | None],  # None (unknown) is skipped like NaN
        histograms: Mapping[Hashable, HistogramState],
    ) -> None:
        previous_time = self._last_time
        if previous_time is not None and now <= previous_time:
            return  # clock did not move: nothing to learn, and no division by zero
        counter_steps: dict[Hashable, float] = {}
        for key, value in counters.items():
            if value is None or not _finite(value):
                continue
            before = self._last_counters.get(key)
            if before is not None:
                counter_steps[key] = counter_increment(before, value)
        histogram_steps: dict[Hashable, HistogramState] = {}
        for key, state in histograms.items():
            before_state = self._last_histograms.get(key)
            if before_state is not None:
                histogram_steps[key] = histogram_increment(before_state, state)
        self._rates = {}
        self._window_cache = {}
        if previous_time is not None:
            elapsed = now - previous_time
            self._rates = {key: step / elapsed for key, step in counter_steps.items()}
        self._last_counters = {k: v for k, v in counters.items() if v is not None and _finite(v)}
        self._last_histograms = dict(histograms)
        self._last_time = now
        self._history.append((now, counter_steps, histogram_steps))
        horizon = now - self.window_s
        while self._history and self._history[0][0] <= horizon:
            self._history.popleft()

    def rate(self, key: Hashable) -> float | None:
        """Per-second increase between the last two scrapes; None until two scrapes saw it."""
        return self._rates.get(key)

    def window_increment(self, key: Hashable) -> float | None:
        steps = [entry[1][key] for entry in self._history if key in entry[1]]
        return sum(steps) if steps else None

    def window_histogram(self, key: Hashable) -> HistogramState | None:
        """Sum of the histogram's increments over the window (None if never seen twice)."""
        if key in self._window_cache:
            return self._window_cache[key]
        steps = [entry[2][key] for entry in self._history if key in entry[2]]
        if not steps:
            merged = None
        else:
            bounds = steps[-1].bounds
            # A bucket layout change (restart with other buckets) starts the sum afresh.
            start = len(steps) - 1
            while start > 0 and steps[start - 1].bounds == bounds:
                start -= 1
            steps = steps[start:]
            # zip(*) transposes in C: one sum() per bucket instead of one loop per step.
            counts = tuple(
                sum(column) for column in zip(*(step.counts for step in steps), strict=True)
            )
            sums = [step.sum for step in steps]
            totals = [step.count for step in steps]
            merged = HistogramState(
                bounds,
                counts,
                None if None in sums else sum(sums),  # type: ignore[arg-type]
                None if None in totals else sum(totals),  # type: ignore[arg-type]
            )
        self._window_cache[key] = merged
        return merged

    def lifetime_histogram(self, key: Hashable) -> HistogramState | None:
        return self._last_histograms.get(key)


def _went_down(previous: HistogramState, current: HistogramState) -> bool:
    if previous.count is not None and current.count is not None and current.count < previous.count:
        return True
    return any(c < p for c, p in zip(current.counts, previous.counts, strict=True))


def _difference(current: float | None, previous: float | None) -> float | None:
    if current is None or previous is None:
        return None
    return current - previous


def _finite(value: float | None) -> bool:
    return value is not None and not math.isnan(value) and not math.isinf(value)
