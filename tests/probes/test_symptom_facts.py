"""What a person's sentence says beside the symptom (headroom/probes/symptom_facts.py): GPU
counts, heads, a utilization and whether it is blamed, a setting said to work, in English and
Chinese. Texts are issue titles and sentences of public threads (tests/fixtures/incidents and
the threads named beside each), then the same families in other words; untrusted text never
raises."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.probes.symptom_facts import WordFacts, facts_of_text, text_facts
from headroom.probes.vllm_log import classify_line

# (text, the GPU counts it names)
COUNTS = [
    ("I have 3 GPUs (3x3090).", (3,)),  # vllm-project/vllm#596
    ("but I only have 6 gpus(T4 16G per GPU)", (6,)),  # vllm-project/vllm#4232
    ("32heads on 3gpus", (3,)),  # vllm-project/vllm#4232, a commenter
    (  # MIV-XJTU/FSDrive#21
        "Due to the qwen issue, 8-gpu inference cannot be used. Use "
        "CUDA_VISIBLE_DEVICES='0,1,2,3' to use 4-gpu.",
        (8, 4),
    ),
    ("机器：8*a100 40g", (8,)),  # QwenLM/Qwen#870
    ("[bug] cliff 2 90K dual-turbo 2x3080 using turboquant - working with fp8_e5m2", (2,)),
    (
        "GLM-4.5v受到GLM-4.1v的限制（固定12头），导致只能4卡部署，在显存较少的8卡设备上无法部署",
        (4, 8),
    ),  # zai-org/GLM-V#111
    ("OOM when 1 gpu, even though I have multi-gpu", (1,)),  # vllm-project/vllm#9977
    ("Llama-2-70b on 8 x A100-40G", (8,)),
    ("单卡可以跑，双卡报错", (1, 2)),
    ("两张卡都爆显存", (2,)),
    ("on a single GPU", (1,)),
    # not a count: a model's name, an image size, a GPU's model number, "stuck", an ordinal
    ("Mixtral-8x7B-Instruct-v0.1-GPTQ", ()),
    ("images of 1024x1024", ()),
    ("RTX 4090 GPU", ()),
    ("启动后卡住了", ()),
    ("第一张卡的显存增加直到溢出", ()),
]


@pytest.mark.parametrize(("line", "counts"), COUNTS)
def test_gpu_counts_are_read_beside_the_word_that_counts_gpus(line, counts):
    assert facts_of_text(line).gpu_counts == counts


@pytest.mark.parametrize(
    "line",
    [
        "[Usage]: Can I use model parallelism? I faced a problem that OOM when 1 gpu, "
        "even though I have multi-gpu",  # vllm-project/vllm#9977
        # QwenLM/Qwen#870: only the first card's memory grows until it overflows
        "采用vllm_wrapper进行推理，发现第一张卡的显存增加直到溢出，其他卡的显存不变。",
        # chatchat-space/Langchain-Chatchat#3202
        "[BUG] vllm多卡启动显示成功，但是实际上只有一张显卡被占用",
        "vLLM only uses the first GPU although I have 4 GPUs",
    ],
)
def test_one_gpu_in_use_of_several(line):
    facts = facts_of_text(line)
    assert facts.one_gpu_in_use and facts.one_gpu_of_several


@pytest.mark.parametrize("line", ["OOM on 2 GPUs", "双卡爆显存", "Gemma OOM", "8卡部署失败"])
def test_no_contrast_of_one_gpu_with_several(line):
    assert not facts_of_text(line).one_gpu_of_several


HEADS = [
    ("ValueError: Total number of attention heads (52) must be divisible by tensor parallel "
     "size (3).", 52),  # vllm-project/vllm#414 (title)
    ("Is it possible to run a model with 64 heads on 3 GPUs?", 64),  # vllm-project/vllm#4232
    ("32heads on 3gpus", 32),  # vllm-project/vllm#4232
    ("GLM-4.5v受到GLM-4.1v的限制（固定12头），导致只能4卡部署", 12),  # zai-org/GLM-V#111
    ("视觉部分有16个注意力头", 16),
    ("52 attention heads and 8 KV heads", 52),
    # a KV-head count alone, two different counts, a head that is not a count
    ("8 KV heads", None),
    ("12 heads in the vision tower and 64 heads in the LLM", None),
    ("1个头部区域", None),
]  # fmt: skip


@pytest.mark.parametrize(("line", "heads"), HEADS)
def test_heads_are_one_attention_head_count_or_none(line, heads):
    assert facts_of_text(line).heads == heads


UTILIZATION = [
    # (text, value, blamed)
    ("[BUG] 纯python环境安装gpu利用率默认参数为0.61导致rtx3060用不起。（手动修正代码见正文）",
     0.61, True),  # netease-youdao/QAnything#257
    ("cannot load llama 3.2 3b on a 16gb gpu when gpu_memory_utilisation=1",
     1.0, False),  # vllm-project/vllm#10797
    ("gpu_memory_utilization 0.3 is too low for a 10250 sequence length", 0.3, True),
    ("--gpu-memory-utilization 0.5 causes the start-up to fail", 0.5, True),
    ("显存利用率90%", 0.9, False),
    ("mem-util 0.82", 0.82, False),
    # "too high" blames the value the other way: not a low value to raise
    ("gpu_memory_utilization 0.5 is too high with the trainer on the GPU", 0.5, False),
    # nvidia-smi's compute load is not the memory fraction; two values are none
    ("GPU利用率100%", None, False),
    ("GPU utilization 100% during decode", None, False),
    ("tried gpu_memory_utilization 0.9 and gpu_memory_utilization 0.5", None, False),
]  # fmt: skip


@pytest.mark.parametrize(("line", "value", "blamed"), UTILIZATION)
def test_utilization_and_whether_the_words_blame_it(line, value, blamed):
    facts = facts_of_text(line)
    assert (facts.utilization, facts.utilization_blamed) == (value, blamed)


WORKS = [
    ("[bug] cliff 2 90K dual-turbo 2x3080 using turboquant - working with fp8_e5m2",
     (("kv_cache_dtype", "fp8_e5m2"),)),  # noonghunna/club-3090#47
    ("Crash on start-up, works fine with --enforce-eager", (("enforce_eager", True),)),
    ("fixed by adding --enforce-eager", (("enforce_eager", True),)),
    ("OOM at 64K, ok with --kv-cache-dtype fp8", (("kv_cache_dtype", "fp8"),)),
    ("改成fp8_e5m2后就可以了", (("kv_cache_dtype", "fp8_e5m2"),)),
    ("加上--enforce-eager就正常", (("enforce_eager", True),)),
    # negated, or two different dtypes: nothing
    ("still crashes, not working with fp8", ()),
    ("works with fp8 and works with fp8_e4m3 too", ()),
]  # fmt: skip


@pytest.mark.parametrize(("line", "works"), WORKS)
def test_a_setting_said_to_work(line, works):
    assert facts_of_text(line).works_with == works


@pytest.mark.parametrize(
    ("line", "short", "cannot", "trouble"),
    [
        ("在显存较少的8卡设备上无法部署", True, True, False),  # zai-org/GLM-V#111
        ("导致rtx3060用不起", False, True, False),  # netease-youdao/QAnything#257
        ("The model does not fit on 2 GPUs", True, True, False),  # vllm-project/vllm#4232
        ("vllm_cli_demo报错", False, False, True),  # zai-org/GLM-4#47
        ("[bug] cliff 2 90K dual-turbo", False, False, True),  # noonghunna/club-3090#47
        ("Runs fine on 2 GPUs", False, False, False),
    ],
)
def test_memory_short_cannot_run_and_trouble(line, short, cannot, trouble):
    facts = facts_of_text(line)
    assert (facts.memory_short, facts.cannot_run, facts.trouble) == (short, cannot, trouble)


@pytest.mark.parametrize(
    "line",
    [
        # vLLM's own line (its logger prefix): the log reader's, not a person's words
        "INFO 12-26 08:53:29 llm_engine.py:72] Initializing an LLM engine with config: "
        "tensor_parallel_size=1, 8 GPUs",
        '  File "/usr/lib/python3.10/site-packages/vllm/config.py", line 3, in 8 GPUs',
        "# 12 heads on 8 GPUs",
        "",
        "   ",
    ],
)
def test_log_lines_code_and_blank_text_state_nothing(line):
    assert facts_of_text(line) == WordFacts()
    assert not facts_of_text(line)


def test_a_real_error_line_wins_over_words():
    """Beside vLLM's own error the words' symptoms are not read; a title or a sentence
    still names its GPUs, a pasted log (more than three lines) names nothing."""
    real = classify_line("ValueError: No available memory for the cache blocks.", 2)
    assert real is not None and real.severity == "error"
    facts = text_facts(["OOM on 1 gpu of 8 GPUs"], [real])
    assert facts is not None and facts.gpu_counts == (1, 8)
    assert not (facts.one_gpu_in_use or facts.memory_short or facts.several_gpus)
    assert text_facts(["OOM on 1 gpu of 8 GPUs", "a", "b", "c"], [real]) is None
    assert text_facts(["Qwen2-7B-Instruct OOM"], [real]) is None  # a model alone: not read


def test_a_title_holding_vllms_error_still_names_its_gpu():
    """Titles of public threads (tests/fixtures/field_words/titles.jsonl: vllm#18124,
    vllm#23230) that quote vLLM's error beside the GPU they ran on."""
    for title, name in (
        ("[Usage]: A100 vllm部署Qwen2.5-VL-3B-Instruct，load模型之后报错No available memory for "
         "the cache blocks", "A100"),
        ("[Bug]: CUDA out of memory when runing nvidia/NVIDIA-Nemotron-Nano-9B-v2 with vllm "
         "0.10.1 on GPU L40S", "L40S"),
    ):  # fmt: skip
        events = [e for e in [classify_line(title, 1)] if e is not None]
        assert events and events[0].severity == "error"
        facts = text_facts([title], events)
        assert facts is not None and facts.gpu_names == (name,) and facts.model_names == ()


def test_the_first_line_that_states_anything_is_read():
    found = text_facts(["hello", "固定12头，8卡无法部署", "OOM on 2 GPUs"], ())
    assert found is not None and (found.heads, found.gpu_counts) == (12, (8,))
    assert text_facts(["hello", "world"], ()) is None


def test_a_line_the_log_reader_recognised_is_skipped():
    line = "Sequence group 224 is preempted ... on 8 GPUs (scheduler.py:1558)"
    event = classify_line(line, 1)
    events = [event] if event is not None else []
    found = text_facts([line, "OOM on 4 GPUs"], events)
    assert found is not None
    assert found.gpu_counts == ((4,) if events else (8,))


# Untrusted input: any text, any object, never an exception and never an impossible value.
@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=400), st.none(), st.integers(), st.binary(max_size=50)))
def test_never_raises_and_values_stay_in_range(value):
    facts = facts_of_text(value)
    assert isinstance(facts, WordFacts)
    assert all(0 < n <= 1024 for n in facts.gpu_counts)
    assert len(set(facts.gpu_counts)) == len(facts.gpu_counts)
    assert facts.heads is None or 0 < facts.heads <= 1024
    assert facts.utilization is None or 0 < facts.utilization <= 1
    assert not facts.utilization_blamed or facts.utilization is not None


@settings(max_examples=100, deadline=None)
@given(
    st.integers(min_value=1, max_value=64),
    st.sampled_from(["{n} GPUs", "{n}卡", "{n} x H100", "{n}张卡", "{n} gpus", "{n}xA100"]),
    st.text(alphabet="abc ，。", max_size=20),
)
def test_a_count_beside_a_gpu_word_is_read_whatever_surrounds_it(n, template, noise):
    text = f"OOM {noise} on " + template.format(n=n) + f" {noise}"
    assert facts_of_text(text).gpu_counts == (n,)


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=1, max_value=128), st.integers(min_value=2, max_value=16))
def test_heads_and_cards_in_chinese(heads, cards):
    facts = facts_of_text(f"固定{heads}头，只能在{cards}卡上部署失败")
    assert (facts.heads, facts.gpu_counts, facts.trouble) == (heads, (cards,), True)


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=5, max_value=99), st.sampled_from(["=", " ", ": ", "为"]))
def test_a_utilization_value_is_read_after_its_name(hundredths, sep):
    value = hundredths / 100
    facts = facts_of_text(f"gpu_memory_utilization{sep}{value} 导致启动失败")
    assert facts.utilization == value and facts.utilization_blamed
