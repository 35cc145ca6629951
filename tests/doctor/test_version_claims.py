"""Versions a person states in words: which release worked and which fails."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from headroom.doctor.version_claims import regression_of_line, stated_regression


@pytest.mark.parametrize(
    ("text", "good", "bad"),
    [
        # vllm-project/vllm#16551's title (tests/fixtures/incidents), full-width parentheses
        ("Severe OOM in 0.8.3 （ok in 0.7.2）", (0, 7, 2), (0, 8, 3)),
        ("OOM after upgrading vLLM from 0.6.3 to 0.8.4", (0, 6, 3), (0, 8, 4)),
        ("worked on v0.7.2, fails on v0.8.3", (0, 7, 2), (0, 8, 3)),
        ("0.7.2 works but 0.8.3 OOMs", (0, 7, 2), (0, 8, 3)),
        ("OOM after upgrading to 0.8.4", None, (0, 8, 4)),
        # vllm-project/vllm#2413 and #15216 (tests/fixtures/incidents)
        ("out of memory running mixtral gptq model in vllm 0.2.7", None, (0, 2, 7)),
        ("I used vllm 0.8.0 to deploy whisper-large-v3-turbo", None, (0, 8, 0)),
    ],
)
def test_good_and_bad_releases(text, good, bad):
    found = regression_of_line(text)
    assert found is not None and (found.good, found.bad) == (good, bad)


@pytest.mark.parametrize(
    "text",
    [
        "torch 2.1.2 with CUDA 12.1",  # not vLLM-shaped versions
        "INFO 04-27 11:08:32 [core.py:340] something in 0.8.5",  # vLLM's own line
        "",
        "vllm/model_executor/models/mllama.py line 1084",  # no release named
    ],
)
def test_no_claim(text):
    assert regression_of_line(text) is None


def test_a_line_with_both_releases_wins_over_an_earlier_partial_one():
    lines = ["vllm==0.8.3", "it was fine with 0.7.3, OOM since 0.8.3"]
    found = stated_regression(lines)
    assert found is not None and (found.good, found.bad) == ((0, 7, 3), (0, 8, 3))


@given(st.lists(st.text(max_size=300), max_size=5))
def test_never_raises_on_any_text(lines):
    found = stated_regression(lines)
    assert found is None or found.good != found.bad or found.good is None
