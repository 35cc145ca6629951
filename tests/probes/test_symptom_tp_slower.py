"""Words that say more GPUs (a larger TP) made vLLM slower (headroom/probes/symptom_layout.py).
Texts are public threads' titles and sentences (named beside each); a slow load or start, an
OOM, a hang and a negation are not it; untrusted text never raises."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.probes.symptom_layout import tp_slower


@pytest.mark.parametrize(
    "text",
    [
        "[Bug]: When I inference with a 1b model, tp2 latency is greater than tp1",  # vllm#6027
        "[Question] Why does using multiple gpus lead to slower performance?",  # vllm#689
        "I can not improve throughput with tensor-parallel on multi-gpus.",  # vllm#1873
        # HabanaAI/vllm-fork#204 (title)
        "[Usage]: tensor-parallel-size=2 second token latency is higher than tensor_parallel_size=1",
    ],
)
def test_slower_with_more_gpus(text):
    assert tp_slower(text)


@pytest.mark.parametrize(
    "text",
    [
        "model loading is slower with tensor parallel",  # a load, not serving
        "[Bug]: vLLM Distributed Inference stuck when using multi -GPU",  # vllm#2466: a hang
        "OOM with multiple GPUs",
        "TP 2 is not slower than TP 1",
        "Unexpected latency of StarCoder",  # vllm#696's title names no parallel side
    ],
)
def test_not_slower_with_more_gpus(text):
    assert not tp_slower(text)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=3000), st.none(), st.integers(), st.binary(max_size=40)))
def test_never_raises(value):
    assert tp_slower(value) in (True, False)
