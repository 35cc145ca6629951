"""A start that died with --kv-cache-memory-bytes pinned and no root-cause line
(headroom/doctor/rules_kv_pin.py). Texts are vLLM's own: "Engine core initialization failed.
See root cause above. Failed core proc(s): {}" (vllm/v1/engine/utils.py 0.9.1-0.33.0, the
f-string with an empty dict), the reserved-KV line of vllm/v1/worker/gpu_worker.py (0.10.2,
0.33.0), and torch's CUDA OOM as tests/fixtures/gpu-startup-logs print it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.doctor.model_table import find_model
from headroom.vllm_cmd import parse_command

DIED = (
    "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}"
)
OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 786.00 MiB. GPU 0 has a "
    "total capacity of 23.56 GiB of which 140.75 MiB is free. Including non-PyTorch memory, "
    "this process has 23.40 GiB memory in use."
)


def _diagnose(log, argv, gpus=None, model=None, version=None):
    return diagnose(
        DoctorInputs(
            log=log,
            command=parse_command(argv),
            gpu_spec=parse_gpu_spec(gpus) if gpus else None,
            model=find_model(model) if model else None,
            vllm_version=version,
        )
    )


def _pinned(pin, model="m"):
    return ["vllm", "serve", model, "--kv-cache-memory-bytes", str(pin)]


def test_a_pinned_pool_and_a_bare_engine_failure_lower_the_pin():
    """The syv-ai/qwen38-27b-rtx3090 #21 shape: the paste ends in the engine's generic line,
    the start script pins 5.2 GiB of KV. Nothing sizes it: down by a fifth, in whole MiB."""
    d = _diagnose(DIED, _pinned(5583457484))
    top = d.findings[0]
    assert top.id == "kv-pin-start-failed" and top.step == 4
    first = top.actions[0]
    assert (first.knob, first.direction) == ("kv_cache_memory_bytes", "lower")
    assert first.value == 4465885184  # floor(5583457484 x 0.8 / MiB) MiB
    assert first.value % 2**20 == 0
    assert not any(a.knob == "gpu_memory_utilization" for f in d.findings for a in f.actions)


def test_no_pin_no_finding():
    d = _diagnose(DIED, ["vllm", "serve", "m"])
    assert all(f.id != "kv-pin-start-failed" for f in d.findings)


def test_a_named_root_cause_is_left_to_its_own_rule():
    """With the OOM line in the log the OOM rule answers (and lowers the pin itself)."""
    d = _diagnose(OOM + "\n" + DIED, _pinned(5583457484))
    assert all(f.id != "kv-pin-start-failed" for f in d.findings)
    assert d.findings[0].actions[0].knob == "kv_cache_memory_bytes"


def test_a_pin_with_room_to_spare_is_no_suspect():
    """0.5B model, 1 GiB pinned on an H100: far inside what vLLM would budget itself."""
    d = _diagnose(DIED, _pinned(2**30, "Qwen/Qwen2.5-0.5B-Instruct"), "1xH100", version="0.11.0")
    assert all(f.id != "kv-pin-start-failed" for f in d.findings)


def test_a_tight_pin_is_sized_to_what_the_release_would_budget():
    """Llama-3.1-8B (about 15 GiB of weights) on a 24 GiB card with 8 GiB pinned: more than
    0.9 x the GPU with the activations and graphs; the lowered pin fits inside it."""
    pin = 8 * 2**30
    argv = _pinned(pin, "meta-llama/Llama-3.1-8B-Instruct")
    d = _diagnose(DIED, argv, "1xRTX4090", version="0.11.0")
    top = d.findings[0]
    assert top.id == "kv-pin-start-failed"
    value = top.actions[0].value
    assert value < pin and value % 2**20 == 0
    assert any("pinned KV 8.00 GiB" in line for line in top.evidence)
    # the lowered pin passes the same check: the rule would not fire again
    again = _diagnose(DIED, _pinned(value, "meta-llama/Llama-3.1-8B-Instruct"), "1xRTX4090",
                      version="0.11.0")  # fmt: skip
    assert all(f.id != "kv-pin-start-failed" for f in again.findings)


@settings(max_examples=80, deadline=None)
@given(
    pin=st.integers(min_value=2**20, max_value=200 * 2**30),
    gpus=st.sampled_from([None, "1xRTX4090", "1xH100", "1xL4"]),
    model=st.sampled_from([None, "meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen2.5-0.5B-Instruct"]),
)
def test_the_pin_only_ever_comes_down(pin, gpus, model):
    d = _diagnose(DIED, _pinned(pin, model or "m"), gpus, model)
    for f in d.findings:
        for a in f.actions:
            assert not (a.knob == "kv_cache_memory_bytes" and a.direction == "raise")
            assert not (a.knob == "gpu_memory_utilization" and f.id == "kv-pin-start-failed")
    mine = [f for f in d.findings if f.id == "kv-pin-start-failed"]
    for f in mine:
        if not f.actions:  # lowering the pin "to" the value it has is no change: not proposed
            assert any("kv_cache_memory_bytes is already" in e for e in f.evidence)
            continue
        assert 2**20 <= f.actions[0].value < pin
