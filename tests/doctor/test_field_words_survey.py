"""The field survey of words (scripts/words_survey.py) as a ratchet: the doctor's words readers
must keep reading the field's titles at least as well as when the floors were measured.

The texts are real titles and first sentences of public vLLM threads, none from the incident
corpus (tests/fixtures/field_words/SOURCES.md). The floors are the figures measured on
2026-12-02 after the reader families of that day (before them, on the first 211 texts: recognised
100 of 119, right class 189 of 211, 4 false positives): raise them when the readers read more, never lower them
to make a change pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.repo_scripts import load_repo_script

from headroom.doctor import diagnose
from headroom.doctor.context import Context
from headroom.doctor.findings import DoctorInputs
from headroom.doctor.rules_words_start import ID, failed_start_long_length
from headroom.probes.vllm_log import digest_text

ROOT = Path(__file__).resolve().parents[2]

FLOORS = {"covered": 125, "right": 218}
MAX_FALSE_POSITIVES = 1
NUMBER_FLOORS = {"gpu": 34, "gpu_gib": 16, "gpus": 23, "model_size": 26, "version": 6}


@pytest.fixture(scope="module")
def survey():
    module = load_repo_script("scripts/words_survey.py")
    return module.survey(module.load())


def test_the_survey_holds_at_least_200_texts(survey):
    assert survey["texts"] >= 200 and survey["own_class_texts"] >= 100


@pytest.mark.parametrize("figure", sorted(FLOORS))
def test_recognition_does_not_fall_below_the_floor(survey, figure):
    assert survey[figure] >= FLOORS[figure], (figure, survey[figure], survey["unread"])


def test_false_positives_do_not_grow(survey):
    assert survey["false_positives"] <= MAX_FALSE_POSITIVES, survey["misread"]


@pytest.mark.parametrize("number", sorted(NUMBER_FLOORS))
def test_the_numbers_read_do_not_fall(survey, number):
    assert survey["numbers"][number]["read"] >= NUMBER_FLOORS[number], survey["numbers"]


@pytest.mark.parametrize(
    "text",
    [
        "[Bug]: performance regression caused by frequently preempting and resuming a request",
        "GPU KV cache usage: 100.0%以后就卡住",
    ],
)
def test_preemption_in_words_asks_for_more_kv_budget(text):
    """vllm#25538's and vllm#1206's titles: preempted requests, a KV cache full under load,
    want the KV budget UP, never down."""
    found = diagnose(DoctorInputs(log=digest_text(text + "\n"))).findings
    assert found and found[0].id == "kv-full-preemptions-log"
    turns = {(a.knob, a.direction) for f in found for a in f.actions if a.knob}
    assert ("gpu_memory_utilization", "raise") in turns
    assert ("gpu_memory_utilization", "lower") not in turns


_FRAGMENTS = st.sampled_from(
    ["OOM", "显存炸了", "does not work for llama3.1", "报错", "KV cache usage: 100%", "preempted",
     "卡着不动", "4090x2", "8*80G A100", "tp=4", "weight_loader", "--max-model-len 8192", "\n"]
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(_FRAGMENTS, st.text(max_size=25)), max_size=8).map("".join))
def test_the_doctor_reads_any_words_without_raising(text):
    """The doctor's entry for a log of words (Context's events and facts, the words rules)
    on arbitrary text: never an exception, and no words rule turns the KV budget down."""
    ctx = Context(DoctorInputs(log=digest_text(text + "\n")))
    assert isinstance(ctx.events, list)
    for finding in failed_start_long_length(ctx):
        assert all(a.direction == "lower" for a in finding.actions)
    for finding in diagnose(DoctorInputs(log=digest_text(text + "\n"))).findings:
        if finding.id in {ID, "kv-full-preemptions-log", "no-cache-memory"}:
            turns = {(a.knob, a.direction) for a in finding.actions}
            assert ("gpu_memory_utilization", "lower") not in turns
