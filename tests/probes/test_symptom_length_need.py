"""Words that ask what hardware a context length needs (headroom/probes/symptom_layout.py).
Texts are issue titles and sentences of public threads, named beside each; untrusted text
never raises."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.probes.symptom_facts import facts_of_text
from headroom.probes.symptom_layout import length_wanted


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        # zai-org/GLM-4#149 (description)
        (
            "想部署一下glm4-9b-1m模型，目前40G显存跑不起来，请问一下需要多少显存才能跑支持"
            "max_model_len为1M的大模型？",
            1 << 20,
        ),
        ("用vllm部署，开启1M上下文，至少需要多少显存", 1 << 20),  # MiniMax-AI/MiniMax-M1#2 (title)
        # vllm-project/vllm#8188 (title): the model's own length
        (
            "[Usage]: What's the minimum VRAM needed to use entire context length for Llama 3.1 "
            "70B and 405B",
            0,
        ),
    ],
)
def test_a_sizing_question_for_a_length(text, tokens):
    assert length_wanted(text) == tokens
    assert facts_of_text(text).length_wanted == tokens


@pytest.mark.parametrize(
    "text",
    [
        # zai-org/GLM-4#149 (title): the 1M is the model's name, not a length asked for
        "请教glm4-9b-1M跑起来需要多少显存？",
        # yangjianxin1/LongQLoRA#4: a length that fails, no question of what it needs
        "按照教程，15k的上下文，8张v100 32G的跑不起来， 10K的可以跑起来",
        # vllm-project/vllm#15676 (a comment): a length without a sizing question
        "That means for something like `--max-model-len 32768`, Gemma 3 12B would need a **huge** "
        "amount of GPU VRAM just to deploy properly",
    ],
)
def test_no_sizing_question_or_no_length(text):
    assert length_wanted(text) is None


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=3000), st.none(), st.integers(), st.binary(max_size=40)))
def test_never_raises(value):
    found = length_wanted(value)
    assert found is None or 0 <= found <= 1 << 24
