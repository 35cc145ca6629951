"""Step 3, TP inside a node and PP across nodes: TP larger than one node's GPUs is found from
--gpus with --nodes, the command's --nnodes / data-parallel split, or the log's own
"non-default args" line, and the fix is TP = GPUs per node with PP = nodes.

The log lines are what the simulator printed for the `tp-across-nodes` scenario (Qwen2.5-72B,
TP 8 over two nodes of four A100 40GB), which are vLLM's own texts (api_utils.py,
gpu_model_runner.py, gpu_worker.py, kv_cache_utils.py)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.vllm_cmd import parse_command

MODEL = "Qwen/Qwen2.5-72B-Instruct"
SIM_LOG_TP8_NNODES2 = "\n".join(
    [
        "(APIServer pid=7965) INFO 11-29 13:59:25 [api_utils.py:286] non-default args: "
        "{'port': 18412, 'model': 'Qwen/Qwen2.5-72B-Instruct', 'max_model_len': 8192, "
        "'tensor_parallel_size': 8, 'nnodes': 2}",
        "(APIServer pid=7965) INFO 11-29 13:59:25 [model.py:2152] Using max model len 8192",
        "(Worker_TP0 pid=7965) INFO 11-29 13:59:26 [gpu_model_runner.py:5088] Model loading "
        "took 16.93 GiB memory and 7.670626 seconds",
        "(Worker_TP0 pid=7965) INFO 11-29 13:59:26 [gpu_worker.py:772] Available KV cache "
        "memory: 17.25 GiB",
        "(EngineCore pid=7965) INFO 11-29 13:59:26 [kv_cache_utils.py:2327] GPU KV cache size: "
        "452,112 tokens, Maximum concurrency for 8,192 tokens per request: 55.19x",
        "(APIServer pid=7965) INFO 11-29 13:59:26 [entry.py:140] Starting vLLM server on "
        "http://0.0.0.0:18412",
    ]
)
# The same start with the fix applied: TP 4 x PP 2 over the two nodes.
SIM_LOG_TP4_PP2 = SIM_LOG_TP8_NNODES2.replace(
    "'tensor_parallel_size': 8, 'nnodes': 2}",
    "'tensor_parallel_size': 4, 'pipeline_parallel_size': 2, 'nnodes': 2}",
)


@dataclass(frozen=True)
class Row:
    name: str
    argv: str | None  # flags after `vllm serve MODEL`; None: no command line, the log only
    log: str | None
    gpus: str | None
    nodes: int
    expected: tuple[int, int] | None  # (TP, PP) the fix sets; None: no finding


ROWS = [
    Row("gpus-and-nodes", "-tp 8 --nnodes 2", SIM_LOG_TP8_NNODES2, "4xA100:40", 2, (4, 2)),
    Row("gpus-and-nnodes-flag", "-tp 8 --nnodes 2", None, "4xA100:40", 1, (4, 2)),
    Row("nnodes-flag-alone", "--tensor-parallel-size 8 --nnodes 2", None, None, 1, (4, 2)),
    Row("log-alone", None, SIM_LOG_TP8_NNODES2, None, 1, (4, 2)),
    Row("log-with-gpus", None, SIM_LOG_TP8_NNODES2, "4xA100:40", 1, (4, 2)),
    Row("nodes-option-and-gpus", "-tp 8", None, "4xA100:40", 2, (4, 2)),
    Row("four-nodes-of-two", "-tp 8 --nnodes 4", None, "2xA100:40", 4, (2, 4)),
    Row(
        "data-parallel-split",
        "-tp 8 -dp 2 --data-parallel-size-local 1",
        None,
        "4xA100:40",
        1,
        (4, 2),
    ),  # fmt: skip
    # Already right, or nothing says there is a second node: no finding.
    Row("fixed-layout", "-tp 4 -pp 2 --nnodes 2", SIM_LOG_TP4_PP2, "4xA100:40", 2, None),
    Row("fixed-layout-log-alone", None, SIM_LOG_TP4_PP2, None, 1, None),
    Row("one-node-of-eight", "-tp 8", None, "8xA100:40", 1, None),
    Row("tp-fits-one-node", "-tp 4 --nnodes 2", None, "4xA100:40", 2, None),
]


def _diagnose(row: Row):
    command = parse_command(["vllm", "serve", MODEL, *row.argv.split()]) if row.argv else None
    return diagnose(
        DoctorInputs(
            command=command,
            log=row.log,
            gpu_spec=parse_gpu_spec(row.gpus) if row.gpus else None,
            nodes=row.nodes,
        )
    )


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_tp_across_nodes(row: Row):
    diagnosis = _diagnose(row)
    found = [f for f in diagnosis.findings if f.id == "tp-across-nodes"]
    step3 = diagnosis.steps[2]
    if row.expected is None:
        assert not found, found
        assert step3.status != "warn", step3
        return
    assert len(found) == 1, [f.id for f in diagnosis.findings]
    finding = found[0]
    tp, pp = row.expected
    assert finding.step == 3 and finding.severity == "warning"
    first = finding.actions[0]
    assert (first.knob, first.direction, first.value) == ("tensor_parallel_size", "lower", tp)
    assert dict(first.also) == {"pipeline_parallel_size": pp}
    assert [(a.knob, a.value) for a in finding.actions[1:]] == [("pipeline_parallel_size", pp)]
    # The arithmetic: TP > GPUs per node, and the new layout uses the same number of GPUs.
    assert f"TP 8 > {tp} GPUs per node" in finding.evidence[0]
    assert f"TP {tp} x PP {pp} = {tp * pp} GPUs" in finding.evidence[1]
    assert step3.status == "warn", step3
    # No other finding turns TP back up.
    assert not [
        a
        for f in diagnosis.findings
        for a in f.actions
        if a.knob == "tensor_parallel_size" and a.direction == "raise"
    ]


def test_the_log_line_is_quoted_as_evidence():
    finding = next(
        f
        for f in _diagnose(ROWS[0]).findings
        if f.id == "tp-across-nodes"  # the row with the simulator's log
    )
    assert any("non-default args:" in e and "'nnodes': 2" in e for e in finding.evidence)
