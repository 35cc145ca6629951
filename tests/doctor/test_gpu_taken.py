"""When what other processes leave on a GPU cannot hold the model (its weights when known,
else the engine's least), no utilization makes room: the doctor says to free the GPU and turns
no knob (rules_memory_gate, rules_oom's foreign case).
Texts are the threads' own (tests/fixtures/incidents, train split)."""

from __future__ import annotations

import json

from support.fixtures import read_fixture

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.actions import MIN_UTILIZATION
from headroom.vllm_cmd import parse_command


def _train_log(name: str) -> str:
    incident = json.loads(read_fixture("incidents", f"{name}.json"))
    assert incident["split"] == "train"
    return incident["log"]


# vllm#36720: 1.33 of 23.98 GiB free at start-up, 0.95 asked for.
GATE_TAKEN = _train_log("vllm-project--vllm--36720")
# alex8791-cyber/cognithor#318: 30.12 of 31.84 GiB free, 0.95 asked for.
GATE_ROOM = _train_log("alex8791-cyber--cognithor--318")


def _top(log: str, argv: list[str] | None = None):
    cmd = parse_command(argv) if argv else None
    return diagnose(DoctorInputs(log=log, command=cmd)).findings[0]


def test_a_gate_only_a_tiny_utilization_passes_turns_no_knob():
    """Before: lower gpu_memory_utilization to 0.3, which asks for 7.19 GiB of the 1.33 free
    and fails the same gate."""
    top = _top(
        GATE_TAKEN, ["vllm", "serve", "some-org/some-model", "--gpu-memory-utilization", "0.95"]
    )
    assert top.id == "free-memory-below-utilization"
    assert not [a for a in top.actions if a.knob]
    assert any("free the GPU" in e and "leave 1.33 GiB" in e for e in top.evidence)


def test_a_gate_with_room_still_lowers_the_utilization_to_what_is_free():
    top = _top(
        GATE_ROOM, ["vllm", "serve", "some-org/some-model", "--gpu-memory-utilization", "0.95"]
    )
    act = top.actions[0]
    assert (act.knob, act.direction) == ("gpu_memory_utilization", "lower")
    assert MIN_UTILIZATION <= act.value <= 30.12 / 31.84


# PyTorch 2.2+'s wording (vllm#2666's numbers), with another process holding most of the GPU
OOM_TAKEN = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB. GPU 0 has a total "
    "capacity of 23.64 GiB of which 950.44 MiB is free. Process 3149588 has 22.00 GiB memory "
    "in use. Including non-PyTorch memory, this process has 0.70 GiB memory in use."
)


def test_an_oom_where_others_leave_too_little_turns_no_knob():
    top = _top(OOM_TAKEN, ["vllm", "serve", "some-org/some-model"])
    assert top.id == "cuda-oom-foreign-process"
    assert not [a for a in top.actions if a.knob]
    assert any("free the GPU" in e for e in top.evidence)


def test_a_known_models_weights_set_what_is_too_little():
    """19.5 GiB held by another job leaves 4.14 GiB: room for a small model (the utilization
    goes down), not for an 8B model's 15 GiB of weights (no knob)."""
    log = OOM_TAKEN.replace("22.00 GiB memory", "19.50 GiB memory").replace(
        "this process has 0.70 GiB", "this process has 3.20 GiB"
    )
    small = _top(log, ["vllm", "serve", "some-org/some-model"])
    assert [(a.knob, a.direction) for a in small.actions][:1] == [
        ("gpu_memory_utilization", "lower")
    ]
    big = _top(log, ["vllm", "serve", "meta-llama/Llama-3.1-8B"])
    assert big.id == "cuda-oom-foreign-process"
    assert not [a for a in big.actions if a.knob]
    assert any("GiB of weights per GPU" in e for e in big.evidence)


def test_an_oom_where_others_leave_room_lowers_the_utilization_to_it():
    roomy = OOM_TAKEN.replace("22.00 GiB memory", "6.50 GiB memory").replace(
        "this process has 0.70 GiB", "this process has 16.20 GiB"
    )
    top = _top(roomy, ["vllm", "serve", "some-org/some-model"])
    assert top.id == "cuda-oom-foreign-process"
    act = top.actions[0]
    assert (act.knob, act.direction) == ("gpu_memory_utilization", "lower")
    assert act.value <= (23.64 - 6.5) / 23.64


def test_a_gate_with_room_below_the_usual_floor_says_the_value_that_passes():
    """5.33 GiB free holds a small model, at 0.2 of the GPU: before, the doctor's floor (0.3,
    7.19 GiB) was proposed, and it fails the same gate."""
    log = GATE_TAKEN.replace("(1.33/23.98 GiB)", "(5.33/23.98 GiB)")
    argv = ["vllm", "serve", "some-org/some-model", "--gpu-memory-utilization", "0.95"]
    act = _top(log, argv).actions[0]
    assert (act.knob, act.direction) == ("gpu_memory_utilization", "lower")
    assert act.value * 23.98 <= 5.33


def test_others_memory_estimated_from_pytorchs_reserved_alone_never_rules_the_knob_out():
    """No process named (a container): what PyTorch has not reserved is only an estimate of
    the others' memory, so the utilization is still offered."""
    log = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 816.00 MiB. GPU 0 has a "
        "total capacity of 61.35 GiB of which 655.29 MiB is free. Of the allocated memory "
        "0.83 GiB is allocated by PyTorch, and 0.53 GiB is reserved by PyTorch but unallocated."
    )
    top = _top(log, ["vllm", "serve", "Qwen/Qwen3-30B-A3B"])
    assert top.id == "cuda-oom-foreign-process"
    assert (top.actions[0].knob, top.actions[0].direction) == ("gpu_memory_utilization", "lower")


# pytorch/pytorch#175666: vLLM's CI, Phi-3.5-MoE (41.9B parameters) at PP 2 on two L4s.
GATE_PHI = _train_log("pytorch--pytorch--175666")
PHI = ["vllm", "serve", "microsoft/Phi-3.5-MoE-instruct", "--pipeline-parallel-size", "2"]


def _gate_top(gpus: str):
    from headroom.doctor.gpu_spec import parse_gpu_spec

    inputs = DoctorInputs(log=GATE_PHI, command=parse_command(PHI), gpu_spec=parse_gpu_spec(gpus))
    return diagnose(inputs).findings[0]


def test_weights_larger_than_the_gpu_are_not_the_other_processes_fault():
    """~39 GiB of weights per GPU at PP 2 on a 22 GiB L4: freeing the GPU would not help
    (before: 'free the GPU'); on two L4s no TP holds them either, so no knob."""
    top = _gate_top("2xL4")
    assert top.title.startswith("The weights do not fit this GPU")
    assert not [a for a in top.actions if a.knob]
    assert not any("free the GPU" in e for e in top.evidence)


def test_weights_larger_than_the_gpu_take_step_ones_tp_when_the_node_has_it():
    top = _gate_top("8xL4")
    turns = [(a.knob, a.direction) for a in top.actions]
    assert turns[:1] == [("tensor_parallel_size", "raise")] and top.step == 1
    assert top.actions[0].value * 2 <= 8


def test_an_oom_whose_weights_exceed_the_gpu_never_says_free_it():
    """Llama-3.1-70B at TP 1 (~131 GiB) on a 23.64 GiB GPU another job shares: the weights
    finding answers (more GPUs); the other job's finding must not claim freeing would do."""
    log = OOM_TAKEN.replace("22.00 GiB memory", "19.50 GiB memory")
    found = diagnose(
        DoctorInputs(log=log, command=parse_command(["vllm", "serve", "meta-llama/Llama-3.1-70B"]))
    ).findings
    assert found[0].id == "cuda-oom-weights"
    assert not any("free the GPU" in e for f in found for e in f.evidence)


def test_an_oom_weights_finding_never_raises_the_utilization():
    """The weights do not fit: step 1 searches more GPUs, and a CUDA OOM never turns the
    utilization up (the table's OOM direction); before, TP 8 came with 'raise to 0.95'."""
    log = OOM_TAKEN.replace("22.00 GiB memory", "19.50 GiB memory")
    argv = ["vllm", "serve", "meta-llama/Llama-3.1-70B"]
    found = diagnose(DoctorInputs(log=log, command=parse_command(argv))).findings
    assert (found[0].actions[0].knob, found[0].actions[0].direction) == (
        "tensor_parallel_size",
        "raise",
    )
    assert not any(
        (a.knob, a.direction) == ("gpu_memory_utilization", "raise")
        for f in found
        for a in f.actions
    )
