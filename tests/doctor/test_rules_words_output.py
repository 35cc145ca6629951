"""The output said to be NaN, "!!!!" or empty (headroom/doctor/rules_words_output.py): the
dtype, bfloat16 or (no bfloat16 on the GPU) float32. The texts are issue titles of public
threads (named beside each)."""

from __future__ import annotations

import pytest

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.vllm_cmd import parse_command

OLMO_NAN = "NaN when running OLMo-core v2 trained models via VLLM"  # allenai/olmo-cookbook#60
GLM_BANGS = "[Bug]: GLM-4-32B-0414-FP8 output !!!!! error (tensor is nan)"  # vllm#17154
GEMMA_EMPTY = "[Bug]: Gemma-3 models output empty text."  # vllm-project/vllm#14817


def _diagnose(log: str, command: str | None = None, gpus: str | None = None):
    return diagnose(
        DoctorInputs(
            log=log,
            command=parse_command(command.split()) if command else None,
            gpu_spec=parse_gpu_spec(gpus) if gpus else None,
        )
    )


@pytest.mark.parametrize(
    ("log", "command", "gpus", "value"),
    [
        (OLMO_NAN, None, None, "bfloat16"),
        (GLM_BANGS, "--dtype half", "1xA100", "bfloat16"),
        (GEMMA_EMPTY, None, None, "bfloat16"),
        (OLMO_NAN, None, "1xV100", "float32"),  # a V100 has no bfloat16
    ],
)
def test_broken_numbers_set_a_wider_dtype(log, command, gpus, value):
    top = _diagnose(log, command, gpus).findings[0]
    assert top.id == "words-fp16-numerics" and top.step is None
    assert [(a.knob, a.direction, a.value) for a in top.actions] == [("dtype", "set", value)]


@pytest.mark.parametrize(
    ("log", "command"),
    [
        (GLM_BANGS, "--dtype bfloat16"),  # already bfloat16: float16 is not what broke it
        (OLMO_NAN, "--dtype float32"),
        ("Generate nothing from VLLM output", None),  # vllm-project/vllm#1185: empty, alone
    ],
)
def test_no_dtype_when_it_is_not_float16_or_the_report_is_weak(log, command):
    assert "words-fp16-numerics" not in {f.id for f in _diagnose(log, command).findings}


@pytest.mark.parametrize(
    ("log", "command", "value"),
    [
        # vllm-project/vllm#10081: the backend in force is not said: xgrammar
        (
            "[Bug]:Structured outputs inference often took a very long time,and eventually causing "
            "a timeout and vLLM engine crushing.",
            None,
            "xgrammar",
        ),  # fmt: skip
        # vllm-project/vllm#12005: the words name outlines
        ("[Bug]: Very slow guided decoding with Outlines backend since v0.6.5", None, "xgrammar"),
        # vllm-project/vllm#12122: xgrammar degraded; the other backend
        ("[Bug]: XGrammar-based CFG decoding degraded after 0.6.5", None, "guidance"),
        # the command line's backend wins over the words
        (
            "[Performance]: guided generation is very slow in offline mode",
            "--guided-decoding-backend xgrammar",
            "guidance",
        ),  # fmt: skip
    ],
)
def test_slow_structured_output_switches_the_backend(log, command, value):
    top = _diagnose(log, command).findings[0]
    assert top.id == "words-structured-output-slow"
    assert [(a.knob, a.direction, a.value) for a in top.actions] == [
        ("guided_decoding_backend", "set", value)
    ]
