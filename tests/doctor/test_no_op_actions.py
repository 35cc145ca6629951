"""An action that would relaunch the configuration that just failed is never proposed: the
restart dialog (tests/supervisor/test_restart_preview.py) would show an empty diff for it."""

from __future__ import annotations

from headroom.doctor import Action, DoctorInputs, Finding
from headroom.doctor.context import Context
from headroom.doctor.steps import drop_no_ops
from headroom.vllm_cmd import parse_command


def _finding(*actions: Action) -> Finding:
    return Finding("cuda-oom-graphs", 4, "error", "Out of GPU memory", ("line",), actions)


def _ctx(*argv: str) -> Context:
    return Context(DoctorInputs(command=parse_command(["vllm", "serve", "m", *argv])))


EAGER = Action("enforce_eager", "set", True, "no CUDA-graph pools")
LOWER = Action("gpu_memory_utilization", "lower", 0.85, "room outside the budget")


def test_a_flag_the_line_already_has_is_not_proposed_again():
    out = drop_no_ops(_finding(EAGER, LOWER), _ctx("--enforce-eager"))
    assert [a.knob for a in out.actions] == ["gpu_memory_utilization"]
    assert any("enforce_eager is already True" in e for e in out.evidence)


def test_the_same_value_is_a_no_op_and_another_value_is_not():
    same = drop_no_ops(_finding(LOWER), _ctx("--gpu-memory-utilization", "0.85"))
    assert same.actions == ()
    other = drop_no_ops(_finding(LOWER), _ctx("--gpu-memory-utilization", "0.9"))
    assert other.actions == (LOWER,)


def test_absent_flags_environment_and_advice_are_kept():
    env = Action("NCCL_P2P_DISABLE", "set", "1", "P2P over PCIe")
    advice = Action("max_model_len", "lower", None, "shorter requests")
    finding = _finding(EAGER, env, advice)
    assert drop_no_ops(finding, _ctx()).actions == finding.actions
    assert drop_no_ops(finding, Context(DoctorInputs())) is finding


def test_a_change_with_a_companion_knob_is_not_a_no_op():
    # lowering TP to what the line has, with PP taking the GPUs, still changes the launch
    tp = Action("tensor_parallel_size", "lower", 2, "heads", also=(("pipeline_parallel_size", 2),))
    out = drop_no_ops(_finding(tp), _ctx("--tensor-parallel-size", "2"))
    assert out.actions == (tp,)
