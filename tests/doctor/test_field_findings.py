"""What the doctor says for the field survey's excerpts (scripts/log_survey.py --gaps over
tests/fixtures/field_logs/excerpts.jsonl, see SOURCES.md there): a ratchet on how many get a
finding, and the findings for the families that got none (a request longer than
max_model_len; the shm broadcast wait). Every log text fed here is an excerpt of that file,
taken by its id (the thread is in its id and its "url"), or vLLM's own format string at a
release (said where) with numbers put in."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.repo_scripts import load_repo_script

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.model_table import find_model
from headroom.probes.vllm_log import digest_text
from headroom.vllm_cmd import parse_command

survey = load_repo_script("scripts/log_survey.py")

EXCERPTS = {e["id"]: e for e in survey.load()}

# Measured when --gaps was added (153 excerpts): a finding for 136 (88.9 %) before the rules
# of rules_catalog_requests.py and shm_broadcast_wait (rules_catalog_comms.py), 148 (96.7 %)
# after. A rate: an excerpt whose thread becomes an incident leaves the survey. Raise it as
# the doctor answers more.
FINDING_FLOOR = 0.96

_REQUEST_TOO_LONG = [
    "xorbitsai--inference--3785",  # The decoder prompt (length 17772) ... of 16384
    "evolvinglmms-lab--lmms-eval--711",  # (length 337896) ... of 128000
    "unslothai--unsloth--2666",  # (length 322) ... of 256
    "google--tunix--222",  # (length 44) ... of 16
    "eleutherai--lm-evaluation-harness--2880",  # Prompt length of 2048 ... of 2048 (0.7.3)
    "hiyouga--llamafactory--7723",  # Prompt length of 5016 ... of 4096
    "vllm-project--vllm--20409",  # This model's maximum context length is 16384 tokens
    "vllm-project--vllm--4667",  # max_tokens must be at least 1, got -344.
]
_SHM_WAIT = [
    "vllm-project--vllm-ascend--3717",
    "vllm-project--vllm--37250",
    "gpustack--gpustack--3888",
    "vllm-project--vllm--27313",
]


def _text(excerpt_id: str) -> str:
    if excerpt_id not in EXCERPTS:  # its thread became an incident since: not fed here
        pytest.skip(f"{excerpt_id} is an incident's thread now")
    return EXCERPTS[excerpt_id]["text"]


def _findings(text: str, command: str | None = None, model=None):
    cmd = parse_command(command.split()) if command else None
    return diagnose(DoctorInputs(command=cmd, log=digest_text(text), model=model)).findings


def test_the_doctor_finds_something_for_the_survey():
    readings = survey.survey(list(EXCERPTS.values()), doctor=True)
    figures = survey.figures(readings)
    assert figures["finding_rate"] >= FINDING_FLOOR, survey.render_gaps(readings)
    assert not survey.gaps(readings)["no finding"], survey.render_gaps(readings)


@pytest.mark.parametrize("excerpt_id", _REQUEST_TOO_LONG)
def test_a_request_longer_than_max_model_len_is_said_without_a_knob_from_the_log_alone(
    excerpt_id,
):
    """From the log alone the doctor cannot tell max_model_len below the model's context
    from the model's own: the client's request, no engine knob."""
    top = _findings(_text(excerpt_id))[0]
    assert top.id == "request-above-max-model-len"
    assert top.actions == ()
    assert "client" in " ".join(top.evidence)


def test_a_small_max_model_len_on_the_command_line_is_raised_to_the_prompt():
    """unslothai/unsloth#2666: 322 tokens against --max-model-len 256 (vLLM: "Make sure that
    `max_model_len` is no smaller than the number of text tokens"): raise it, never lower."""
    text = _text("unslothai--unsloth--2666")
    model = find_model("Qwen/Qwen2.5-7B-Instruct")  # 32768 positions: 322 fits
    top = next(
        f
        for f in _findings(text, "vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 256", model)
        if f.id == "request-above-max-model-len"
    )
    assert [(a.knob, a.direction, a.value) for a in top.actions] == [
        ("max_model_len", "raise", 322)
    ]


def test_a_prompt_longer_than_the_model_itself_turns_no_knob():
    """EvolvingLMMs-Lab/lmms-eval#711: 337,896 tokens against --max-model-len 128000; a model
    of 131,072 positions (Llama 3.1) holds no such prompt: no max_model_len is the answer."""
    text = _text("evolvinglmms-lab--lmms-eval--711")
    model = find_model("meta-llama/Llama-3.1-8B-Instruct")
    command = "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 128000"
    findings = _findings(text, command, model)
    top = next(f for f in findings if f.id == "request-above-max-model-len")
    assert top.actions == ()


@pytest.mark.parametrize("excerpt_id", _SHM_WAIT)
def test_the_shm_broadcast_wait_is_said_as_no_setting(excerpt_id):
    findings = _findings(_text(excerpt_id))
    assert findings[0].id == "shm-broadcast-wait"
    assert not any(f.actions for f in findings), [f.id for f in findings]


# vllm/v1/engine/processor.py (0.10.2 _validate_model_input): f"The {prompt_type} prompt
# (length {len(prompt_ids)}) is longer than the maximum model length of {max_prompt_len}. "
# "Make sure that `max_model_len` is no smaller than the number of text tokens."
_V1_FORMAT = (
    "ValueError: The decoder prompt (length {tokens}) is longer than the maximum model length "
    "of {limit}. Make sure that `max_model_len` is no smaller than the number of text tokens."
)


@settings(max_examples=60, deadline=None)
@given(limit=st.integers(16, 200_000), over=st.integers(1, 300_000))
def test_a_request_too_long_never_lowers_max_model_len(limit, over):
    """Property: whatever the lengths, the finding raises max_model_len to the prompt (when
    the command set it to the limit and the model holds the prompt) or turns no knob."""
    tokens = limit + over
    text = _V1_FORMAT.format(tokens=tokens, limit=limit)
    model = find_model("meta-llama/Llama-3.1-8B-Instruct")  # 131072 positions
    command = f"vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len {limit}"
    findings = _findings(text, command, model)
    top = next(f for f in findings if f.id == "request-above-max-model-len")
    acts = [(a.knob, a.direction, a.value) for a in top.actions]
    assert acts == ([("max_model_len", "raise", tokens)] if tokens <= 131072 else [])


@pytest.mark.parametrize(
    "excerpt_id",
    ["qwenlm--qwen3-vl--831", "vllm-project--vllm--5675", "vllm-project--vllm--11671"],
)
def test_a_quantized_split_with_no_tp_known_lowers_the_tp_as_vllm_says(excerpt_id):
    """AWQ/GPTQ's 'The input/output size is not aligned with the quantized weight shape. This
    can be caused by too large tensor parallel size.' (awq.py/gptq.py 0.2.7-0.25.1) from the
    log alone: a smaller TP, never a larger one; no value (the command line would say)."""
    top = next(f for f in _findings(_text(excerpt_id)) if f.id == "quantized-tp-split")
    assert [(a.knob, a.direction, a.value) for a in top.actions] == [
        ("tensor_parallel_size", "lower", None)
    ]


def test_a_quantized_split_at_tp_one_lowers_nothing():
    """The same text with a command line at TP 1: no TP below it; the shape itself."""
    findings = _findings(_text("vllm-project--vllm--5675"), "vllm serve m")
    top = next(f for f in findings if f.id == "quantized-tp-split")
    assert not any(a.knob == "tensor_parallel_size" for a in top.actions)


def test_a_moe_block_split_with_no_tp_known_sets_expert_parallel():
    """vllm-project/vllm#17569: 'The output_size of gate's and up's weight = 192 is not
    divisible by weight quantization block_n = 128.' (fp8.py MoE, 0.6.6-0.25.1): each expert's
    width is cut by TP; --enable-expert-parallel (0.8+) keeps the experts whole."""
    top = next(
        f for f in _findings(_text("vllm-project--vllm--17569")) if f.id == "quantized-tp-split"
    )
    assert [(a.knob, a.direction, a.value) for a in top.actions][:1] == [
        ("enable_expert_parallel", "set", True)
    ]
    assert not any(a.knob == "tensor_parallel_size" and a.direction == "raise" for a in top.actions)


def test_nvml_missing_this_process_in_a_container_is_no_other_process():
    """rhymes-ai/Aria#24: 'this process has 0 bytes memory in use. Of the allocated memory
    19.02 GiB is allocated by PyTorch' (PyTorch's OOM message reads its own memory from NVML
    by pid, which a container's pid namespace misses): 20.34 GiB are PyTorch's own, not
    another process's; the OOM wants less memory, never a GPU to free."""
    findings = _findings(_text("rhymes-ai--aria--24"))
    assert not any(f.id == "cuda-oom-foreign-process" for f in findings)
    top = findings[0]
    assert top.id.startswith("cuda-oom") and top.actions
    assert all(a.direction != "raise" for a in top.actions if a.knob == "gpu_memory_utilization")
    assert any("PyTorch in this process holds 20.34 GiB" in e for e in top.evidence)
