"""Words that say decoding is slow, or that name dropping eager mode
(headroom/probes/symptom_speed.py). Texts are titles and sentences of public threads and pull
requests, named beside each; a slow start or load, slow guided decoding, a question about the
flag, a negation and "without --enforce-eager" are not it; untrusted text never raises."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.probes.symptom_speed import decoding_slow, eager_removal_named

TITLES = Path(__file__).resolve().parents[1] / "fixtures" / "field_words" / "titles.jsonl"


@pytest.mark.parametrize(
    "text",
    [
        # Project-MONAI/VLM-Surgical-Agent-Framework#5 (description)
        "However, this disables the [cuda graph acceleration](https://pytorch.org/blog/"
        "accelerating-pytorch-with-cuda-graphs/), and as a result, the token generation on "
        "A6000 (Holoscan IGX, arm64) is very slow (11.2 tokes/s)",
        "`--enforce-eager` option slows down token generation",  # the same thread's title
        "fix: rm enforce eager from vllm deploy - prefer perf over pod launch time",  # dynamo#2109
        # NovaSky-AI/SkyRL#665 (title)
        "[lora] enforce_eager=true slows down generation time dramatically with LoRA",
        # dphnAI/sonar#1114 (title)
        "[Bug]: --enforce-eager reduces performance in -tp >1 significantly compared to vLLM",
        "The speed is very slow",  # lmarena/arena-hard-auto#81 (description)
        "vllm 推理速度很慢",  # field_words/titles.jsonl, label slow
        "[Performance]: Extremely low throughput",  # field_words/titles.jsonl, label slow
    ],
)
def test_slow_decoding_said(text):
    assert decoding_slow(text)


@pytest.mark.parametrize(
    "text",
    [
        # vllm-project/vllm#4449: a question about the flag, not a report
        "what is enforce_eager? and when it's enabled, will the inference become slower?",
        "Very slow guided decoding with Outlines backend since v0.6.5",  # vllm (symptom_output)
        # allenai/olmocr#287: eager mode wanted for a faster cold start
        "would be nice to be able to skip the slow compilation for faster cold-start when "
        "running with serverless setup",
        "Qwen3 OOM v0.8.5",  # vllm#17469 (title)
        # mlcommons/inference#2408: vLLM's own stats line carries no judgement
        "INFO 07-15 04:27:43 [loggers.py:118] Engine 000: Avg prompt throughput: 249.1 "
        "tokens/s, Avg generation throughput: 192.2 tokens/s, Running: 2 reqs, Waiting: 0 "
        "reqs, GPU KV cache usage: 0.2%, Prefix cache hit rate: 36.3%",
        "Works with enforce-eager. Gives 20 token per seconds.",  # vllm#17469 (resolution)
    ],
)
def test_no_slow_decoding(text):
    assert not decoding_slow(text)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("fix: rm enforce eager from vllm deploy - prefer perf over pod launch time", True),
        ("fix(vllm): stop forcing --enforce-eager on all LLM endpoints", True),  # llm-engine#851
        # tonyd2wild/GLM-5.3-Flash-NVFP4-1M-KV-4x-DGX-Spark#2 (title)
        ("fp8 lane: drop enforce-eager by default, set max-num-batched-tokens", True),
        # OpenCSGs/csghub-server#1253 (title)
        ("Allow disabling vLLM enforce-eager for serverless deployments.", True),
        # vllm#17167 (title): eager mode is what made it start
        (
            "[Bug]: VLLM will hang during multiple node startup, but if ‘--enforce-eager’ "
            "configuration is enabled, it can start normally",
            False,
        ),
        ("add --enforce-eager to vllm passthrough args in pipeline.py", False),  # olmocr#287
        # vLLM's own capture advice (model_runner.py 0.6.3)
        (
            "To run the model in eager mode, set 'enforce_eager=True' or use '--enforce-eager' "
            "in the CLI.",
            False,
        ),
    ],
)
def test_eager_removal_named(text, named):
    assert eager_removal_named(text) is named


def test_the_field_words_slow_titles_are_read_and_no_other_label_but_preemption():
    """Of the 228 field texts, the slow ones are the ones read (about half: the reader wants
    generation named slow, not any performance word), and no OOM, hang or KV title is."""
    rows = [json.loads(line) for line in TITLES.read_text(encoding="utf-8").splitlines()]
    read = [r for r in rows if decoding_slow(r["text"]) or eager_removal_named(r["text"])]
    slow = [r for r in rows if r["label"] == "slow"]
    assert len([r for r in read if r["label"] == "slow"]) >= len(slow) // 2
    assert {r["label"] for r in read} <= {"slow", "preemption"}


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_untrusted_text_never_raises(text):
    assert isinstance(decoding_slow(text), bool)
    assert isinstance(eager_removal_named(text), bool)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["decoding", "token generation", "inference"]))
def test_a_negation_is_not_a_report(subject):
    assert decoding_slow(f"the {subject} is very slow")
    assert not decoding_slow(f"the {subject} is not slow")
    assert not decoding_slow(f"the {subject} was never slow")
