"""Symptoms in words and the step-1 preflight (headroom/doctor/rules_preflight.py): an issue
title that says OOM takes the table's unknown-phase order, the weights sized from the name
or the config raise TP only when they cannot fit, and the preflight ranks after any finding
a real log line gives and goes quiet once the log shows the weights loaded."""

from __future__ import annotations

from headroom.doctor import DoctorInputs, diagnose, parse_gpu_spec
from headroom.doctor.context import Context
from headroom.doctor.model_table import find_model
from headroom.doctor.rules_preflight import HOLD, budget_gib, lowest_holding_tp, sizing
from headroom.vllm_cmd import parse_command

LLAMA2_70B = ["python", "-m", "vllm.entrypoints.openai.api_server",
              "--model", "meta-llama/Llama-2-70b-hf"]  # fmt: skip
# "Loading model weights took" (vllm/worker/model_runner.py, V0), as captured in
# tests/fixtures/gpu-startup-logs/rtx4090x2-r1-distill-qwen-14b-tp2-fail-v0.7.log
WEIGHTS_LOADED = (
    "(VllmWorkerProcess pid=1786) INFO 02-11 07:40:45 model_runner.py:1115] Loading model "
    "weights took 13.9476 GB"
)


def _diagnose(log, argv, gpus, **kw):
    return diagnose(
        DoctorInputs(
            log=log,
            command=parse_command(argv) if argv else None,
            gpu_spec=parse_gpu_spec(gpus) if gpus else None,
            **kw,
        )
    )


def _turns(finding):
    return [(a.knob, a.direction) for a in finding.actions]


def test_an_issue_title_that_says_oom_takes_the_unknown_phase_order():
    """magpie-align/magpie#9 "Gemma OOM": no vLLM line at all. Before, the doctor found
    nothing; now the words are the OOM a real line of unknown phase gives."""
    argv = ["--tensor-parallel-size", "8", "--gpu-memory-utilization", "0.95"]
    d = _diagnose("Gemma OOM\n", argv, "8xA100:80")
    top = d.findings[0]
    assert top.id == "cuda-oom-unknown" and top.step == 4
    assert _turns(top)[:3] == [
        ("gpu_memory_utilization", "lower"),
        ("enforce_eager", "set"),
        ("max_num_batched_tokens", "lower"),
    ]
    assert not any(a.knob == "tensor_parallel_size" for f in d.findings for a in f.actions)


def test_words_oom_with_weights_too_big_for_the_given_gpus_raise_tp_to_what_holds_them():
    """vllm-project/vllm#882 "Runing API OOM": Llama-2-70b at TP 1 on 8x A100-40GB."""
    d = _diagnose("Runing API OOM\n", LLAMA2_70B, "8xA100:40")
    top = d.findings[0]
    assert top.id == "cuda-oom-weights" and top.step == 1
    tp = top.actions[0]
    assert (tp.knob, tp.direction) == ("tensor_parallel_size", "raise")
    ctx = Context(DoctorInputs(command=parse_command(LLAMA2_70B), gpu_spec=parse_gpu_spec("8xA100:40")))  # fmt: skip
    sized, budget = sizing(ctx), budget_gib(ctx)
    assert sized is not None and budget is not None
    # the lowest power of two (heads unknown) whose share leaves room: half of it does not
    assert sized.per_gpu(tp.value, 1) <= HOLD * budget < sized.per_gpu(tp.value // 2, 1)
    assert tp.value & (tp.value - 1) == 0


def test_preflight_from_the_command_line_alone():
    # A 70B name the built-in table does not hold: sized from the name's "70b" alone.
    d = _diagnose(None, ["vllm", "serve", "acme/Some-Chat-70b-hf"], "8xA100:40")
    top = d.findings[0]
    assert top.id == "preflight-weights" and top.step == 1 and top.severity == "warning"
    assert _turns(top) == [("tensor_parallel_size", "raise")]
    assert top.actions[0].value == 4


def test_a_table_model_on_the_command_line_gets_the_full_memory_estimate():
    # Llama-2-70B is in the table (its config.json shape): the whole accounting runs, and
    # at TP 1 nothing is left for KV; the same turn, TP 4, is what holds it.
    d = _diagnose(None, ["vllm", "serve", "meta-llama/Llama-2-70b-hf"], "8xA100:40")
    top = d.findings[0]
    assert top.id == "predicted-no-kv-memory" and top.step == 1
    assert _turns(top) == [("tensor_parallel_size", "raise")]
    assert top.actions[0].value == 4


def test_quantization_flag_changes_the_bytes_per_weight():
    """--quantization awq: 4-bit weights, so TP 2 holds what 16-bit needs TP 4 for."""
    argv = ["vllm", "serve", "acme/Some-Chat-70b-hf", "--quantization", "awq"]
    d = _diagnose(None, argv, "8xA100:40")
    assert d.findings[0].actions[0].value == 2


def test_no_tp_on_the_given_gpus_holds_them_says_so_with_no_knob():
    d = _diagnose(None, ["vllm", "serve", "Qwen/Qwen2-14B"], "1xT4")
    top = d.findings[0]
    assert top.id == "preflight-weights" and not top.actions
    assert any("a GPU with more memory" in line for line in top.evidence)
    assert any("quantized checkpoint" in line for line in top.evidence)


def test_words_oom_when_no_tp_holds_the_weights_turns_no_knob():
    """The opposite case (QwenLM/Qwen3#845's answer, a bigger GPU): the weights alone are
    bigger than the one given GPU, so no engine knob makes them fit."""
    d = _diagnose("OOM with the 72B model\n", ["vllm", "serve", "org/Custom-72B"], "1xRTX4090")
    top = d.findings[0]
    assert top.id == "cuda-oom-weights" and not top.actions and top.step is None
    assert not any(a.knob == "tensor_parallel_size" for f in d.findings for a in f.actions)


def test_preflight_ranks_after_a_finding_a_real_log_line_gives():
    log = "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.\n"  # fmt: skip
    d = _diagnose(log, ["vllm", "serve", "meta-llama/Llama-2-70b-hf"], "8xA100:40")
    ids = [f.id for f in d.findings]
    assert ids[0] != "preflight-weights" and "preflight-weights" in ids
    # never the opposite way of a higher finding
    claimed = {}
    for f in d.findings:
        for a in f.actions:
            prior = claimed.setdefault(a.knob, a.direction)
            assert {prior, a.direction} != {"raise", "lower"}


def test_a_log_that_shows_the_weights_loaded_silences_the_preflight():
    argv = ["vllm", "serve", "meta-llama/Llama-2-70b-hf"]
    d = _diagnose(WEIGHTS_LOADED + "\n", argv, "8xA100:40")
    assert not any(f.id == "preflight-weights" for f in d.findings)


def test_weights_that_fit_give_no_preflight():
    d = _diagnose(None, ["vllm", "serve", "meta-llama/Llama-2-7b-hf"], "1xA100:80")
    assert not any(f.id == "preflight-weights" for f in d.findings)


def test_known_heads_choose_a_tp_that_divides_them():
    """A config gives the heads: the TP must divide them (40 heads, 8 KV heads: not 3)."""
    shape = find_model("Qwen/Qwen2.5-14B-Instruct")
    assert shape is not None and shape.num_attention_heads % 3 != 0
    from dataclasses import replace

    partial = replace(shape, num_layers=None)  # too partial to size: the name sizes it
    ctx = Context(
        DoctorInputs(
            command=parse_command(["vllm", "serve", "Qwen/Qwen2.5-14B-Instruct"]),
            gpu_spec=parse_gpu_spec("4xGPU:12"),
            model=partial,
        )
    )
    sized = sizing(ctx)
    assert sized is not None and sized.model is None
    tp = lowest_holding_tp(ctx, sized)
    assert tp == 4  # 3 would hold 27.5/3 GiB too, but 40 heads do not divide by 3
    assert sized.per_gpu(3, 1) <= HOLD * budget_gib(ctx)


def test_utilization_that_leaves_no_room_for_the_cuda_context_is_lowered():
    """vllm-project/vllm#10797: --gpu-memory-utilization 1 on a 16 GiB GPU. vLLM 0.9+
    refuses it at start-up (free memory after the CUDA context < total x 1.0)."""
    d = _diagnose(None, ["vllm", "serve", "m", "--gpu-memory-utilization", "1"], "1xGPU:16")
    found = [f for f in d.findings if f.id == "preflight-utilization-above-free"]
    assert found and found[0].step == 4
    act = found[0].actions[0]
    assert (act.knob, act.direction) == ("gpu_memory_utilization", "lower")
    assert act.value is not None and (1 - act.value) * 16 >= 0.45


def test_utilization_that_leaves_the_context_room_is_not_flagged():
    for util, gpus in (("0.99", "1xA100:80"), ("0.95", "1xGPU:16"), ("0.9", "1xGPU:8")):
        d = _diagnose(None, ["vllm", "serve", "m", "--gpu-memory-utilization", util], gpus)
        assert not any(f.id == "preflight-utilization-above-free" for f in d.findings), util


def test_utilization_preflight_defers_to_a_log_that_sized_the_kv_cache():
    """The engine passed the gate (V0's "# GPU blocks" line, vllm/worker/worker.py 0.2-0.7):
    the utilization worked on this machine; and --kv-cache-memory-bytes replaces it."""
    argv = ["vllm", "serve", "m", "--gpu-memory-utilization", "1"]
    log = "INFO 01-19 12:56:39 llm_engine.py:223] # GPU blocks: 2034, # CPU blocks: 512\n"
    d = _diagnose(log, argv, "1xGPU:16")
    assert not any(f.id == "preflight-utilization-above-free" for f in d.findings)
    d = _diagnose(None, [*argv, "--kv-cache-memory-bytes", "4000000000"], "1xGPU:16")
    assert not any(f.id == "preflight-utilization-above-free" for f in d.findings)


def test_words_that_say_loading_are_still_an_oom_of_unknown_phase():
    """ "OOM when loading the model" in a title is the start-up, not the weight loader's
    frame: with weights that fit (an 8B model on an 80 GiB GPU) no TP is raised."""
    d = _diagnose("OOM when loading the model\n", ["vllm", "serve", "meta-llama/Llama-3.1-8B"],
                  "1xA100:80")  # fmt: skip
    top = d.findings[0]
    assert top.id == "cuda-oom-unknown"
    assert _turns(top)[0] == ("gpu_memory_utilization", "lower")
    assert not any(a.knob == "tensor_parallel_size" for f in d.findings for a in f.actions)


def test_a_known_config_takes_the_candidates_search_and_its_checked_arithmetic():
    """The model's config sizes it (memory model + candidates search): the TP the search
    finds holds the weights AND one request; a log line that says nothing of memory (the V0
    engine banner) does not silence it."""
    log = "INFO 01-19 12:56:39 llm_engine.py:223] Initializing an LLM engine (v0.6.4) with config: model=x\n"  # fmt: skip
    argv = ["vllm", "serve", "meta-llama/Llama-3.1-70B"]
    d = _diagnose(log, argv, "4xA100:80")
    pre = next(f for f in d.findings if f.id == "preflight-weights")
    assert pre.actions[0].knob == "tensor_parallel_size" and pre.actions[0].value in (2, 4)
    assert any(line.startswith("checked (vLLM") for line in pre.evidence)
    small = _diagnose(log, argv, "4xA100:40")
    pre = next(f for f in small.findings if f.id == "preflight-weights")
    assert not pre.actions and any(line.startswith("would fit") for line in pre.evidence)
