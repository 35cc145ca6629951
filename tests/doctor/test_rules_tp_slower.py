"""More GPUs said to be slower (headroom/doctor/rules_words_parallel.py): TP halved when the
weights fit it, silent when TP holds the weights, with no size, or with TP 1. Titles are
public threads' (named beside each)."""

from __future__ import annotations

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.vllm_cmd import parse_command

ID = "words-tp-slower"
SMALL = "[Bug]: When I inference with a 1b model, tp2 latency is greater than tp1"  # vllm#6027
MULTI = "[Question] Why does using multiple gpus lead to slower performance?"  # vllm#689


def _diagnose(log: str, command: str | None = None, gpus: str | None = None):
    return diagnose(
        DoctorInputs(
            log=log,
            command=parse_command(command.split()) if command else None,
            gpu_spec=parse_gpu_spec(gpus) if gpus else None,
        )
    )


def _found(d):
    return next((f for f in d.findings if f.id == ID), None)


def test_a_small_model_on_two_gpus_goes_to_one():
    top = _diagnose(SMALL, "--tensor-parallel-size 2", "2xL40:48").findings[0]
    assert top.id == ID and top.step == 2
    assert [(a.knob, a.direction, a.value) for a in top.actions] == [
        ("tensor_parallel_size", "lower", 1)
    ]


def test_the_model_named_on_the_command_is_sized():
    # vllm#689 ran mosaicml/mpt-7b-instruct at TP 2; a 7B in bf16 fits one 80 GB A100
    d = _diagnose(MULTI, "vllm serve meta-llama/Llama-2-7b-hf --tensor-parallel-size 2", "2xA100")
    assert [(a.knob, a.value) for a in _found(d).actions] == [("tensor_parallel_size", 1)]


def test_silent_when_tp_holds_the_weights():
    # a 70B in bf16 (about 130 GiB) needs both 80 GB GPUs: TP is there for memory
    d = _diagnose(MULTI, "vllm serve meta-llama/Llama-2-70b-hf --tensor-parallel-size 2", "2xA100")
    assert _found(d) is None


def test_silent_without_a_size_or_a_tp():
    assert _found(_diagnose(MULTI, "--tensor-parallel-size 2")) is None  # nothing sizes it
    assert _found(_diagnose(SMALL, "--tensor-parallel-size 1")) is None
