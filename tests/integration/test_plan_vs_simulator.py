"""`headroom plan`'s recommended command starts on the simulator (an independent reading of
vLLM's memory accounting) when the wanted context does not fit and the plan falls back to
a shorter --max-model-len: the margin below the doctor's raw estimate absorbs the two
readings' difference. The simulator runs in process here, in the test only; the planner
never imports it."""

from __future__ import annotations

import pytest

from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.doctor.model_table import find_model
from headroom.doctor.planner import plan
from headroom.simulator import accounting as sim_acc
from headroom.simulator.hardware import Machine, gpu_model
from headroom.simulator.models import load_model
from headroom.vllm_cmd import parse_command

# (doctor model, simulator model, GPUs as `plan --gpus` takes them, simulator GPU key)
COMBOS = [
    ("Llama-3.1-8B", "meta-llama/Llama-3.1-8B-Instruct", "1xRTX4090", "RTX4090"),
    ("Llama-3.1-70B", "meta-llama/Llama-3.1-70B-Instruct", "2xH100", "H100-SXM"),
    ("Llama-3.1-70B", "meta-llama/Llama-3.1-70B-Instruct", "4xA100-40GB", "A100-40G"),
    ("Llama-3.1-70B", "meta-llama/Llama-3.1-70B-Instruct", "4xL40S", "L40S"),
    ("Qwen2.5-72B", "Qwen/Qwen2.5-72B-Instruct", "2xH100", "H100-SXM"),
    ("Qwen2.5-72B", "Qwen/Qwen2.5-72B-Instruct", "4xA100-40GB", "A100-40G"),
]


def _simulate(argv: list[str], gpus: int, sim_gpu: str):
    cmd = parse_command(argv)
    settings = sim_acc.EngineSettings(
        tp=int(cmd.get("tensor_parallel_size", 1)),
        pp=int(cmd.get("pipeline_parallel_size", 1)),
        gpu_memory_utilization=float(cmd.get("gpu_memory_utilization", 0.92)),
        max_model_len=int(cmd.get("max_model_len")),
        max_num_seqs=cmd.get("max_num_seqs"),
        kv_cache_dtype=str(cmd.get("kv_cache_dtype", "auto")),
    )
    return settings, sim_acc.plan_startup(
        load_model(cmd.model), settings, Machine(gpu_model(sim_gpu), gpus_per_node=gpus)
    )


@pytest.mark.parametrize(("model", "sim_model", "gpus", "sim_gpu"), COMBOS, ids=lambda v: str(v))
def test_simulator_accepts_the_recommended_command(model, sim_model, gpus, sim_gpu):
    p = plan(find_model(model), parse_gpu_spec(gpus), context=1_048_576, version="0.33.0")
    argv = [*p.command[:2], sim_model, *p.command[3:]]
    settings, started = _simulate(argv, int(gpus.split("x")[0]), sim_gpu)
    if p.fit_range[0] < 16:
        # the KV cache is smaller than the estimate's error: no length is safe, and the plan
        # says so instead of cutting silently
        assert not p.fits and any("no margin" in n for n in p.notes), p.notes
        return
    # the plan fell back to a length below its raw estimate of the fit ...
    assert settings.max_model_len < p.account.max_model_len_fit < 1_048_576
    # ... and the simulator starts it: one request of that length fits its KV cache
    assert started.failure is None, (started.failure, settings.max_model_len, started.kv_tokens)
    assert settings.max_model_len <= started.kv_tokens


def test_the_raw_estimate_alone_would_be_refused():
    """Why the margin: the doctor's raw fit, used as is, is one the simulator refuses for
    most of these combos (its KV cache is up to ~0.8 GiB per GPU smaller)."""
    refused = 0
    for model, sim_model, gpus, sim_gpu in COMBOS:
        p = plan(find_model(model), parse_gpu_spec(gpus), context=1_048_576, version="0.33.0")
        argv = [*p.command[:2], sim_model, *p.command[3:]]
        at = argv.index("--max-model-len") + 1
        argv[at] = str(p.account.max_model_len_fit)
        _, started = _simulate(argv, int(gpus.split("x")[0]), sim_gpu)
        refused += started.failure is not None
    assert refused >= len(COMBOS) // 2
