"""Targets files for the direct-scrape mode: Prometheus file_sd JSON and plain lines."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.fleet.direct_source import parse_targets_text


def test_file_sd_json_groups() -> None:
    text = json.dumps(
        [
            {"targets": ["h1:8000", "h2:8000"], "labels": {"job": "vllm", "hostname": "h1"}},
            {"targets": ["h1:9400"], "labels": {"job": "dcgm-exporter"}},
        ]
    )
    targets = parse_targets_text(text)
    assert [(t.url, t.kind) for t in targets] == [
        ("h1:8000", "vllm"),
        ("h2:8000", "vllm"),
        ("h1:9400", "dcgm"),
    ]
    assert targets[0].labels["hostname"] == "h1" and targets[0].instance == "h1:8000"


def test_plain_lines_with_labels_and_comments() -> None:
    targets = parse_targets_text(
        "# fleet\nhttp://10.0.0.1:8000 hostname=gpu-1\n\ndcgm http://10.0.0.1:9400/metrics\n"
    )
    assert [(t.kind, t.instance, dict(t.labels)) for t in targets] == [
        ("vllm", "10.0.0.1:8000", {"hostname": "gpu-1"}),
        ("dcgm", "10.0.0.1:9400", {}),
    ]


@pytest.mark.parametrize(
    "text,needle",
    [
        ('[{"targets": 5}]', "group 0"),
        ("[not json", "not valid JSON"),
        ("h:8000 hostname", "not label=value"),
        ("ftp://h:8000", "unsupported URL scheme"),
        ("dcgm", "no address"),
    ],
)
def test_bad_files_say_where(text: str, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        parse_targets_text(text)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_text_is_targets_or_a_clear_valueerror(text: str) -> None:
    try:
        targets = parse_targets_text(text)
    except ValueError as error:
        assert str(error)
        return
    assert all(t.kind in ("vllm", "dcgm") for t in targets)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(json_values, max_size=4))
def test_any_json_list_is_targets_or_a_clear_valueerror(groups) -> None:
    try:
        parse_targets_text(json.dumps(groups))
    except ValueError as error:
        assert str(error)


def test_unclosed_quote_names_the_line() -> None:
    with pytest.raises(ValueError, match="line 2: No closing quotation"):
        parse_targets_text('h:8000\nh:8001 hostname="a\n')


def test_a_deeply_nested_targets_file_is_a_clear_error() -> None:
    # Old: json.loads raised RecursionError out of parse_targets_text (documented: ValueError).
    with pytest.raises(ValueError, match="nests 5000 levels"):
        parse_targets_text("[" * 5000 + "]" * 5000)
