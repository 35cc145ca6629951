"""A CUDA OOM that nothing places, decided by the memory account (oom_weights.
no_kv_room): weights + activation peak + overhead + one max_model_len
request's KV against GPU memory x utilization. The OOM text is PyTorch's own message with a
24 GB RTX 3090's numbers, as a train incident pasted it (noonghunna/club-3090#58: "GPU 0 has
a total capacity of 23.56 GiB of which 56.88 MiB is free"); the model is Llama-3.1-8B from
the built-in table (8.03B parameters, 14.96 GiB in bf16, 128 KiB of KV per token, 131,072
positions)."""

from __future__ import annotations

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.vllm_cmd import parse_command

OOM_3090 = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 50.00 MiB. GPU 0 has a "
    "total capacity of 23.56 GiB of which 56.88 MiB is free"
)
SERVE = ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct"]


def _top(extra: list[str], gpus: str | None = None):
    spec = parse_gpu_spec(gpus) if gpus else None
    d = diagnose(DoctorInputs(log=OOM_3090, command=parse_command(SERVE + extra), gpu_spec=spec))
    assert d.findings
    return d.findings[0]


def _turns(finding) -> list[tuple[str, str]]:
    return [(a.knob, a.direction) for a in finding.actions]


def test_room_for_a_short_context_keeps_the_tables_oom_order():
    """4,096 tokens of KV (0.5 GiB) fit at a lower utilization: the table's order stands."""
    top = _top(["--max-model-len", "4096"])
    assert top.id == "cuda-oom-unknown"
    assert _turns(top)[0] == ("gpu_memory_utilization", "lower")


def test_no_room_for_one_request_searches_step_one_instead_of_lowering():
    """The model's own 131,072 positions want 16 GiB of KV beside 14.96 GiB of weights on a
    23.56 GiB GPU: not even the current budget holds one request, so a lower utilization
    would only trade the OOM for vLLM's KV-cache error. The search answers (a shorter
    context here, the only knob that holds it on one GPU)."""
    top = _top([], "1xRTX3090:24")
    assert top.id == "cuda-oom-no-kv-room"
    assert "leave no room for a KV cache" in top.title
    assert ("max_model_len", "lower") in _turns(top)
    assert not any(a.knob == "gpu_memory_utilization" for a in top.actions)
    assert any("less than one 131,072-token request" in e for e in top.evidence)
    assert top.step == 4 and 16384 < top.actions[0].value < 131072  # the search's fit


def test_the_oom_messages_own_capacity_sizes_the_gpu_without_gpus():
    """No --gpus: the message's "total capacity of 23.56 GiB" is the GPU the account uses."""
    top = _top([])
    assert top.id == "cuda-oom-no-kv-room"
    assert not any(a.knob == "gpu_memory_utilization" for a in top.actions)


def test_room_at_the_current_utilization_keeps_the_oom_finding():
    """44,496 tokens fit the 0.9 budget (5.43 GiB of KV): the account does not rule the bare
    OOM; a lower utilization that would not hold 40,000 tokens is dropped downstream
    (steps.drop_infeasible), the OOM's other knobs stay, and nothing is raised."""
    top = _top(["--max-model-len", "40000"], "1xRTX3090:24")
    assert top.id == "cuda-oom-unknown"
    turns = _turns(top)
    assert turns[0] == ("enforce_eager", "set")
    assert not any(knob == "gpu_memory_utilization" for knob, _ in turns)


def test_a_sliding_window_model_is_not_ruled_by_the_account():
    """gpt-oss-120b: the account counts every layer's KV, vLLM keeps a 128-token window for
    half of them; one request's need would be overstated, so the table's order stands
    (the same OOM text with an 80 GiB H100's capacity)."""
    oom = OOM_3090.replace("23.56 GiB", "79.11 GiB")
    d = diagnose(
        DoctorInputs(log=oom, command=parse_command(["vllm", "serve", "openai/gpt-oss-120b"]))
    )
    assert d.findings[0].id == "cuda-oom-unknown"
