"""An executor backend vLLM does not know (headroom/doctor/rules_executor_backend.py): 'mp' on
one node, 'ray' across nodes. The refusal is vLLM's ParallelConfig text as
vllm-project/vllm-ascend#287 quotes it (0.9.2's wording; 0.11.0 adds 'or its import path')."""

from __future__ import annotations

import pytest

from headroom.doctor import DoctorInputs, diagnose
from headroom.vllm_cmd import parse_command

REFUSED = (
    "ValueError: Unrecognized distributed executor backend tp. Supported values are 'ray', "
    "'mp' 'uni', 'external_launcher' or custom ExecutorBase subclass."
)
# vllm/config/parallel.py 0.11.0's wording of the same check
REFUSED_011 = (
    "ValueError: Unrecognized distributed executor backend multiprocessing. Supported values "
    "are 'ray', 'mp' 'uni', 'external_launcher',  custom ExecutorBase subclass or its import path."
)


def _top(log: str, nodes: int | None = None, command: str | None = None):
    inputs = DoctorInputs(
        log=log, nodes=nodes, command=parse_command(command.split()) if command else None
    )
    return diagnose(inputs).findings[0]


@pytest.mark.parametrize("log", [REFUSED, REFUSED_011])
def test_one_node_gets_the_multiprocessing_backend(log):
    top = _top(log)
    assert top.id == "executor-backend-unknown"
    assert [(a.knob, a.direction, a.value) for a in top.actions] == [
        ("distributed_executor_backend", "set", "mp")
    ]


def test_several_nodes_get_ray():
    top = _top(REFUSED, nodes=2)
    assert [(a.knob, a.value) for a in top.actions] == [("distributed_executor_backend", "ray")]
