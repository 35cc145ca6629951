"""A removed flag argparse refused, replaced by the engine arg vLLM named in its place
(headroom/doctor/release_flags.py, through rules_flags): --task becomes --runner by
vllm/config/model.py's _RUNNER_TASKS (0.11.0-0.12.0). The refusal is vllm-project/vllm#35603's
line; argparse's 'unrecognized arguments' wording is the catalog's."""

from __future__ import annotations

import pytest

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.release_flags import replacement_action


def _top(log: str):
    return diagnose(DoctorInputs(log=log)).findings[0]


def test_task_embedding_becomes_the_pooling_runner():
    top = _top("vllm: error: unrecognized arguments: --task embedding")  # vllm#35603
    assert top.id == "unrecognized-arguments"
    assert [(a.knob, a.direction, a.value) for a in top.actions] == [("runner", "set", "pooling")]
    assert any("0.13.0" in line for line in top.evidence)


@pytest.mark.parametrize(
    ("task", "runner"),
    [("generate", "generate"), ("transcription", "generate"), ("embed", "pooling"),
     ("classify", "pooling"), ("score", "pooling"), ("reward", "pooling"), ("draft", "draft")],
)  # fmt: skip
def test_every_task_of_the_last_releases_maps_to_its_runner(task, runner):
    act = replacement_action("--task", task)
    assert act is not None and (act.knob, act.value) == ("runner", runner)


@pytest.mark.parametrize(
    ("flag", "value"), [("--task", "auto"), ("--task", None), ("--swap-space", "4")]
)
def test_no_replacement_where_vllm_named_none(flag, value):
    # "auto" let vLLM choose: nothing to set; --swap-space went with no successor
    assert replacement_action(flag, value) is None
