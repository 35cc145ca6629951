"""Hugging Face's placement options named for vLLM (headroom/probes/symptom_layout.py).
Texts are issue titles of public threads, named beside each; untrusted text never raises."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.probes.symptom_facts import facts_of_text
from headroom.probes.symptom_layout import placement_named


@pytest.mark.parametrize(
    "text",
    [
        "No `device_map` option.",  # vllm-project/vllm#196
        "--tensor-parallel-size vs device_map?",  # vllm-project/vllm#1752
        # vllm-project/vllm#6601
        "[Usage]:Can vllm use a method similar to device_map in transformers ?",
        "swift在部署的时候--max_memory没生效",  # modelscope/ms-swift#3363
    ],
)
def test_placement_named(text):
    assert placement_named(text)
    assert facts_of_text(text).placement_named


@pytest.mark.parametrize(
    "text",
    [
        # vllm-project/vllm#1435 (title): TP without Hugging Face's placement
        "How does `tensor_parallel_size` increase throughput?",
        # PyTorch's own counter, a longer identifier (torch.cuda.max_memory_allocated)
        "torch.cuda.max_memory_allocated()",
    ],
)
def test_other_words_are_not_placement(text):
    assert not placement_named(text)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=3000), st.none(), st.integers(), st.binary(max_size=40)))
def test_never_raises(value):
    assert placement_named(value) in (True, False)
