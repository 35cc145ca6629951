"""Request-size distributions, JSONL workloads, the ramp and synthetic prompts."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from headroom.bench.workload import (
    BUILTIN_MIXES,
    WorkloadError,
    builtin_distribution,
    doubling_ramp,
    load_jsonl_distribution,
    parse_ramp,
    resolve_distribution,
    synth_prompt,
)


@pytest.mark.parametrize("name", sorted(BUILTIN_MIXES))
def test_builtin_mixes_stay_in_their_ranges_and_vary(name: str) -> None:
    dist = builtin_distribution(name)
    rng = random.Random(1)
    shapes = [dist.sample(rng) for _ in range(300)]
    lo, hi = BUILTIN_MIXES[name].prompt_range
    assert all(lo <= s.prompt_tokens <= hi for s in shapes)
    lo, hi = BUILTIN_MIXES[name].output_range
    assert all(lo <= s.output_tokens <= hi for s in shapes)
    # A distribution, not a constant: uniform sizes are exactly what the bench avoids.
    assert len({s.prompt_tokens for s in shapes}) > 50


def test_sampling_is_deterministic_for_a_seed() -> None:
    dist = builtin_distribution("chat")
    a = [dist.sample(random.Random(7)) for _ in range(5)]
    b = [dist.sample(random.Random(7)) for _ in range(5)]
    assert a == b


def test_mixes_differ_in_fingerprint() -> None:
    prints = {builtin_distribution(n).fingerprint for n in BUILTIN_MIXES}
    assert len(prints) == len(BUILTIN_MIXES)


def test_clamp_keeps_requests_under_max_model_len() -> None:
    dist = builtin_distribution("long-document").with_limit(1024)
    rng = random.Random(3)
    for _ in range(200):
        s = dist.sample(rng)
        assert s.prompt_tokens + s.output_tokens <= 1024
        assert s.output_tokens >= 1
    assert dist.describe()["clamped_to_tokens"] == 1024


def test_unknown_mix_names_the_known_ones() -> None:
    with pytest.raises(WorkloadError, match="chat"):
        resolve_distribution("nonsense")


def test_jsonl_with_lengths_and_real_prompts(tmp_path) -> None:
    path = tmp_path / "w.jsonl"
    path.write_text(
        '{"prompt_tokens": 100, "output_tokens": 20}\n\n'
        '{"prompt": "Tell me about GPUs", "output_tokens": 5}\n'
    )
    dist = load_jsonl_distribution(path)
    assert dist.name == "file:w.jsonl"
    shapes = {dist.sample(random.Random(i)) for i in range(40)}
    assert {(s.prompt_tokens, s.output_tokens) for s in shapes if s.prompt is None} == {(100, 20)}
    assert any(s.prompt == "Tell me about GPUs" for s in shapes)
    assert resolve_distribution(str(path)).fingerprint == dist.fingerprint


@pytest.mark.parametrize(
    "line, why",
    [
        ("not json", "not JSON"),
        ("[1, 2]", "expected an object"),
        ('{"prompt_tokens": 10}', "output_tokens"),
        ('{"prompt_tokens": -1, "output_tokens": 3}', "prompt_tokens"),
        ('{"prompt_tokens": 2.5, "output_tokens": 3}', "whole number"),
        ('{"prompt": "", "output_tokens": 3}', "non-empty"),
        ('{"prompt_tokens": true, "output_tokens": 3}', "prompt_tokens"),
    ],
)
def test_bad_jsonl_lines_say_where_and_why(tmp_path, line: str, why: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"prompt_tokens": 1, "output_tokens": 1}\n' + line + "\n")
    with pytest.raises(WorkloadError, match=why) as info:
        load_jsonl_distribution(path)
    assert "bad.jsonl:2" in str(info.value)


def test_missing_and_empty_files(tmp_path) -> None:
    with pytest.raises(WorkloadError, match="cannot read"):
        load_jsonl_distribution(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(WorkloadError, match="no requests"):
        load_jsonl_distribution(tmp_path / "empty.jsonl")


@given(st.text(max_size=200))
def test_any_jsonl_line_is_a_shape_or_a_clear_error(tmp_path_factory, line: str) -> None:
    path = tmp_path_factory.mktemp("h") / "x.jsonl"
    path.write_text(line.replace("\n", " ").replace("\r", " ") + "\n", encoding="utf-8")
    try:
        dist = load_jsonl_distribution(path)
    except WorkloadError as exc:
        assert "x.jsonl" in str(exc)
    else:
        s = dist.sample(random.Random(0))
        assert s.prompt_tokens >= 1 and s.output_tokens >= 1


@given(
    st.dictionaries(
        st.sampled_from(["prompt", "prompt_tokens", "output_tokens", "max_tokens", "x"]),
        st.one_of(
            st.integers(-5, 10**6),
            st.floats(allow_nan=True),
            st.text(max_size=20),
            st.none(),
            st.booleans(),
        ),
    )
)
def test_any_json_object_is_a_shape_or_a_clear_error(tmp_path_factory, item: dict) -> None:
    path = tmp_path_factory.mktemp("h") / "y.jsonl"
    path.write_text(json.dumps(item) + "\n")
    try:
        dist = load_jsonl_distribution(path)
    except WorkloadError:
        return
    s = dist.sample(random.Random(0))
    assert s.output_tokens >= 1 and s.prompt_tokens >= 1


def test_ramp_parsing() -> None:
    assert parse_ramp("1,2,4,8") == (1, 2, 4, 8)
    assert parse_ramp(" 1, 3 ,9") == (1, 3, 9)
    assert parse_ramp(None) == (1, 2, 4, 8, 16)
    assert parse_ramp(None, 12) == (1, 2, 4, 8, 12)
    assert parse_ramp("1,2,4,8,16,32", 8) == (1, 2, 4, 8)
    assert doubling_ramp(1) == (1,)
    for bad in ("1,x", "0,1", "4,2", "2,2", "-1"):
        with pytest.raises(WorkloadError):
            parse_ramp(bad)
    with pytest.raises(WorkloadError, match="max-concurrency"):
        parse_ramp("16,32", 8)


def test_synthetic_prompts_have_the_target_word_count_and_unique_heads() -> None:
    rng = random.Random(0)
    a, b = synth_prompt(200, rng, 1), synth_prompt(200, rng, 2)
    assert abs(len(a.split()) - 200) <= 2
    assert a.split(":")[0] != b.split(":")[0]
