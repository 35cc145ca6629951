"""TP across nodes as a note (headroom/doctor/tp_nodes_note.py): beside a failure of its own,
or on nodes of one GPU each, the layout is a speed note without a knob (keeping TP inside a
node does not cure a start that fails for another reason; with one GPU per node it is a pure
pipeline); a failure about the links between nodes keeps the layout's fix.

Log lines: vllm-project/vllm#7662 (GGUF with TP 8 "across 2 nodes of 4 gpus", as its reporter
wrote), and tests/fixtures/nccl/vllm-pynccl-unhandled-system-error.log (vllm-project/vllm#7800)."""

from __future__ import annotations

from pathlib import Path

from headroom.doctor import DoctorInputs, diagnose
from headroom.vllm_cmd import parse_command

GGUF_TP = (
    "(RayWorkerWrapper pid=11033) ERROR 08-19 16:07:35 worker_base.py:438] ValueError: GGUF "
    "quantization hasn't supported tensor parallelism yet. [repeated 2x across cluster]"
)
NCCL_LOG = (
    Path(__file__).parents[1] / "fixtures" / "nccl" / "vllm-pynccl-unhandled-system-error.log"
)


def _across_nodes(log: str):
    d = diagnose(
        DoctorInputs(log=log, command=parse_command(["--tensor-parallel-size", "8"]), nodes=2)
    )
    return d, [f for f in d.findings if f.id == "tp-across-nodes"]


def test_a_failure_of_its_own_leaves_the_layout_a_note():
    d, found = _across_nodes(GGUF_TP)
    assert len(found) == 1
    note = found[0]
    assert note.severity == "info" and note.actions == ()
    assert any("GGUF quantization hasn't supported" in e for e in note.evidence)
    assert not any(a.knob == "tensor_parallel_size" for f in d.findings for a in f.actions)


def test_without_a_failure_the_layout_is_fixed():
    _, found = _across_nodes("")
    assert found and found[0].severity == "warning"
    assert (found[0].actions[0].knob, found[0].actions[0].direction) == (
        "tensor_parallel_size", "lower")  # fmt: skip


def test_a_failure_of_the_links_keeps_the_fix():
    _, found = _across_nodes(NCCL_LOG.read_text())
    assert found and found[0].actions
    assert found[0].actions[0].knob == "tensor_parallel_size"


def test_one_gpu_per_node_is_a_note():
    # tonyd2wild/GLM-5.3-Flash-NVFP4-1M-KV-4x-DGX-Spark#5: TP 4 over four DGX Spark (one GB10
    # each); the field's layout for single-GPU nodes over RoCE is TP across them
    d = diagnose(
        DoctorInputs(command=parse_command(["--tensor-parallel-size", "4"]), nodes=4, gpu_count=1)
    )
    found = [f for f in d.findings if f.id == "tp-across-nodes"]
    assert len(found) == 1 and found[0].severity == "info" and found[0].actions == ()
    assert any("one GPU per node" in e for e in found[0].evidence)
