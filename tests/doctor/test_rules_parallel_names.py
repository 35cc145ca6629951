"""Heads that TP does not divide, with no model config: the parameter count in the model's
name decides on which side of the current TP the fix lies (a lower TP must still hold the
weights; issue 12's corpus, family "TP does not divide the heads")."""

from __future__ import annotations

import pytest

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.vllm_cmd import parse_command


def _tp_action(model: str, heads: int, tp: int, gpus: str | None):
    log = (
        f"ValueError: Total number of attention heads ({heads}) must be divisible by "
        f"tensor parallel size ({tp})."
    )
    d = diagnose(
        DoctorInputs(
            command=parse_command(["--model", model, "--tensor-parallel-size", str(tp)]),
            log=log,
            gpu_spec=parse_gpu_spec(gpus) if gpus else None,
        )
    )
    top = d.findings[0]
    assert top.id == "tp-heads-not-divisible"
    return next(a for a in top.actions if a.knob == "tensor_parallel_size")


def test_a_33b_model_on_three_32_gib_gpus_needs_tp_4_not_2():
    # 33e9 x 2 bytes = 61 GiB: two 32 GiB GPUs cannot hold it, so the divisor above wins.
    act = _tp_action("LLaMA-33B", 52, 3, "3xV100:32")
    assert (act.direction, act.value) == ("raise", 4)


def test_a_small_model_keeps_the_nearest_divisor_below():
    # A 7B model fits one GPU: nothing forces the TP up, the nearest divisor (7) is kept.
    act = _tp_action("DeepSeek-R1-Distill-Qwen-7B", 28, 8, "8xA100")
    assert act.direction == "lower" and 28 % act.value == 0


@pytest.mark.parametrize(
    ("name", "floor_at_least"),
    [("Qwen1.5-72B-Chat", 4), ("Mixtral-8x7B-Instruct", 3), ("Llama-2-70B-AWQ", 1)],
)
def test_the_floor_reads_counts_experts_and_4_bit_names(name, floor_at_least):
    from headroom.doctor.context import Context
    from headroom.doctor.rules_parallel import _tp_floor_from_name

    ctx = Context(
        DoctorInputs(
            command=parse_command(["--model", name]), gpu_spec=parse_gpu_spec("8xA100-40GB")
        )
    )
    floor = _tp_floor_from_name(ctx)
    assert floor is not None and floor >= floor_at_least
    if "AWQ" in name:
        assert floor <= 2  # 70e9 x ~0.55 bytes = 36 GiB: one or two 40 GB GPUs, not four


def test_no_name_count_no_floor():
    from headroom.doctor.context import Context
    from headroom.doctor.rules_parallel import _tp_floor_from_name

    ctx = Context(DoctorInputs(command=parse_command(["--model", "/models/chat"])))
    assert _tp_floor_from_name(ctx) is None


def test_the_divide_assertion_names_the_tp_when_the_command_line_does_not():
    # vLLM's divide(): "12 is not divisible by 8" (12 vision heads, TP 8; vllm#24004)
    d = diagnose(DoctorInputs(log="AssertionError: 12 is not divisible by 8"))
    top = d.findings[0]
    assert top.id == "tp-heads-not-divisible"
    act = next(a for a in top.actions if a.knob == "tensor_parallel_size")
    assert act.direction == "lower" and 12 % act.value == 0 and act.value < 8


def test_unknown_kv_heads_prefer_a_power_of_two_tp():
    # 40 heads at TP 6 (Qwen2.5-14B/32B, Qwen1.5-32B: 8 KV heads): TP 5 divides the heads but
    # not the KV heads; the nearest power of two that divides 40 is 4.
    d = diagnose(DoctorInputs(log="ValueError: Total number of attention heads (40) must be "
                                  "divisible by tensor parallel size (6)."))  # fmt: skip
    act = next(a for a in d.findings[0].actions if a.knob == "tensor_parallel_size")
    assert (act.direction, act.value) == ("lower", 4)


def test_a_world_above_the_gpus_without_the_model_keeps_a_divisor_of_the_tp():
    d = diagnose(DoctorInputs(
        log="RuntimeError: please set tensor_parallel_size (8) to less than max local gpu count (6)",
        command=parse_command(["vllm", "serve", "/m", "-tp", "8"]),
    ))  # fmt: skip
    act = next(a for a in d.findings[0].actions if a.knob == "tensor_parallel_size")
    assert (act.direction, act.value) == ("lower", 4)  # not 6: 8's heads need not divide by 6


def test_gpus_unknown_a_tie_goes_up_when_the_lower_tp_would_not_fit_a_24_gib_card():
    # Yi-34B: 56 heads, 8 KV heads; TP 3 lies between 2 and 4. TP 2 puts ~32 GiB of weights
    # on each GPU, TP 4 ~16: with the memory unknown the divisor above is the safe one
    # (lm-sys/FastChat#2771: 'For 24gb gpus, you need 4 of them with vllm').
    act = _tp_action("Yi-34B-Chat", 56, 3, None)
    assert (act.direction, act.value) == ("raise", 4)


def test_gpus_unknown_a_small_model_keeps_the_smaller_tp_on_a_tie():
    # Qwen2.5-7B: 28 heads, 4 KV heads; TP 2 holds ~7 GiB a GPU, which any card does.
    act = _tp_action("Qwen2.5-7B-Instruct", 28, 3, None)
    assert (act.direction, act.value) == ("lower", 2)
