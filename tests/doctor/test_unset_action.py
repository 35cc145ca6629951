"""The "unset" direction: a doctor action that removes a flag (in every spelling) or an
environment variable, in words, in `headroom doctor --json`, in the restart's changes, and
against the other findings' actions (set and unset are opposites, like raise and lower)."""

from __future__ import annotations

import json

import pytest

from headroom.cli.doctor import render_text
from headroom.doctor import Action, Diagnosis, DoctorInputs, Finding, plan_to_changes
from headroom.doctor.context import Context
from headroom.doctor.findings import action_to_json, action_words, diagnosis_to_json
from headroom.doctor.steps import drop_no_ops, resolve_conflicts
from headroom.supervisor.restart import auto_fix_changes
from headroom.tui.widgets.finding_line import action_text
from headroom.vllm_cmd import REMOVE, apply_changes, parse_command

UNSET = Action("enforce_eager", "unset", None, "decoding without CUDA graphs is slow")
SET = Action("enforce_eager", "set", True, "no CUDA-graph pools")


def _finding(fid: str, *actions: Action) -> Finding:
    return Finding(fid, 4, "warning", "slow decoding", ("line",), actions)


def test_an_unset_takes_no_value_and_is_applicable_without_one():
    assert UNSET.applicable and SET.applicable
    assert not Action("max_model_len", "lower", None, "advice").applicable
    with pytest.raises(ValueError, match="takes no value"):
        Action("enforce_eager", "unset", False, "a value makes it a set")
    with pytest.raises(ValueError, match="direction"):
        Action("enforce_eager", "remove", None, "not a direction")


def test_an_unset_in_words_and_in_json():
    assert action_words(UNSET) == "unset enforce_eager (remove the flag)"
    env = Action("VLLM_USE_V1", "unset", None, "V1 back")
    assert action_words(env) == "unset VLLM_USE_V1 (remove the environment variable)"
    assert action_text(UNSET) == action_words(UNSET)
    doc = action_to_json(UNSET)
    assert doc["direction"] == "unset" and doc["value"] is None and doc["applicable"] is True
    assert action_to_json(Action("max_model_len", "lower", None, "advice"))["applicable"] is False
    text = render_text(Diagnosis((_finding("slow", UNSET),), ()))
    assert "* unset enforce_eager (remove): decoding without CUDA graphs is slow" in text
    json.dumps(diagnosis_to_json(Diagnosis((_finding("slow", UNSET),), ())))


def test_an_unset_becomes_a_removal_of_every_spelling():
    assert plan_to_changes(UNSET) == {"enforce_eager": REMOVE}
    for line in (
        "vllm serve m --enforce-eager --port 8000",
        "vllm serve m --enforce-eager=true --port 8000",
        "vllm serve m --enforce_eager --port 8000 --no-enforce-eager",
    ):
        new = apply_changes(parse_command(line), plan_to_changes(UNSET))
        assert not new.has("enforce_eager") and new.get("port") == 8000, line
    chunked = Action("enable_chunked_prefill", "unset", None, "vLLM's default back")
    new = apply_changes(
        parse_command("vllm serve m --no-enable-chunked-prefill"), plan_to_changes(chunked)
    )
    assert not new.has("enable_chunked_prefill")


def test_set_and_unset_of_one_knob_conflict_like_raise_and_lower():
    first, second = (
        _finding("slow", UNSET),
        _finding("oom", SET, Action("max_num_seqs", "lower", 64, "x")),
    )
    out = resolve_conflicts([first, second])
    assert out[0].actions == (UNSET,)
    assert [a.knob for a in out[1].actions] == ["max_num_seqs"]
    assert any("wants it unset" in e for e in out[1].evidence)
    back = resolve_conflicts([_finding("oom", SET), _finding("slow", UNSET)])
    assert back[1].actions == () and any("wants it set" in e for e in back[1].evidence)


def test_an_unset_of_a_flag_the_line_lacks_is_a_no_op():
    ctx = Context(DoctorInputs(command=parse_command(["vllm", "serve", "m"])))
    out = drop_no_ops(_finding("slow", UNSET), ctx)
    assert out.actions == () and any("nothing to unset" in e for e in out.evidence)
    typed = Context(DoctorInputs(command=parse_command(["vllm", "serve", "m", "--enforce-eager"])))
    assert drop_no_ops(_finding("slow", UNSET), typed).actions == (UNSET,)
    # no command line: the log said it, so the advice stays
    assert drop_no_ops(_finding("slow", UNSET), Context(DoctorInputs())).actions == (UNSET,)


def test_auto_fix_applies_an_unset_once():
    diagnosis = Diagnosis((_finding("slow", UNSET),), ())
    eager = parse_command(["vllm", "serve", "m", "--enforce-eager"])
    plan = auto_fix_changes(diagnosis, eager)
    assert plan is not None and plan[0] == {"enforce_eager": REMOVE}
    # already removed (an earlier auto-fix): trying it again would repeat the same launch
    assert auto_fix_changes(diagnosis, parse_command(["vllm", "serve", "m"])) is None
