"""The words readers on real titles and sentences of public vLLM threads, family by family.

Every text is verbatim from tests/fixtures/field_words/titles.jsonl (collected as its
SOURCES.md says; the thread is named beside each); none is from the incident corpus.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.probes.symptom_facts import facts_of_text, text_facts
from headroom.probes.symptom_hang import hang_words, words_of_line
from headroom.probes.symptom_text import symptom_of_line, text_symptoms
from headroom.probes.symptom_usage import memory_taken

FIELD = Path(__file__).resolve().parents[1] / "fixtures" / "field_words" / "titles.jsonl"
TEXTS = {row["text"]: row for row in map(json.loads, FIELD.read_text("utf-8").splitlines())}


def field(text: str) -> str:
    """The text, after checking it is one of the collected ones (a typo fails here)."""
    assert text in TEXTS, text
    return text


# --- hangs: stuck in Chinese, "stall", "stops processing"; TP in backticks or without a size --


@pytest.mark.parametrize(
    "text",
    [
        "使用vllm_worker进行模型加载，卡着不动",  # lm-sys/FastChat#2833
        "[Bug]: 为什么在部署qwen2.5-vl-32b-instruct的时候，部署过程被卡死不动了",  # vllm#17151
        "[Bug]: vllm stall on llama3-70b warmup with 0.4.1",  # vllm#4277
        "vLLM stops all processing when CPU KV cache is used, has to be shut down and restarted.",
    ],
)
def test_a_hang_said_in_other_words_is_read(text):
    assert words_of_line(field(text)) is not None


def test_tp_in_backticks_or_named_without_a_size_is_several_gpus():
    backticks = words_of_line(field("Hangs indefinitely when `tensor_parallel_size` > 1"))
    assert backticks is not None and backticks.multi_gpu and backticks.tp == 1
    bare = words_of_line(
        field(
            "[Bug]: vllm serve hang at `Using model weights format ['*.safetensors']` when using tp"
        )
    )
    assert bare is not None and bare.multi_gpu and bare.tp is None


def test_a_hang_while_loading_weights_is_another_stage():
    hang = words_of_line(
        field(
            "[Bug]: Engine hangs indefinitely during model weight loading for "
            "nvidia/Qwen3.5-397B-A17B-NVFP4 on Blackwell GPUs (RTX PRO 6000) with TP=4"
        )
    )
    assert hang is not None and hang.other_stage and hang.tp == 4
    install = "pip install vllm then run it"
    assert words_of_line(install) is None  # "install" holds "stall", not the word


# --- false positives: Ray's OOM, a count of GPUs, one GPU said to work ----------------------


def test_rays_oom_is_host_memory():
    assert symptom_of_line(field("ray OOM in tensor parallel")) is None  # vllm#322
    assert symptom_of_line("[Bug]: CUDA OOM with the ray backend on 2 GPUs") is not None


def test_all_my_gpus_is_a_count_not_memory():
    assert not memory_taken(field("[Usage]: Will vllm by default use all my gpus?"))  # vllm#17854
    assert memory_taken(field("Why vLLM - GPTQ deployment consumes high memory?"))  # vllm#2352


def test_one_gpu_said_to_work_is_not_the_one_in_use():
    text = field("[Bug]: LLM is not getting loaded on multiple GPUs but works fine on a single GPU")
    facts = facts_of_text(text)  # vllm#3974
    assert facts.several_gpus and not facts.one_gpu_in_use


# --- preemption, a typo of "too small", vLLM taking all the memory -------------------------


def test_preemption_said_in_words_is_the_schedulers_warning():
    event = symptom_of_line(
        field(
            "[Bug]: performance regression caused by frequently preempting and resuming a request"
        )
    )  # vllm#25538
    assert event is not None and (event.kind, event.severity) == ("preemption", "warning")
    for text in (
        "[Usage]: --preemption-mode is not supported by the V1 Engine. Falling back to V0.",
        "[Feature]: Does vLLM allow 'dropping' requests instead of preempting them?",
    ):  # a flag; a yes/no question
        assert symptom_of_line(field(text)) is None
    # the noun alone names the mechanism, not an event (Hypothesis found a bare "PREEMPTION")
    assert symptom_of_line("PREEMPTION") is None


@pytest.mark.parametrize(
    "text",
    [
        "GPU KV cache usage: 100.0%以后就卡住",  # vllm#1206
        "[Bug]: Hitting close to 100% cache causes spike in waiting and kills throughput",
        "[Bug]:几个大的token超限制请求之后GPU KV cache usage持续升高一直接近100%，几个小时不下降，最后重启解决",
    ],
)
def test_a_kv_cache_said_full_under_load_is_the_preemption_state(text):
    event = symptom_of_line(field(text))  # vllm#1206, vllm#23444, vllm#27073
    assert event is not None and event.kind == "preemption"


def test_a_kv_cache_usage_below_full_is_no_symptom():
    assert (
        symptom_of_line(
            field("vLLM model serving server hangs when GPU KV cache usage reaches 10%")
        )
        is None
    )
    assert symptom_of_line(field("When is cpu kv cache supposed to be used?")) is None


def test_to_small_kv_cache_is_a_kv_shortage():
    event = symptom_of_line(field("10MiB to small KV cache."))
    assert event is not None and event.kind == "no_cache_memory"


@pytest.mark.parametrize(
    "text",
    [
        # vllm#8816 (first sentence), vllm#822, modelscope/ms-swift#3342 (first sentence)
        "Running VLLM like` vllm serve /models/Meta-Llama-3-8B/   --disable-log-requests`  uses "
        "almost all available space on my H100.",
        "Why the vllm loading model has a large memory footprint",
        "我设置了vllm显存占用为0.7，但是最后一张卡好像还是占用了0.9，这是为什么",
    ],
)
def test_vllm_taking_the_memory_in_other_words(text):
    assert memory_taken(field(text))


# --- numbers: GPU counts and memory as people write them --------------------------------


def test_counts_and_sizes_as_written():
    eight = facts_of_text(field("为啥推理一条需要接近1分钟，8*80G A100"))  # GAIR-NLP/auto-j#13
    assert (eight.gpu_counts, eight.gpu_memory_gib, eight.gpu_names) == ((8,), 80.0, ("A100",))
    one = facts_of_text(
        field(
            "[Usage]: use vllm==0.4.2 to infer qwen2-0.5b model on H800 1*80G,but GPU's "
            "computational power utilization is only around 20%"
        )
    )  # vllm#6737
    assert (one.gpu_counts, one.gpu_memory_gib) == ((1,), 80.0)
    sixteen = facts_of_text(
        field(
            "vllm serve Qwen/Qwen2.5-VL-7B-Instruct-AWQ到底需要多大显存？16G都不够，能限制它在16G以内吗？"
        )
    )  # QwenLM/Qwen3-VL#1224
    assert sixteen.gpu_memory_gib == 16.0


def test_blown_up_memory_and_sizes_glued_to_counts():
    assert symptom_of_line(field("显存炸了")).kind == "cuda_oom"  # opendatalab/MinerU#3992
    glued = facts_of_text(
        field("[Bug]: OOM on loading model despite having enough VRAM (16gb model on 2x11gb gpu)")
    )  # vllm#18478
    assert (glued.gpu_counts, glued.gpu_memory_gib) == ((2,), 11.0)
    named = facts_of_text(field("3B用4块GPU3090训练时，vllm报显存不足"))  # dhcode-cpp/X-R1#38
    assert (named.gpu_counts, named.gpu_names) == ((4,), ("3090",))


def test_a_count_after_the_gpus_name():
    """ "4090x2" is the task brief's example of the field's phrasing (the count after the
    name, as a shopping list writes it), not a thread's text; the others are titles of the
    survey (vllm#24814, QwenLM/Qwen3-VL#1489, vllm#2856) that must keep their reading."""
    assert facts_of_text("4090x2").gpu_counts == (2,)
    assert facts_of_text(field("[Bug]: 8xA100 oom with qwen235b")).gpu_counts == (8,)
    eight = facts_of_text(field("8*A100 (80G) deploy Qwen3vl 235B-A22B-Instruct cuda OOM"))
    assert (eight.gpu_counts, eight.gpu_memory_gib) == ((8,), 80.0)
    assert facts_of_text(field("[0.2.7] LLAMA 70B AWQ OOM with TP8")).gpu_counts == ()


def test_a_device_list_names_the_gpus_one_of_which_works():
    text = field(
        "same request. when I use `CUDA_VISIBLE_DEVICES=0,1` to load the model, but only the "
        "first one gpu working, any solution? thanks"
    )  # vllm#3525 (a comment)
    facts = facts_of_text(text)
    assert facts.gpus_at_hand == 2 and facts.one_gpu_of_several


# --- untrusted input: any text, never an exception ----------------------------------------

_FRAGMENTS = st.sampled_from(
    ["OOM", "显存不足", "爆显存", "卡着不动", "stall", "preempted", "KV cache", "to small", "tp=4",
     "`tensor_parallel_size` > 1", "CUDA_VISIBLE_DEVICES=0,1", "8*80G A100", "H800 1*80G",
     "16G都不够", "works fine on a single GPU", "ray OOM", "all my gpus", "?", "？", "\n", " "]
)  # fmt: skip
_WORDS = st.lists(st.one_of(_FRAGMENTS, st.text(max_size=30)), max_size=12).map("".join)


@settings(max_examples=300, deadline=None)
@given(_WORDS)
def test_the_words_readers_never_raise(text):
    lines = text.splitlines() or [text]
    assert symptom_of_line(text) is None or symptom_of_line(text).kind
    assert isinstance(text_symptoms(lines), list)
    facts = facts_of_text(text)
    assert all(0 < n <= 1024 for n in facts.gpu_counts)
    assert facts.gpu_memory_gib is None or 1 <= facts.gpu_memory_gib <= 300
    text_facts(lines)
    hang = words_of_line(text)
    assert hang is None or hang.tp is None or hang.tp >= 0
    hang_words(lines)
    assert memory_taken(text) in (True, False)
