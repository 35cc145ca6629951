"""What a person's words say fixed the failure or caused it (headroom/probes/symptom_fixes.py).
Texts are issue titles and sentences of public threads, named beside each; a question, advice
or a change said not to help states no fix and blames nothing; untrusted text never raises."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.probes.symptom_fixes import graph_capture_failed, length_blamed, stated_fixes

# (text, the (knob, direction, value) it states)
FIXES = [
    (  # noonghunna/club-3090#96 (pull request title)
        "Add/vllm-qwen36-27b-dual-nvlink-dflash-noviz -- OOM during verify-stress.sh until "
        "reduce max_model_len to 188000",
        ("max_model_len", "lower", 188000.0),
    ),
    (  # vllm-project/vllm#14992, the reporter's answer
        "set --max-num-seqs=256 (the default value of v0) solve the issue.",
        ("max_num_seqs", None, 256.0),
    ),
    (  # vllm-project/vllm#1949, as the incident's resolution quotes vllm#188
        "After setting --max-model-len 8192 the OOM went away",
        ("max_model_len", None, 8192.0),
    ),
    (  # hiyouga/EasyR1#1 (pull request title): "from 0.7 to 0.6" says the way
        "change vllm gpu_memory_utilization from 0.7 to 0.6 to avoid OOM",
        ("gpu_memory_utilization", "lower", 0.6),
    ),
    (  # vllm-project/vllm#49351 (pull request title)
        "[CI][Bugfix] Reduce max_model_len in OOT embedding test to fix KV-cache OOM on small GPUs",
        ("max_model_len", "lower", None),
    ),
    (  # QwenLM/Qwen3-VL#1684
        "Reducing the maximum context length works for me, but I need long context to support "
        "video inference.",
        ("max_model_len", "lower", None),
    ),
]


@pytest.mark.parametrize(("text", "fix"), FIXES)
def test_a_fix_the_words_state(text, fix):
    found = stated_fixes(text)
    assert [(f.knob, f.direction, f.value) for f in found] == [fix]
    assert found[0].text and found[0].text in text


@pytest.mark.parametrize(
    "text",
    [
        # vllm-project/vllm#16551: reduced, and still OOM
        "even after I reduced max-model-len, for example for the 7b model, I reduced "
        "max-model-len from 26000 to 16384, still OOM.",
        # vllm-project/vllm#15664: tried both ways, no luck
        "I have tried increasing and decreasing gpu_memory_utilization from 0.9 to 0.5 and 0.96 "
        "and I have changed max_num_seqs to 256, still no luck.",
        # vllm-project/vllm#10569: a maintainer's advice, not a report
        "You can reduce `max_num_seqs` (e.g. to 2) to avoid OOM.",
        # vllm-project/vllm#5993 (title) and a commenter's advice
        "[Bug]: OOM when loading Qwen2 GPTQ 8bit and modify gpu_memory_utilization didn't help",
        "Try setting max-model-len to lower. Also, set gpu_memory_utilization to 0.98.",
        # vllm-project/vllm#19148 (title)
        "[Bug]: max-model-len + max-num-seqs is not reducing vram usage",
        # ROCm/vllm#810 (pull request title): a change with no failure it answers
        "[CI] temp reduce the gpu mem utilization",
        # QwenLM/Qwen3-VL-Embedding#57 (title): a question
        "使用vllm推理，显存有限如何设置max_model_len的大小呢？",
        # hiyouga/LlamaFactory#7131, a comment: limited, and still out of memory
        "截断长度和最大生成长度都限制了，还是会爆显存",
    ],
)
def test_no_fix_in_a_question_advice_or_a_change_that_did_not_help(text):
    assert stated_fixes(text) == ()
    assert not length_blamed(text)


@pytest.mark.parametrize(
    ("text", "blamed"),
    [
        # gpustack/gpustack#1342 (title)
        (
            "Failed to get derived_max_model_len of ModelScope/ZhipuAI/glm-4-9b-chat-1m and using "
            "default value caused OOM",
            True,
        ),  # fmt: skip
        (
            "Too large model length will cause memory out of bound.",
            True,
        ),  # vllm-project/tpu-inference#3410
        ("OOM caused by missing `--max-model-len`", True),  # ai-dynamo/aiconfigurator#238
        ("OOM with long context", True),  # Sandermage/genesis-vllm-patches#1 (title)
        (
            "Model instance OOM due to large context length in OpenGVLab/internvl2-4b model",
            True,
        ),  # gpustack/gpustack#364 (title); fmt: skip
        # a length named without blame, and one that did not help
        ("OOM when loading Qwen2 GPTQ 8bit", False),  # vllm-project/vllm#5993
        ("[Bug]: max_model_len setting fail", False),  # vllm-project/vllm#14102
        ("OOM even with max_model_len=2048", False),
    ],
)
def test_the_context_length_blamed(text, blamed):
    assert length_blamed(text) is blamed


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=3000), st.none(), st.integers(), st.binary(max_size=40)))
def test_never_raises_and_stays_bounded(value):
    found = stated_fixes(value)
    assert isinstance(found, tuple) and len(found) <= 5  # one per knob at most
    for fix in found:
        assert fix.direction in (None, "lower", "raise")
        assert len(fix.text) <= 400
    assert length_blamed(value) in (True, False)


_HEDGES = ["even after", "still OOM after", "try", "should I", "如何", "还是不行，"]


@given(
    st.sampled_from(_HEDGES),
    st.sampled_from(
        [
            "reducing max_model_len to 4096",
            "lowering max_num_seqs to 32",
            "increasing gpu_memory_utilization to 0.95",
        ]
    ),  # fmt: skip
    st.sampled_from([" fixed it", " works", "", " the OOM went away"]),
)
def test_a_hedged_sentence_states_no_fix(hedge, change, done):
    assert stated_fixes(f"{hedge} {change}{done}") == ()


@given(
    st.sampled_from(["reducing", "lowering", "decreasing"]),
    st.sampled_from(["max_model_len", "--max-model-len", "`max_model_len`", "max-model-len"]),
    st.integers(min_value=512, max_value=262144),
    st.sampled_from([" fixed it", " solved the OOM", " and it works"]),
)
def test_a_lowering_said_to_fix_is_read_whatever_its_spelling(verb, knob, value, done):
    found = stated_fixes(f"{verb} {knob} to {value}{done}")
    assert [(f.knob, f.direction, f.value) for f in found] == [("max_model_len", "lower", value)]


@pytest.mark.parametrize(
    ("text", "failed"),
    [
        ("Error: CUDA graph capture fails during profiling", True),  # xencon/aixcl#694
        # vllm-project/vllm#57475 (title)
        (
            "[Bug] CUDA graph memory estimate under-reserves → OOM during graph capture at high "
            "`--gpu-memory-utilization`",
            True,
        ),  # fmt: skip
        # vLLM's own hint (V0 model_runner.py, as vllm-project/vllm#11452 pastes it) and its
        # INFO line before capture: no failure
        (
            "If out-of-memory error occurs during cudagraph capture, consider decreasing "
            "`gpu_memory_utilization` or switching to eager mode.",
            False,
        ),  # fmt: skip
        (
            "Capturing cudagraphs for decoding. This may lead to unexpected consequences if the "
            "model is not static.",
            False,
        ),  # fmt: skip
        # vllm-project/vllm#57595: what can happen is not what happened
        ("On low-VRAM GPUs, enabling CUDA graphs can OOM during capture.", False),
        ("Graph capturing finished in 71 secs, took 6.56 GiB", False),  # vllm-project/vllm#11452
    ],
)
def test_graph_capture_said_to_fail(text, failed):
    assert graph_capture_failed(text) is failed


@given(st.one_of(st.text(max_size=3000), st.none(), st.integers()))
def test_graph_capture_reader_never_raises(value):
    assert graph_capture_failed(value) in (True, False)
