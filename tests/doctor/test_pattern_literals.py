"""pattern_literals: the literal text every match of a regex contains, and first_match's
prefilter built on it. Exactness is what matters (a prefilter that drops a matching line
changes what the doctor answers), so the properties run the regex engine itself: every text
Hypothesis generates FROM a pattern (st.from_regex) holds one of the pattern's literals, for
the doctor's own patterns and for random ones. The flood line is the supervisor's log-flood
test's (`x` * 1023, tests/supervisor/fake_vllm.py); the refusal line is vLLM's quantization
dtype check as quoted in rules_compat (vllm#1823)."""

from __future__ import annotations

import importlib
import pkgutil
import re
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import headroom.doctor
import headroom.probes
from headroom.doctor.pattern_literals import could_match, required_literals
from headroom.doctor.refusal_match import first_match

QUANT_DTYPE_LINE = (
    "ValueError: torch.bfloat16 is not supported for quantization method awq. "
    "Supported dtypes: [torch.float16]"
)


def _module_patterns() -> list[re.Pattern[str]]:
    found: dict[tuple, re.Pattern[str]] = {}
    for package in (headroom.doctor, headroom.probes):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            module = importlib.import_module(info.name)
            for value in vars(module).values():
                if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
                    found[(value.pattern, value.flags)] = value
    return list(found.values())


_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large]
PATTERNS = [p for p in _module_patterns() if required_literals(p) is not None]


def test_a_literal_run_across_groups_is_read_whole():
    pattern = re.compile(
        r"(?:torch\.)?(?P<dtype>\w+) is not supported for quantization method (?P<m>\w+)\."
    )
    assert required_literals(pattern) == {" is not supported for quantization method "}


def test_an_alternation_needs_one_literal_of_each_branch():
    assert required_literals(re.compile(r"(?:abc|defg)\d+")) == {"abc", "defg"}
    assert required_literals(re.compile(r"(?:abc|\d)xy")) is None  # "xy" is too short


def test_optional_case_folded_and_bytes_patterns_need_nothing():
    assert required_literals(re.compile(r"(?:needle)?\w+")) is None
    assert required_literals(re.compile(r"needle", re.IGNORECASE)) is None
    assert required_literals(re.compile(r"(?i)needle")) is None
    assert required_literals(re.compile(r"(?i:needle)\d")) is None
    assert required_literals(re.compile(rb"needle")) is None  # type: ignore[arg-type]


def test_a_repeat_that_must_match_once_needs_its_literal():
    assert required_literals(re.compile(r"(?:abcd)+\d")) == {"abcd"}
    assert required_literals(re.compile(r"(?:abcd)*\d")) is None


def test_a_lookaround_or_anchor_ends_a_run_and_requires_nothing_itself():
    assert required_literals(re.compile(r"abc(?=zzzz)def")) in ({"abc"}, {"def"})
    assert required_literals(re.compile(r"(?<!wxyz)abc\bdef")) in ({"abc"}, {"def"})


def test_could_match_is_false_only_without_every_literal():
    assert could_match(None, "anything")
    assert could_match(frozenset({"abc", "xyz"}), "--xyz--")
    assert not could_match(frozenset({"abc", "xyz"}), "--ab-c--")


def test_most_of_the_doctors_patterns_have_a_literal():
    # the prefilter pays only if the refusal patterns it guards have one
    assert len(PATTERNS) > 50


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: p.pattern[:40])
@settings(max_examples=10, deadline=None, suppress_health_check=_SLOW_OK, derandomize=True)
@given(data=st.data())
def test_every_text_a_doctor_pattern_matches_holds_its_literal(pattern, data):
    text = data.draw(st.from_regex(pattern))
    assert pattern.search(text) is not None
    assert could_match(required_literals(pattern), text)


_PIECES = st.sampled_from(
    # no zero-width piece ($, \\b, a lookahead): "$ab" matches nothing, and from_regex
    # would look for a text that matches it forever
    ["ab", "abc", "xyz", "q", r"\d", r"\w+", r"\s*", ".", "[ab]", "ab?c"]
)


@st.composite
def _random_patterns(draw, depth: int = 2) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.integers(0, 4 if depth else 1))
        if kind <= 1:
            parts.append(draw(_PIECES))
        elif kind == 2:
            inner = draw(_random_patterns(depth - 1))
            parts.append(f"(?:{inner}){draw(st.sampled_from(['', '?', '*', '+', '{2}']))}")
        elif kind == 3:
            left, right = draw(_random_patterns(depth - 1)), draw(_random_patterns(depth - 1))
            parts.append(f"(?:{left}|{right})")
        else:
            parts.append(
                f"(?P<g{draw(st.integers(0, 999))}x{len(parts)}>{draw(_random_patterns(depth - 1))})"
            )
    return "".join(parts)


@settings(max_examples=200, deadline=None, suppress_health_check=_SLOW_OK, derandomize=True)
@given(source=_random_patterns(), data=st.data())
def test_every_text_a_random_pattern_matches_holds_its_literal(source, data):
    try:
        pattern = re.compile(source)
    except re.error:
        return  # a repeated group name: not a pattern
    text = data.draw(st.from_regex(pattern))
    assert could_match(required_literals(pattern), text)
    noise = data.draw(st.text(alphabet="abcxyzq0 ", max_size=30))
    if pattern.search(noise):
        assert could_match(required_literals(pattern), noise)


def test_first_match_skips_a_flood_yet_finds_the_refusal_after_it():
    pattern = re.compile(
        r"(?:torch\.)?(?P<dtype>\w+) is not supported for quantization method (?P<method>\w+)\."
    )
    ctx = SimpleNamespace(raw_lines=["x" * 1023] * 3000 + [QUANT_DTYPE_LINE])
    fields, line = first_match(ctx, pattern)
    assert (fields["dtype"], fields["method"]) == ("bfloat16", "awq")
    assert line == QUANT_DTYPE_LINE
    assert first_match(SimpleNamespace(raw_lines=["x" * 1023] * 3000), pattern) is None


def test_first_match_still_reads_a_refusal_wrapped_over_lines():
    pattern = re.compile(r"is not supported for quantization method (?P<method>\w+)\.")
    cut = len(QUANT_DTYPE_LINE) // 2
    wrapped = [QUANT_DTYPE_LINE[:cut], QUANT_DTYPE_LINE[cut:]]
    found = first_match(SimpleNamespace(raw_lines=wrapped), pattern)
    assert found is not None and found[0]["method"] == "awq"
