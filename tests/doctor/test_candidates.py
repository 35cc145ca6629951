"""Fixes are searched against the memory model, and a finding's step is its top knob's step.

The 52-head case is the field report of issue 13: TP 3 with 52 heads, the doctor proposed
TP 2 (it divides 52) though the weights do not fit two of those GPUs; the answer was TP 4.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.candidates import MEMORY_CODES, apply, problems, search
from headroom.doctor.findings import KNOB_STEPS, knob_step
from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.doctor.memory_model import Knobs
from headroom.doctor.model_table import find_model
from headroom.probes.model import ModelShape
from headroom.vllm_cmd import parse_command

FIXTURES = Path(__file__).parents[1] / "fixtures"
HEADS_52 = (
    "ValueError: Total number of attention heads (52) must be divisible by tensor parallel "
    "size (3)."
)


def shape(**kw) -> ModelShape:
    base = dict(
        name="m", architecture="LlamaForCausalLM", num_layers=60, hidden_size=6656,
        intermediate_size=17920, num_attention_heads=52, num_kv_heads=4, head_dim=128,
        vocab_size=32000, dtype="bfloat16", max_position_embeddings=16384, quantization=None,
        rope_scaling=None, num_experts=None, param_count=60_000_000_000, weight_bytes=None,
        source="config",
    )  # fmt: skip
    base.update(kw)
    return ModelShape(**base)


def test_52_heads_at_tp_3_gets_tp_4_not_tp_2_whose_weights_do_not_fit():
    model, gpu = shape(), parse_gpu_spec("8xA100-40GB")
    two, _ = problems(model, gpu, Knobs(tp=2), None)
    assert "no-kv" in {p.code for p in two}  # the premise: 2 x 40 GB cannot hold 112 GiB
    d = diagnose(
        DoctorInputs(
            command=parse_command("vllm serve m -tp 3".split()),
            log=HEADS_52,
            gpu_spec=gpu,
            model=model,
        )  # fmt: skip
    )
    top = d.findings[0]
    assert top.id == "tp-heads-not-divisible" and top.step == 2
    tp = next(a for a in top.actions if a.knob == "tensor_parallel_size")
    assert (tp.direction, tp.value) == ("raise", 4)
    assert any(line.startswith("checked (vLLM") for line in top.evidence)


def test_search_ranks_the_free_knob_before_cutting_the_context():
    # Llama-3.1-8B at its full 131,072 on a 24 GB GPU: the context must be cut either way
    model, gpu = find_model("Llama-3.1-8B"), parse_gpu_spec("1xRTX4090")
    found = search(model, gpu, Knobs(), None,
                   allow=frozenset({"gpu_memory_utilization", "max_model_len"}))  # fmt: skip
    best = dict(found[0].changes)
    # the utilization is raised to keep the longest context that fits, not left at 0.9
    assert best["gpu_memory_utilization"] > 0.92
    cut_only = [c for c in found if set(dict(c.changes)) == {"max_model_len"}]
    assert cut_only and best["max_model_len"] > dict(cut_only[0].changes)["max_model_len"]


def test_no_fit_on_the_gpus_names_what_would():
    # 70B in bf16 on one 24 GB GPU: nothing on this GPU; more GPUs of the kind would
    d = diagnose(
        DoctorInputs(
            command=parse_command("vllm serve meta-llama/Llama-3.1-70B".split()),
            gpu_spec=parse_gpu_spec("1xRTX4090"),
        )  # fmt: skip
    )
    top = d.findings[0]
    assert top.id == "predicted-no-kv-memory"
    assert any("no configuration of these 1 GPU(s)" in e for e in top.evidence)
    assert all(a.value is None for a in top.actions)  # advice only: nothing here applies
    assert any("GPUs of this kind" in a.why for a in top.actions)


WIZARD = (FIXTURES / "gpu-startup-logs" / "a100-80gb-wizardlm2-8x22b-oom.log").read_text()


def test_gpu_count_unknown_raise_tp_comes_before_quantize():
    cmd = parse_command("vllm serve alpindale/WizardLM-2-8x22B --max-model-len 8192".split())
    top = diagnose(DoctorInputs(command=cmd, log=WIZARD)).findings[0]
    assert top.id == "cuda-oom-weights" and top.step == 1
    assert top.actions[0].knob == "tensor_parallel_size"
    assert top.actions[0].direction == "raise"


def test_quantized_checkpoint_is_never_offered_quantization():
    cmd = parse_command("vllm serve Qwen/Qwen2.5-72B-Instruct-AWQ --max-model-len 8192".split())
    for gpus in (None, "1xRTX4090"):
        d = diagnose(DoctorInputs(command=cmd, log=WIZARD,
                                  gpu_spec=parse_gpu_spec(gpus) if gpus else None))  # fmt: skip
        knobs = [a.knob for f in d.findings for a in f.actions]
        assert "quantization" not in knobs, (gpus, knobs)


def test_weights_that_do_not_fit_outrank_an_oom_listing_other_processes():
    log = FIXTURES / "gpu-startup-logs" / "gpu24gb-qwen2.5-vl-7b-awq-oom-other-processes-v0.log"
    cmd = parse_command("vllm serve meta-llama/Llama-3.1-70B-Instruct".split())
    d = diagnose(
        DoctorInputs(command=cmd, log=log.read_text(), gpu_spec=parse_gpu_spec("1xRTX4090"))
    )
    ids = [f.id for f in d.findings]
    assert ids.index("cuda-oom-weights") < ids.index("cuda-oom-foreign-process"), ids


# --- properties over random models, GPUs and flags -------------------------------------

LOGS = (
    None,
    "ValueError: Total number of attention heads ({heads}) must be divisible by tensor "
    "parallel size ({tp}).",
    "ValueError: No available memory for the cache blocks. Try increasing "
    "`gpu_memory_utilization` when initializing the engine.",
    WIZARD,
    # vllm #25350's refusal (tests/fixtures/gpu-startup-logs/gpu-qwen3-30b-a3b-fp8-kv-fp8-v1.log)
    (FIXTURES / "gpu-startup-logs" / "gpu-qwen3-30b-a3b-fp8-kv-fp8-v1.log").read_text(),
)
GPUS = ("1xRTX4090", "2xRTX4090", "4xA100-40GB", "8xA100", "8xH100", "2xL40S", "4xH200")


@st.composite
def cases(draw):
    heads = draw(st.sampled_from([8, 16, 28, 32, 40, 48, 52, 64]))
    kv = draw(st.sampled_from([k for k in (1, 2, 4, 8, heads) if heads % k == 0]))
    layers = draw(st.integers(8, 96))
    params = draw(st.sampled_from([1, 3, 8, 14, 32, 70, 120])) * 10**9
    model = shape(num_attention_heads=heads, num_kv_heads=kv, num_layers=layers,
                  hidden_size=heads * 128, param_count=params,
                  quantization=draw(st.sampled_from([None, None, "awq", "fp8"])))  # fmt: skip
    gpu = draw(st.sampled_from(GPUS))
    tp = draw(st.sampled_from([1, 2, 3, 4, 8]))
    args = ["vllm", "serve", "m", "-tp", str(tp)]
    if draw(st.booleans()):
        args += ["--gpu-memory-utilization", str(draw(st.sampled_from([0.5, 0.8, 0.9, 0.95])))]
    if draw(st.booleans()):
        args += ["--max-model-len", str(draw(st.sampled_from([2048, 8192, 32768])))]
    if draw(st.booleans()):
        args += ["--kv-cache-dtype", "fp8"]
    log = draw(st.sampled_from(LOGS))
    if log is not None:
        log = log.format(heads=heads, tp=tp)
    return model, parse_gpu_spec(gpu), parse_command(args), log


def _level(found) -> int:
    return max(({"no-kv": 3, "one-request": 2, "wanted": 1}.get(p.code, 0) for p in found),
               default=0)  # fmt: skip


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_no_action_is_infeasible_by_the_doctors_own_memory_model(case):
    model, gpu, cmd, log = case
    d = diagnose(DoctorInputs(command=cmd, log=log, gpu_spec=gpu, model=model))
    from headroom.doctor.memory_model import knobs_from_command

    knobs = knobs_from_command(cmd)
    before, _ = problems(model, gpu, knobs, None)
    had = {p.code for p in before}
    for f in d.findings:
        for a in f.actions:
            assert not (a.knob == "quantization" and model.quantization), f
            if a.value is None:
                continue
            after, _ = problems(model, gpu, apply(knobs, {a.knob: a.value, **dict(a.also)}), None)
            new_layout = [p for p in after if p.code not in had and p.code not in MEMORY_CODES]
            assert not new_layout, (f.id, a, new_layout)
            assert _level(after) <= _level(before), (f.id, a, after)
            if a.knob in ("tensor_parallel_size", "pipeline_parallel_size", "quantization"):
                assert _level(after) < 3, (f.id, a, after)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_every_findings_step_is_its_top_actions_knob_step(case):
    model, gpu, cmd, log = case
    for inputs in (DoctorInputs(command=cmd, log=log, gpu_spec=gpu, model=model),
                   DoctorInputs(command=cmd, log=log)):  # fmt: skip
        for f in diagnose(inputs).findings:
            if f.actions:
                assert f.step == knob_step(f.actions[0]), f
            elif f.severity == "error":
                assert f.step is None, f


@pytest.mark.parametrize(
    ("knob", "direction", "also", "step"),
    [
        ("gpu_memory_utilization", "raise", (), 4),
        ("max_model_len", "lower", (), 4),
        ("max_num_seqs", "lower", (), 4),
        ("max_num_batched_tokens", "lower", (), 4),
        ("kv_cache_dtype", "set", (), 5),
        ("tensor_parallel_size", "raise", (), 1),
        ("tensor_parallel_size", "lower", (), 2),
        ("tensor_parallel_size", "lower", (("pipeline_parallel_size", 2),), 3),
        ("pipeline_parallel_size", "raise", (), 3),
        ("quantization", "set", (), 1),
        ("nccl_p2p_disable", "set", (), None),
    ],
)
def test_knob_steps(knob, direction, also, step):
    from headroom.doctor.findings import Action

    assert knob_step(Action(knob, direction, 1, "why", also=also)) == step
    assert set(KNOB_STEPS) >= {"gpu_memory_utilization", "kv_cache_dtype", "quantization"}


def test_apply_maps_engine_arg_names():
    k = apply(Knobs(), {"tensor_parallel_size": 4, "pipeline_parallel_size": 2, "foo": 1})
    assert (k.tp, k.pp) == (4, 2) and replace(k, tp=1, pp=1) == Knobs()
