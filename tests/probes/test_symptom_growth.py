"""Words that say vLLM's memory keeps growing while it serves
(headroom/probes/symptom_growth.py). Texts are titles and sentences of public threads, named
beside each; a fix's title, a question, a size at start-up and a negation are not it;
untrusted text never raises."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.probes.symptom_growth import memory_grows


@pytest.mark.parametrize(
    "text",
    [
        # zai-org/GLM-V#165 (description)
        "While using vLLM versions 0.10.*, I encountered the problem that the memory of my GPUs "
        "is rapidly clogging up during inference.",
        "Memory leak then i use vLLM",  # zai-org/GLM-V#165 (title)
        "[Bug]: 0.8.0 ram leakage",  # vllm-project/vllm#15085
        # vllm-project/vllm#15294 (title)
        "[Bug]: Critical Memory Leak in vLLM V1 Engine: 200+ GB RAM Usage from Image Inference",
        "vllm==0.8.5.post1 OOM memory leak",  # JIA-Lab-research/Seg-Zero#38
        "内存泄漏一直未被解决",  # hiyouga/EasyR1#156 (description)
    ],
)
def test_growth_reported(text):
    assert memory_grows(text)


@pytest.mark.parametrize(
    "text",
    [
        "[env] fix memory leak & enable vLLM v1",  # hiyouga/EasyR1#73: a fix's title
        "[Usage]: Why 0.5B model requires 21G gpu ram ?",  # vllm#4253: the reservation
        "GPU usage is about 73G",  # vllm#550
        "is there a memory leak in vllm?",
        "no memory leak after the upgrade",
    ],
)
def test_not_growth(text):
    assert not memory_grows(text)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=3000), st.none(), st.integers(), st.binary(max_size=40)))
def test_never_raises(value):
    assert memory_grows(value) in (True, False)
