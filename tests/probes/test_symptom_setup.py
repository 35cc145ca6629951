"""The model and the GPUs a person's words name (headroom/probes/symptom_setup.py and the
counts symptom_facts reads beside a GPU's name). Texts are issue titles and sentences of
public threads, named beside each; untrusted text never raises and never yields more than the
module's bound."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.probes.symptom_facts import facts_of_text
from headroom.probes.symptom_setup import gpu_memory_gib, gpu_names, model_names

# (text, model-name candidates, GPU names, one GPU's memory in GB)
SETUPS = [
    ("vllm not support Yi-34B-Chat", ("Yi-34B-Chat",), (), None),  # lm-sys/FastChat#2771
    ("运行qwen-1.5-72B报错", ("qwen-1.5-72B",), (), None),  # hiyouga/LLaMA-Factory#5173
    (  # vllm-project/vllm#9630
        "Llama-3.2-11B-Vision gives OOM error on 96GB H100",
        ("Llama-3.2-11B-Vision",),
        ("H100",),
        96.0,
    ),
    (  # vllm-project/vllm#10797
        "cannot load llama 3.2 3b on a 16gb gpu when gpu_memory_utilisation=1",
        ("llama 3.2 3b",),
        (),
        16.0,
    ),
    ("24G的显存当使用vllm加载模型时，提示显存不足", (), (), 24.0),  # OpenBMB/AgentCPM-GUI#11
    ("机器：8*a100 40g", (), ("a100",), 40.0),  # QwenLM/Qwen#870
    (  # gpustack/gpustack#1342
        "Failed to get derived_max_model_len of ModelScope/ZhipuAI/glm-4-9b-chat-1m and using "
        "default value caused OOM",
        ("ModelScope/ZhipuAI/glm-4-9b-chat-1m",),
        (),
        None,
    ),
    # QwenLM/Qwen2.5-Omni#288: nvidia-smi's MiB is not a size written in words
    ("vllm GeForce RTX 4090/24564MiB 内存不够？", (), ("RTX 4090",), None),
    (  # vllm-project/vllm#15216: the model's size is not the GPU's
        "I used vllm 0.8.0 to deploy whisper-large-v3-turbo . The model is only 1.6G , and i "
        "use a 3060 with 12G.",
        ("whisper-large-v3-turbo",),
        ("3060",),
        12.0,
    ),
    (  # hiyouga/LlamaFactory#7131
        "VLLM推理Qwen2.5-VL 3B 48GB显存不足",
        ("Qwen2.5-VL", "Qwen2.5-VL 3B"),
        (),
        48.0,
    ),
    (  # OpenGVLab/OmniQuant#106
        "A single A100-80G can't run Llama-2-70b model?",
        ("Llama-2-70b",),
        ("A100",),
        80.0,
    ),
    (  # huggingface/optimum-benchmark#241
        "LLama-3.1-70B on 2x NVIDIA L40S results in torch.cuda.OutOfMemoryError",
        ("LLama-3.1-70B",),
        ("L40S",),
        None,
    ),
    (
        "7B model CUDA out of memory on rtx3090ti 24Gb",
        (),
        ("rtx3090ti",),
        24.0,
    ),  # meta-llama/llama#136
    (  # haotian-liu/LLaVA#1570
        "[Usage] 7B Inferece CUDA Out of Memory for RTX 4090 24GB VRAM",
        (),
        ("RTX 4090",),
        24.0,
    ),
    (  # vllm-project/vllm#2413
        "out of memory running mixtral gptq model in vllm 0.2.7",
        (),
        (),
        None,
    ),
    # not a GPU: a model's "8x7B", a context length, a port
    ("Mixtral-8x7B-Instruct-v0.1-GPTQ", ("Mixtral-8x7B-Instruct-v0.1-GPTQ",), (), None),
    ("max_model_len 4096 on port 8000", (), (), None),
]


@pytest.mark.parametrize(("text", "models", "gpus", "memory"), SETUPS)
def test_the_setup_is_read_beside_the_words_that_name_it(text, models, gpus, memory):
    assert model_names(text) == models
    assert gpu_names(text) == gpus
    assert gpu_memory_gib(text) == memory


@pytest.mark.parametrize(
    ("text", "counts"),
    [
        # meta-llama/llama#55
        (
            "Attempting to run 7B model on two Nvidia 3090s but getting OOM error with one GPU, "
            "and can't use both",
            (2, 1),
        ),  # fmt: skip
        # QwenLM/Qwen3#67
        ("8张A800的显存，启动huggingface版本都是OK的，但是vllm却报错OOM?", (8,)),
        (
            "8*A100执行GRPO完整流程，使用vllm爆显存，不使用vllm可以正常训练但缓慢",
            (8,),
        ),  # modelscope/ms-swift#4594
        ("LLama-3.1-70B on 2x NVIDIA L40S results in torch.cuda.OutOfMemoryError", (2,)),
        # a version before a GPU's name is no count
        ("vllm 0.8.0 3060 12G", ()),
    ],
)
def test_a_count_before_a_gpus_name(text, counts):
    assert facts_of_text(text).gpu_counts == counts


@pytest.mark.parametrize(
    "text",
    [
        "64GB RAM and a 1TB disk",  # host memory and disk are not the GPU's
        "The model is only 1.6G",  # vllm-project/vllm#15216: the model's size
        "images of 1024x1024 at 2048 tokens",
    ],
)
def test_sizes_that_are_not_a_gpus_memory(text):
    assert gpu_memory_gib(text) is None


def test_two_different_sizes_name_no_size():
    assert gpu_memory_gib("works on A100 80G, fails on A100 40G") is None


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=3000), st.none(), st.integers(), st.binary(max_size=40)))
def test_never_raises_and_stays_bounded(value):
    names = model_names(value)
    gpus = gpu_names(value)
    memory = gpu_memory_gib(value)
    assert isinstance(names, tuple) and len(names) <= 8
    assert all(isinstance(n, str) and n for n in names)
    assert isinstance(gpus, tuple) and len(gpus) <= 8
    assert memory is None or 1.0 <= memory <= 300.0


@given(
    st.sampled_from(["A100", "H100", "RTX 4090", "3090", "L40S", "V100"]),
    st.integers(min_value=8, max_value=192),
    st.sampled_from(["{gpu} {gb}G", "{gpu}-{gb}GB", "{gb}GB {gpu}", "{gb}G显存的{gpu}"]),
    st.text(alphabet="abc xyz,", max_size=20),
)
def test_a_size_beside_a_gpu_name_is_its_memory(gpu, gb, template, noise):
    text = f"{noise} " + template.format(gpu=gpu, gb=gb) + f" {noise}"
    assert gpu_memory_gib(text) == float(gb)
    assert [n.replace(" ", "").upper() for n in gpu_names(text)] == [gpu.replace(" ", "")]
