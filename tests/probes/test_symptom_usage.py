"""Words that say vLLM takes too much GPU memory (headroom/probes/symptom_usage.py). Texts are
issue titles and sentences of public threads, named beside each; host RAM, vLLM's own lines
and a negation are not the complaint; untrusted text never raises."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.probes.symptom_facts import facts_of_text
from headroom.probes.symptom_usage import memory_taken


@pytest.mark.parametrize(
    "text",
    [
        "[Usage]: Why 0.5B model requires 21G gpu ram ?",  # vllm-project/vllm#4253
        # vllm-project/vllm#550
        "when i load 13b llama in HF, GPU usage is about 26G. However, when load 13b llama in "
        "vllm, GPU usage is about 73G.",
        # vllm-project/vllm#7979 (title)
        "[Bug]: run gguf ，the gguf model is only 800M, but why does the GPU memory usage "
        "exceed 20G?",
        "[Usage]: Is there an option to reduce GPU memory usage？",  # vllm-project/vllm#7495
        "how to reduce gpu memory in vllm",  # vllm-project/vllm#3345
        "Why vLLM - GPTQ deployment consumes high memory?",  # vllm-project/vllm#2352
        # vllm-project/vllm#10357 (title)
        "[Bug]: Qwen2 VL takes only 18Gb when run by using hugggingface code, but the same model "
        "takes 38 GB GPU memory with VLM",
        # vllm-project/vllm#4723 (title)
        "[Performance]: Why does vllm spend so much memory even using OPT model?",
        # QwenLM/Qwen#835 (description): it takes the whole GPU memory, can it be limited to 50 %
        "vLLM 部署时会占用整个显存，这个有办法限制吗？比如限制只占用 50 % 的显存",
        # OpenBMB/MiniCPM-V#919 (title): a size seen taken, the GPU's memory named before it
        "[vllm] - 文档写占用显存18GB，但是我实际vllm部署时候发现占用了70多GB呢",
    ],
)
def test_vllm_said_to_take_too_much_gpu_memory(text):
    assert memory_taken(text)
    assert facts_of_text(text).memory_taken


@pytest.mark.parametrize(
    "text",
    [
        # vllm-project/vllm#4448 (title): "ram" is not said to be the GPU's
        "[Usage]: why vllm takes as much ram as possible ?",
        # vLLM's own lines report what was taken (V1 gpu_model_runner, V0 model_runner)
        "Model loading took 13.31 GiB memory and 5.2 seconds",
        "Graph capturing finished in 71 secs, took 6.56 GiB",  # vllm-project/vllm#11452
        "The model is only 1.6G",  # vllm-project/vllm#15216
        "Runing API OOM",  # vllm-project/vllm#882: a failure, not a reservation
        # a size taken with no word of the GPU's memory: a disk or the host's ("内存")
        "模型文件占用了70GB",
        "加载后占用了70GB内存",
    ],
)
def test_not_the_complaint(text):
    assert not memory_taken(text)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=3000), st.none(), st.integers(), st.binary(max_size=40)))
def test_never_raises(value):
    assert memory_taken(value) in (True, False)


@given(
    st.sampled_from(["does not", "doesn't", "never", "没有"]),
    st.sampled_from(["take 20G of GPU memory", "use much GPU memory", "占用大量显存"]),
)
def test_a_negated_sentence_is_not_the_complaint(negation, claim):
    assert not memory_taken(f"vLLM {negation} {claim}")


@pytest.mark.parametrize(
    "text",
    [
        # vllm-project/vllm#7341 (pull request title): a change to vLLM's code
        "[Model] activation gpu mem reuse in model forward",
        # vllm-project/vllm#7155 (title): a feature proposal about the reservation
        "[Performance]: max_model_len argument to LLM class does not limit GPU utilization.",
    ],
)
def test_pull_requests_and_proposals_are_not_the_complaint(text):
    assert not memory_taken(text)
