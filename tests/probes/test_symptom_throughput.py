"""Words that say the throughput or the concurrency is limited
(headroom/probes/symptom_throughput.py). Texts are titles and sentences of public threads and
pull requests, named beside each; one stream's speed, a kernel's speed, the memory share and
a negation are not it; untrusted text never raises."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.probes.symptom_throughput import throughput_limited


@pytest.mark.parametrize(
    "text",
    [
        # vllm-project/vllm-omni#5071 (title)
        "[Bugfix][VoxCPM2] Restore max_num_seqs to 32 to fix throughput regression (#5064)",
        "[Usage]: Seeing perf regression using chunked_prefill on VLLM 0.5.4",  # vllm#7604
        # vllm-project/vllm#14022 (title)
        "[Usage]: Low GPU utilization when running Deepseek-r1-distill-llama-8B",
        # joryirving/home-ops#10027 (title)
        "feat(llm): enable 27b vLLM fan-out — 6 seqs + raise concurrency gates",
        # vllm-project/recipes#573 (review): "increasing --max-num-seqs from 2 to 16 improves
        # concurrency"
        "While increasing `--max-num-seqs` from `2` to `16` improves concurrency",
        # a two-node DGX Spark write-up's measurements at --max-num-seqs 1 (a blog's table)
        "| GPU utilization (node 2) | 37% |",
    ],
)
def test_a_limit_said(text):
    assert throughput_limited(text)


@pytest.mark.parametrize(
    "text",
    [
        # nlzy/vllm-gfx906#3 (title): two single streams compared, no batch in question
        "[Usage]: Qwen3-32B-GPTQ-4bit 13 tokens/s vs Llama3.3_70b_Q5_K_S.gguf 20 tokens/s",
        "[Performance]: Mistral Small 3.2 throughput v0.10.2",  # vllm#26166: no limit said
        "awq gemm 4bit kernal is slower than gemm fp16",  # vllm#2268: a kernel's speed
        "WSL performance issue with pin_memory=False",  # vllm#1084
        # the memory share is the KV budget, not the compute load (vllm#3345's kind of text)
        "low gpu_memory_utilization",
        "显存利用率很低",
        "the throughput is not low and there is no throughput regression",
        # a full load, an idle (or hung) GPU, and the memory share: no limit said
        "GPU utilization: 100%",
        "GPU utilization 0%",
        "GPU memory utilization 40%",
    ],
)
def test_not_a_limit(text):
    assert not throughput_limited(text)


def test_chinese_phrasings():
    # the shapes of Chinese threads' titles ("吞吐量很低", "并发上不去", "GPU利用率很低")
    assert throughput_limited("vllm部署后吞吐量很低")
    assert throughput_limited("vllm并发上不去")
    assert throughput_limited("推理时GPU利用率很低")


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=3000), st.none(), st.integers(), st.binary(max_size=40)))
def test_never_raises(value):
    assert throughput_limited(value) in (True, False)
