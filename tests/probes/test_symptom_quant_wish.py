"""Words that ask for a quantized version of a model (headroom/probes/symptom_layout.py).
Texts are public threads' (named beside each); a failure with a quantized model, a statement
that one is used, a KV-cache dtype and a negation are not it; untrusted text never raises."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.probes.symptom_layout import quantized_wanted


@pytest.mark.parametrize(
    "text",
    [
        # QwenLM/Qwen3-VL#719 (description)
        "FP16 version is impossible to run on local GPU, I hope there will be GPTQ and AWQ "
        "versions, please!!!",
        # rubra-ai/rubra#119 (description)
        "WOuld be nice to have AWQ quantization, so we can run on vLLM with a lower end GPU.",
        "[Feature]: Support awq quantization on Window?",  # SystemPanic/vllm-windows#16
        "is there any quantized models for Qwen2.5-VL",  # QwenLM/Qwen3-VL#719 (title)
        "有没有量化版本",
    ],
)
def test_an_ask_for_a_quantized_version(text):
    assert quantized_wanted(text)


@pytest.mark.parametrize(
    "text",
    [
        "VLLM 不能使用量化的模型吗??? GPTQ 和 AWQ",  # QwenLM/Qwen2.5-Omni#285: does it work at all
        "[Usage]: Help with AWQ",  # nlzy/vllm-gfx906#36: a model in use
        "I need to run either a AWTQ or GPTQ version of fine tuned llama-7b model. I am "
        "struggling to do so.",  # vllm#1056: a failure with one
        "is there a fix for the AWQ error?",
        "Is there any plan to support fp8 kv cache?",
        "there is no need for a GPTQ version",
    ],
)
def test_not_an_ask(text):
    assert not quantized_wanted(text)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=3000), st.none(), st.integers(), st.binary(max_size=40)))
def test_never_raises(value):
    assert quantized_wanted(value) in (True, False)
