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
    "train": {"right_step": 331, "right_knob": 314, "right_both": 310},
    "validation": {"right_step": 125, "right_knob": 105, "right_both": 103},
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
        assert exp["direction"] in ("raise", "lower", "set", "unset", None), doc["id"]
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
    assert row["right_both"] >= FLOOR[split]["right_both"], row


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


def _incident(knob, direction, accept=(), step=4):
    """A training incident with a title-only log ("OOM"), as summarize() needs one."""
    return {
        "id": "x",
        "split": "train",
        "log": "OOM",
        "source": {"title": "OOM"},
        "expected": {"step": step, "knob": knob, "direction": direction, "accept": list(accept)},
    }


def _doc(*turns):
    actions = [{"knob": k, "direction": d} for k, d in turns]
    return {"findings": [{"id": "f", "step": 4, "actions": actions}]}


@pytest.mark.parametrize(
    "knob", ["enforce_eager", "kv_cache_dtype", "disable_custom_all_reduce", "VLLM_USE_V1"]
)
def test_set_and_unset_are_opposites(knob):
    """A thread that drops a flag (or an environment variable) is contradicted by a doctor
    that sets it anywhere, and a thread that sets one by a doctor that drops it."""
    bench = _bench()
    dropped = _incident(knob, "unset")
    assert bench.score(dropped, 1, _doc(("max_num_seqs", "lower"), (knob, "set"))).wrong_direction
    ok = bench.score(dropped, 1, _doc((knob, "unset")))
    assert ok.right_knob and not ok.wrong_direction
    turned_on = _incident(knob, "set")
    wrong = bench.score(turned_on, 1, _doc((knob, "unset")))
    assert wrong.wrong_direction and not wrong.right_knob
    assert not bench.score(turned_on, 1, _doc((knob, "set"))).wrong_direction


def test_a_set_only_knob_raised_or_lowered_is_still_set_and_unset_its_opposite():
    bench = _bench()
    for direction in ("raise", "lower", "set"):
        right = bench.score(
            _incident("enforce_eager", "set"), 1, _doc(("enforce_eager", direction))
        )
        assert right.right_knob and not right.wrong_direction
        wrong = bench.score(
            _incident("enforce_eager", "unset"), 1, _doc(("enforce_eager", direction))
        )
        assert wrong.wrong_direction and not wrong.right_knob


def test_a_thread_that_accepts_both_ways_is_contradicted_by_neither():
    bench = _bench()
    both = _incident("gpu_memory_utilization", "raise", [["gpu_memory_utilization", "lower"]])
    doc = _doc(("gpu_memory_utilization", "lower"), ("gpu_memory_utilization", "raise"))
    assert not bench.score(both, 1, doc).wrong_direction
    flag = _incident("enforce_eager", "unset", [["enforce_eager", "set"]])
    assert not bench.score(flag, 1, _doc(("enforce_eager", "set"))).wrong_direction
    # an unrelated knob's set/unset is no contradiction of the thread's knob
    other = bench.score(_incident("enforce_eager", "unset"), 1, _doc(("VLLM_USE_V1", "set")))
    assert not other.wrong_direction


def test_step_and_knob_counts_only_both_at_once():
    """The thread's knob under another step is right knob, not right step and knob."""
    bench = _bench()
    incident = _incident("tensor_parallel_size", "raise", step=1)

    def top(step):
        action = {"knob": "tensor_parallel_size", "direction": "raise"}
        return {"findings": [{"id": "f", "step": step, "actions": [action]}]}

    other_step, same_step = bench.score(incident, 1, top(2)), bench.score(incident, 1, top(1))
    assert other_step.right_knob and not other_step.right_step
    row = bench.summarize([other_step, same_step])["train"]["all"]
    assert (row["right_knob"], row["right_step"], row["right_both"]) == (2, 1, 1)


def test_every_incident_is_counted_once_by_what_the_thread_gave(outcomes):
    bench, results = outcomes
    table = bench.summarize(results)
    for split in ("train", "validation"):
        rows = table[split]
        parts = [rows[k] for k in ("pasted", "title") if k in rows]
        for column in ("count", "right_step", "right_knob", "right_both", "fix_offered"):
            assert sum(r[column] for r in parts) == rows["all"][column], (split, column)
    title = {"log": "Gemma OOM", "source": {"title": "Gemma  OOM"}}
    pasted = {"log": "Gemma OOM\nTraceback ...", "source": {"title": "Gemma OOM"}}
    assert bench.title_only(title) and not bench.title_only(pasted)


def test_a_split_that_was_not_run_prints_no_header():
    """`--split train` prints the training table alone, not an empty validation heading."""
    bench = _bench()
    incident = _incident(None, None, step=None)
    text = bench.render(bench.summarize([bench.score(incident, 1, {"findings": []})]))
    assert text.startswith("train") and "validation" not in text
