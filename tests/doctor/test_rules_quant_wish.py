"""A quantized version asked for in words (headroom/doctor/rules_words_parallel.py): step 1's
quantization, never when the model or the command is quantized already or beside an error
line. Texts are public threads' (named beside each)."""

from __future__ import annotations

from headroom.doctor import DoctorInputs, diagnose
from headroom.vllm_cmd import parse_command

ID = "words-quantized-wanted"
ASK = "WOuld be nice to have AWQ quantization, so we can run on vLLM with a lower end GPU."  # rubra#119


def _diagnose(log: str, command: str | None = None):
    cmd = parse_command(command.split()) if command else None
    return diagnose(DoctorInputs(log=log, command=cmd))


def _found(d):
    return next((f for f in d.findings if f.id == ID), None)


def test_the_ask_turns_quantization():
    top = _diagnose(ASK).findings[0]
    assert top.id == ID and top.step == 1
    assert [(a.knob, a.direction) for a in top.actions] == [("quantization", "set")]


def test_silent_when_already_quantized():
    assert _found(_diagnose(ASK, "vllm serve m --quantization awq")) is None
    # a checkpoint whose name says it is quantized
    assert _found(_diagnose(ASK, "vllm serve rubra-ai/Meta-Llama-3-70B-Instruct-AWQ")) is None


def test_silent_beside_an_error_line():
    # vllm#1769's refusal (the catalog's quantization_method_unknown example)
    log = (
        ASK
        + "\nValueError: Unknown quantization method: gptq. Must be one of ['awq', 'squeezellm']."
    )
    assert _found(_diagnose(log)) is None
