"""vLLM said to take too much GPU memory, nothing failed (headroom/doctor/rules_words_usage.py):
the reservation gpu_memory_utilization makes, lowered; the texts are issue titles and sentences
of public threads (named beside each)."""

from __future__ import annotations

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.vllm_cmd import parse_command

# vllm-project/vllm#550
THIRTEEN_B = (
    "when i load 13b llama in HF, GPU usage is about 26G. However, when load 13b llama in vllm, "
    "GPU usage is about 73G."
)


def _diagnose(log: str, command: str | None = None, gpus: str | None = None):
    return diagnose(
        DoctorInputs(
            log=log,
            command=parse_command(command.split()) if command else None,
            gpu_spec=parse_gpu_spec(gpus) if gpus else None,
        )
    )


def _turns(d) -> set[tuple[str, str]]:
    return {(a.knob, a.direction) for f in d.findings for a in f.actions}


def test_the_reservation_is_lowered():
    d = _diagnose("[Usage]: Why 0.5B model requires 21G gpu ram ?")  # vllm-project/vllm#4253
    top = d.findings[0]
    assert top.id == "words-memory-taken" and top.step == 4 and top.severity == "warning"
    assert (top.actions[0].knob, top.actions[0].direction) == ("gpu_memory_utilization", "lower")
    assert ("gpu_memory_utilization", "raise") not in _turns(d)


def test_with_the_model_and_gpu_the_share_they_need():
    d = _diagnose(THIRTEEN_B, "vllm serve meta-llama/Llama-2-13b-hf", "1xA100")
    top = d.findings[0]
    assert top.id == "words-memory-taken"
    act = top.actions[0]
    assert (act.knob, act.direction) == ("gpu_memory_utilization", "lower")
    # 13B in bf16 is about 24 GiB of an 80 GB A100, with one 4,096-token request beside it
    assert act.value is not None and 0.3 < act.value < 0.6


def test_a_share_already_small_turns_the_length_and_eager_mode():
    # vllm-project/vllm#3345: at 0.15 of the GPU the answer was a shorter max_model_len and
    # eager mode, not a still smaller share
    d = _diagnose(
        "how to reduce gpu memory in vllm", "--max-model-len 2046 --gpu-memory-utilization 0.15"
    )
    found = next(f for f in d.findings if f.id == "words-memory-taken")
    assert [(a.knob, a.direction) for a in found.actions] == [
        ("max_model_len", "lower"),
        ("enforce_eager", "set"),
    ]
    assert ("gpu_memory_utilization", "lower") not in {(a.knob, a.direction) for a in found.actions}


def test_a_failure_is_left_to_the_oom_rules():
    # vllm-project/vllm#7495: the title's usage complaint, then the body's OOM with long inputs
    log = ("[Usage]: Is there an option to reduce GPU memory usage？\n"
           "Using google/gemma-2-27b-it model start by vllm with GPU L40x2, but used about 45G "
           "per GPU by default. When input a long token, it will OOM.")  # fmt: skip
    ids = {f.id for f in _diagnose(log).findings}
    assert "words-memory-taken" not in ids and any(i.startswith("cuda-oom") for i in ids)
