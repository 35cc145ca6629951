"""A start said to fail in words only, with the model's own long length in force
(doctor/rules_words_start.py). Texts are public thread titles: vllm#7154's, and the field
survey's (tests/fixtures/field_words/titles.jsonl, vllm#11765, modelscope/ms-swift#3907)."""

from __future__ import annotations

from headroom.doctor import diagnose
from headroom.doctor.findings import DoctorInputs
from headroom.doctor.rules_words_start import ID, family_length
from headroom.probes.vllm_log import digest_text
from headroom.vllm_cmd import parse_command


def _findings(text: str, command: str | None = None):
    cmd = parse_command(command.split()) if command else None
    return diagnose(DoctorInputs(log=digest_text(text + "\n"), command=cmd)).findings


def test_a_failed_start_with_llama_31_cuts_max_model_len():
    found = _findings("[Bug]: vllm on langchain does not work for llama3.1")
    assert found and found[0].id == ID and found[0].step == 4
    turns = [(a.knob, a.direction, a.value) for a in found[0].actions]
    assert turns == [("max_model_len", "lower", 32768)]
    assert "131,072" in found[0].title


def test_no_finding_without_a_failure_another_cause_or_a_length_given():
    other_stage = (
        "[Misc]: Finetuned llama3.2 vision instruct model is failing during VLLM weight_loader"
    )
    no_failure = "[Bug]: Wrong context length for Qwen 2.5 7B-Instruct?"
    for text in (other_stage, no_failure):
        assert all(f.id != ID for f in _findings(text))
    given = _findings(
        "[Bug]: vllm on langchain does not work for llama3.1",
        "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192",
    )
    assert all(f.id != ID for f in given)


def test_a_family_length_only_when_every_member_agrees():
    assert family_length("llama3.1").tokens == 131072
    assert family_length("Llama 3.2").tokens == 131072
    assert family_length("qwen2.5") is None  # 32,768 and the VL models' 128,000
    assert family_length("glm4") is None  # one member only
    assert family_length("") is None and family_length("llama") is None
