"""Display formatting: missing values read N/A; bars and sparklines keep their width."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from headroom.tui import format as fmt

floats = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True))


@given(floats, st.integers(min_value=0, max_value=200))
def test_bar_always_has_its_width(value, width):
    assert len(fmt.bar(value, width)) == width


@given(st.lists(floats, max_size=300), st.integers(min_value=0, max_value=120))
def test_spark_never_longer_than_width(values, width):
    out = fmt.spark(values, width)
    assert len(out) == min(len(values), width)


@given(floats)
def test_formatters_never_raise(value):
    for function in (
        fmt.percent,
        fmt.count,
        fmt.compact,
        fmt.rate,
        fmt.gib,
        fmt.seconds_as_latency,
        fmt.duration,
        fmt.watts,
    ):
        assert isinstance(function(value), str)


@pytest.mark.parametrize("function", [fmt.percent, fmt.count, fmt.gib, fmt.duration, fmt.watts])
def test_none_and_nan_are_na(function):
    assert function(None) == "N/A"
    assert function(math.nan) == "N/A"


@pytest.mark.parametrize(
    "seconds,text",
    [(0.0042, "4.2 ms"), (0.0123, "12 ms"), (0.911, "911 ms"), (1.5, "1.50 s")],
)
def test_latency_units(seconds, text):
    assert fmt.seconds_as_latency(seconds) == text


def test_itl_below_first_bucket_shows_mean_not_quantile():
    latency = SimpleNamespace(p50=None, p95=None, mean=0.0032, below_first_bucket=True)
    assert fmt.latency_pair(latency) == "< 10 ms (mean 3.2 ms)"


def test_latency_pair_p50_p95():
    latency = SimpleNamespace(p50=0.182, p95=0.911, mean=0.3, below_first_bucket=False)
    assert fmt.latency_pair(latency) == "182 ms / 911 ms"


@pytest.mark.parametrize(
    "seconds,text", [(59, "59s"), (754, "12m34s"), (3700, "1h01m"), (200000, "2d07h")]
)
def test_duration(seconds, text):
    assert fmt.duration(seconds) == text


def test_bar_fill():
    assert fmt.bar(0.5, 10) == "█████·····"
    assert fmt.bar(1.5, 4) == "████"
    assert fmt.bar(None, 3) == "···"
