"""Words that say the output is numerically broken (headroom/probes/symptom_output.py): NaN
and a run of "!" as the output (strong), empty or garbled output (weak), and the families vLLM
keeps out of float16. Texts are issue titles and sentences of public threads, named beside
each; emphasis and negation are not the report; untrusted text never raises."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.probes.symptom_output import (
    empty_output,
    fp16_unstable_name,
    nan_output,
    structured_backend_named,
    structured_output_slow,
)


@pytest.mark.parametrize(
    "text",
    [
        "NaN when running OLMo-core v2 trained models via VLLM",  # allenai/olmo-cookbook#60
        "[Bug]: GLM-4-32B-0414-FP8 output !!!!! error (tensor is nan)",  # vllm-project/vllm#17154
        "[Bug]: Model outputs are always '!!!!!!!!!!!!!!'",  # vllm-project/vllm#22881
        # vllm-project/vllm#14126 (title)
        "VLLM for Qwen 2.5 produces all !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!! outputs, "
        "regardless of prompt",
        # vllm-project/vllm#8283
        "Prompt:  'Funniestjoke ever:',generated text: '!!!!!!!!!!!!!!!!!!'",
    ],
)
def test_nan_or_a_run_of_exclamation_marks_as_the_output(text):
    assert nan_output(text)


@pytest.mark.parametrize(
    ("text", "unstable"),
    [
        ("[Bug]: Gemma-3 models output empty text.", True),  # vllm-project/vllm#14817
        ("[Bug]: GLM-4-32B-0414 model output is empty", True),  # vllm-project/vllm#17236
        ("Generate nothing from VLLM output", False),  # vllm-project/vllm#1185
        ("使用VLLM部署后输出为空", False),  # zai-org/CogAgent#46
    ],
)
def test_empty_output_and_the_families_vllm_keeps_out_of_float16(text, unstable):
    assert empty_output(text) and not nan_output(text)
    assert fp16_unstable_name(text) is unstable


@given(
    st.sampled_from(["Runing API OOM", "Help", "vllm fails", "启动失败"]),
    st.integers(min_value=3, max_value=12),
)
def test_exclamation_marks_of_emphasis_are_not_output(words, bangs):
    assert not nan_output(words + "!" * bangs)


@given(st.sampled_from(["no NaN", "not empty", "without NaN", "没有乱码"]))
def test_a_negated_report_is_none(text):
    assert not nan_output(f"after the fix {text} anymore") and not empty_output(f"now {text}")


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=3000), st.none(), st.integers(), st.binary(max_size=40)))
def test_never_raises(value):
    assert nan_output(value) in (True, False)
    assert empty_output(value) in (True, False)
    assert fp16_unstable_name(value) in (True, False)


@pytest.mark.parametrize(
    ("text", "backend"),
    [
        # vllm-project/vllm#10081 (title)
        (
            "[Bug]:Structured outputs inference often took a very long time,and eventually causing "
            "a timeout and vLLM engine crushing.",
            None,
        ),  # fmt: skip
        ("[Performance]: guided generation is very slow in offline mode", None),  # vllm#8313
        ("[Bug]: Very slow guided decoding with Outlines backend since v0.6.5", "outlines"),
        ("[Bug]: XGrammar-based CFG decoding degraded after 0.6.5", "xgrammar"),  # vllm#12122
        ("Performance loss with guided_json activated in vLLM", None),  # dottxt-ai/outlines#1011
    ],
)
def test_structured_output_said_to_be_slow(text, backend):
    assert structured_output_slow(text)
    assert structured_backend_named(text) == backend


@pytest.mark.parametrize(
    "text",
    [
        "[Feature]: Support Guided Decoding in `LLM` entrypoint",  # vllm-project/vllm#3536
        "[Performance]: The 4090 takes up more gpu memory than the A30",  # vllm-project/vllm#11452
    ],
)
def test_structured_output_without_slowness_or_slowness_without_it(text):
    assert not structured_output_slow(text)
