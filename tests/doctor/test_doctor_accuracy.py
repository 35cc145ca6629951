"""The doctor on real public incidents (tests/fixtures/incidents, issue 12), both splits.

A wrong direction (a knob the thread's resolution turns one way, turned the other way by any
finding) fails the build, and so does exit 2 on an incident whose inputs are readable. The
accuracy floors are a ratchet: the counts last measured by benchmarks/doctor_accuracy.py;
raise them when a change makes the doctor right more often, never lower them to let a
change through.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from support.repo_scripts import load_repo_script

ROOT = Path(__file__).resolve().parents[2]
INCIDENTS = ROOT / "tests" / "fixtures" / "incidents"

# Counts (not shares) so that adding incidents never lowers a floor by itself.
FLOOR = {
    "train": {"right_step": 268, "right_knob": 253},
    "validation": {"right_step": 107, "right_knob": 88},
}


def _bench():
    return load_repo_script("benchmarks/doctor_accuracy.py")


@pytest.fixture(scope="module")
def outcomes():
    bench = _bench()
    return bench, bench.evaluate(bench.load_incidents())


def test_corpus_is_whole_and_the_split_cannot_drift():
    docs = [json.loads(p.read_text()) for p in sorted(INCIDENTS.glob("*.json"))]
    assert len(docs) >= 159
    for doc in docs:
        digest = int(hashlib.sha256(doc["id"].encode()).hexdigest(), 16)
        assert doc["split"] == ("validation" if digest % 3 == 0 else "train"), doc["id"]
        assert doc["log"].strip() and doc["resolution"].strip(), doc["id"]
        assert doc["source"]["url"].startswith("https://"), doc["id"]
        exp = doc["expected"]
        assert exp["step"] in (1, 2, 3, 4, 5, None), doc["id"]
        assert exp["direction"] in ("raise", "lower", "set", None), doc["id"]
        assert (exp["knob"] is None) == (exp["direction"] is None), doc["id"]
    assert {d["split"] for d in docs} == {"train", "validation"}


def test_no_wrong_direction_on_any_split(outcomes):
    _, results = outcomes
    wrong = {o.incident["id"]: o.wrong_direction for o in results if o.wrong_direction}
    assert not wrong, f"knobs turned against the thread's own fix: {wrong}"


def test_no_exit_2_on_readable_input(outcomes):
    _, results = outcomes
    refused = [o.incident["id"] for o in results if o.code == 2]
    assert not refused, f"the doctor refused readable incidents: {refused}"


@pytest.mark.parametrize("split", ["train", "validation"])
def test_accuracy_does_not_fall_below_the_last_measure(outcomes, split):
    bench, results = outcomes
    row = bench.summarize(results)[split]["all"]
    assert row["right_step"] >= FLOOR[split]["right_step"], row
    assert row["right_knob"] >= FLOOR[split]["right_knob"], row


def test_the_scorer_can_fail():
    """A doctor that turns the thread's knob the other way is caught, a right one is not."""
    bench = _bench()
    incident = {
        "id": "x",
        "split": "train",
        "expected": {"step": 4, "knob": "max_model_len", "direction": "lower", "accept": []},
    }
    wrong = {
        "findings": [
            {"id": "f", "step": 4, "actions": [{"knob": "max_model_len", "direction": "raise"}]}
        ]
    }
    right = {
        "findings": [
            {"id": "f", "step": 4, "actions": [{"knob": "max_model_len", "direction": "lower"}]}
        ]
    }
    assert bench.score(incident, 1, wrong).wrong_direction
    assert not bench.score(incident, 1, wrong).right_knob
    ok = bench.score(incident, 1, right)
    assert ok.right_knob and ok.right_step and not ok.wrong_direction
    assert not bench.score(incident, 2, None).right_step


def test_every_incident_is_counted_once_by_what_the_thread_gave(outcomes):
    bench, results = outcomes
    table = bench.summarize(results)
    for split in ("train", "validation"):
        rows = table[split]
        parts = [rows[k] for k in ("pasted", "title") if k in rows]
        for column in ("count", "right_step", "right_knob", "fix_offered"):
            assert sum(r[column] for r in parts) == rows["all"][column], (split, column)
    title = {"log": "Gemma OOM", "source": {"title": "Gemma  OOM"}}
    pasted = {"log": "Gemma OOM\nTraceback ...", "source": {"title": "Gemma OOM"}}
    assert bench.title_only(title) and not bench.title_only(pasted)
