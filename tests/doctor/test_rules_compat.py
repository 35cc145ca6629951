"""Start-up refusals one engine argument answers (headroom/doctor/rules_compat.py and
rules_lengths.py), fed the texts vLLM printed in public threads (tests/fixtures/incidents has
the threads)."""

from __future__ import annotations

import pytest

from headroom.doctor import DoctorInputs, diagnose
from headroom.vllm_cmd import parse_command


def _top(log: str, argv: list[str] | None = None):
    d = diagnose(DoctorInputs(log=log, command=parse_command(argv) if argv else None))
    assert d.findings, "no finding for a refusal vLLM printed"
    return d.findings[0]


@pytest.mark.parametrize(
    "line",
    [
        "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. "
        "Your Tesla V100-SXM2-32GB GPU has compute capability 7.0.",
        "(VllmWorkerProcess pid=7) ERROR 04-24 16:06:40 worker_base.py:157] ValueError: Bfloat16 is "
        "only supported on GPUs with compute capability of at least 8.0. Your Tesla T4 GPU has "
        "compute capability 7.5. You can use float16 instead by explicitly setting the`dtype` flag "
        "in CLI, for example: --dtype=half.",
        "ValueError: torch.bfloat16 is not supported for quantization method awq. Supported dtypes:"
        " [torch.float16]",
    ],
)
def test_a_dtype_the_gpu_or_kernel_cannot_run_sets_dtype_half(line):
    top = _top(line)
    assert top.id == "dtype-unsupported" and top.step is None
    act = top.actions[0]
    assert (act.knob, act.direction, act.value) == ("dtype", "set", "half")


def test_fp8_e4m3_kv_on_an_old_gpu_sets_e5m2_when_the_line_asked_for_fp8():
    line = (
        '(Worker_TP0 pid=60352) ERROR 05-06 06:47:41 [multiproc_executor.py:852] ValueError("type '
        "fp8e4nv not supported in this architecture. The supported fp8 dtypes are ('fp8e4b15', "
        "'fp8e5')\")"
    )
    top = _top(line, ["vllm", "serve", "m", "--kv-cache-dtype", "fp8"])
    assert top.id == "fp8-e4m3-unsupported" and top.step == 5
    assert (top.actions[0].knob, top.actions[0].value) == ("kv_cache_dtype", "fp8_e5m2")
    # an fp8 error on a line that never asked for fp8 KV is not answered with the KV knob
    other = _top(line, ["vllm", "serve", "m"])
    assert not any(a.knob == "kv_cache_dtype" for a in other.actions)


@pytest.mark.parametrize(
    "line",
    [
        "ValueError: The quantization method fp8 is not supported for the current GPU. Minimum "
        "capability: 90. Current capability: 86.",
        # compressed-tensors' scheme check, a RuntimeError printed as a tuple (vllm#14040)
        "RuntimeError: ('Quantization scheme is not supported for ', 'the current GPU. Min "
        "capability: 80. ', 'Current capability: 75.')",
    ],
)
def test_a_quantization_method_above_the_gpus_capability(line):
    top = _top(line)
    assert top.id == "quantization-unsupported-gpu"
    assert (top.actions[0].knob, top.actions[0].direction) == ("quantization", "set")


def test_a_kernel_that_wants_bf16_gets_bf16_not_half():
    top = _top(
        "ValueError: torch.float16 is not supported for quantization method mxfp4. Supported "
        "dtypes: [torch.bfloat16]"
    )
    assert (top.actions[0].knob, top.actions[0].value) == ("dtype", "bfloat16")


def test_more_sequences_than_mamba_blocks_lowers_max_num_seqs_to_the_blocks():
    top = _top(
        "ValueError: max_num_seqs (1024) exceeds available Mamba cache blocks (856). Each decode "
        "sequence requires one Mamba cache block, so CUDA graph capture cannot proceed."
    )
    assert top.id == "mamba-blocks-below-max-num-seqs" and top.step == 4
    act = top.actions[0]
    assert (act.knob, act.direction, act.value) == ("max_num_seqs", "lower", 856)


LONG = "WARNING 02-16 15:37:32 scheduler.py:947] Input prompt (2501 tokens) is too long and exceeds limit of {}"


def test_prompt_limit_set_by_max_model_len_raises_max_model_len():
    top = _top(LONG.format(1000), ["vllm", "serve", "m", "--max-model-len", "1000"])
    assert top.id == "prompt-too-long"
    assert (top.actions[0].knob, top.actions[0].direction) == ("max_model_len", "raise")


def test_prompt_limit_below_a_longer_max_model_len_is_the_batch_budget():
    top = _top(LONG.format(2048), ["vllm", "serve", "m", "--max-model-len", "128000"])
    assert (top.actions[0].knob, top.actions[0].direction) == ("max_num_batched_tokens", "raise")


def test_the_old_default_batch_budget_2560_is_recognised():
    top = _top(LONG.format(2560))
    assert top.actions[0].knob == "max_num_batched_tokens"


def test_sleep_mode_wake_up_oom_lowers_utilization_not_raises_tp():
    log = (
        '(ActorModelRayActor pid=348952)   File "/usr/local/lib/python3.10/dist-packages/vllm/'
        'device_allocator/cumem.py", line 207, in wake_up\n'
        "(ActorModelRayActor pid=348952) RuntimeError: CUDA Error: out of memory at "
        "/workspace/csrc/cumem_allocator.cpp:62"
    )
    top = _top(log, ["vllm", "serve", "m", "--gpu-memory-utilization", "0.6"])
    assert top.id == "cuda-oom-sleep-wake"
    assert (top.actions[0].knob, top.actions[0].direction) == ("gpu_memory_utilization", "lower")
    assert not any(a.knob == "tensor_parallel_size" for a in top.actions)


def test_preemption_warnings_in_a_v0_log_raise_the_kv_budget():
    line = (
        "WARNING 08-20 10:18:39 scheduler.py:1141] Sequence group 147 is preempted by "
        "PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. This can "
        "affect the end-to-end performance. Increase gpu_memory_utilization or "
        "tensor_parallel_size to provide more KV cache memory. total_num_cumulative_preemption=51"
    )
    top = _top(line, ["vllm", "serve", "m", "--gpu-memory-utilization", "0.85"])
    assert top.id == "kv-full-preemptions-log" and top.step == 4
    assert (top.actions[0].knob, top.actions[0].direction) == ("gpu_memory_utilization", "raise")


def test_the_v1_kv_shortfall_without_the_parenthesis_is_read():
    # newer releases print "(180000), 3.05 GiB KV cache is needed" (noonghunna/club-3090#35)
    top = _top(
        "ValueError: To serve at least one request with the model's max seq len (180000), 3.05 "
        "GiB KV cache is needed, which is larger than the available KV cache memory (2.17 GiB). "
        "Based on the available memory, the estimated maximum model length is 111456.",
        ["vllm", "serve", "m", "--max-model-len", "180000", "--gpu-memory-utilization", "0.93"],
    )
    assert top.id.startswith("max-seq-len-exceeds-kv")
    assert any(a.knob == "max_model_len" and a.direction == "lower" for a in top.actions)


def test_batched_tokens_below_max_model_len_raises_the_batch_budget_to_the_length():
    top = _top(
        "ValueError: max_num_batched_tokens (8192) is smaller than max_model_len (131072). This "
        "effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM "
        "reject longer sequences. Please increase max_num_batched_tokens or decrease "
        "max_model_len."
    )
    assert top.id == "batched-tokens-below-max-model-len" and top.step == 4
    first, alt = top.actions[:2]
    assert (first.knob, first.direction, first.value) == ("max_num_batched_tokens", "raise", 131072)
    assert (alt.knob, alt.direction) == ("max_model_len", "lower")


def test_the_refusal_wrapped_over_two_lines_is_still_read():
    top = _top(
        "Value error, max_num_batched_tokens (2048) is smaller than\n"
        "max_model_len (4096). This effectively limits the maximum sequence length"
    )
    assert top.id == "batched-tokens-below-max-model-len"


@pytest.mark.parametrize(
    ("line", "value"),
    [
        (
            "ValueError: Chunked MM input disabled but max_tokens_per_mm_item (2496) is larger "
            "than max_num_batched_tokens (512). Please increase max_num_batched_tokens.",
            2560,
        ),
        (
            "ValueError: Attempted to assign 7 x 256 = 1792 multimodal tokens to 506 placeholders",
            1792,
        ),
    ],
)
def test_a_multimodal_item_above_the_batch_budget_raises_it(line, value):
    top = _top(line)
    assert top.id == "multimodal-item-above-batch" and top.step == 4
    act = top.actions[0]
    assert (act.knob, act.direction, act.value) == ("max_num_batched_tokens", "raise", value)


def test_a_kv_estimate_too_short_to_serve_leads_with_the_budget_not_the_length():
    # vLLM would fit 464 tokens: a max_model_len of 464 serves nothing (hiyouga/LLaMA-Factory#2798)
    top = _top(
        "ValueError: The model's max seq len (1024) is larger than the maximum number of tokens "
        "that can be stored in KV cache (464). Try increasing `gpu_memory_utilization` or "
        "decreasing `max_model_len` when initializing the engine.",
        ["vllm", "serve", "m", "--max-model-len", "1024"],
    )
    assert top.id == "max-seq-len-exceeds-kv"
    assert (top.actions[0].knob, top.actions[0].direction) == ("gpu_memory_utilization", "raise")
    assert any(a.knob == "max_model_len" and a.direction == "lower" for a in top.actions)


def test_a_request_above_a_max_model_len_the_command_set_raises_it():
    line = (
        "\"This model's maximum context length is 1 tokens. However, you requested 28 tokens in "
        'the messages, Please reduce the length of the messages."'
    )
    top = _top(line, ["vllm", "serve", "m", "--max-model-len=1"])
    assert top.id == "context-length-exceeded"
    assert (top.actions[0].knob, top.actions[0].direction) == ("max_model_len", "raise")
    # the model's own length (nothing set on the command line) is the client's to respect
    d = diagnose(DoctorInputs(log=line.replace(" 1 tokens", " 4096 tokens"), command=None))
    assert not any(f.id == "context-length-exceeded" for f in d.findings)


def test_max_model_len_above_the_derived_length_lowers_it_unless_allowed_long():
    line = (
        "ValueError: User-specified max_model_len (8192) is greater than the derived "
        "max_model_len (max_position_embeddings=4096 or model_max_length=None in model's "
        "config.json). This may lead to incorrect model outputs or CUDA errors."
    )
    top = _top(line)
    assert top.id == "max-model-len-above-derived"
    assert (top.actions[0].knob, top.actions[0].direction, top.actions[0].value) == (
        "max_model_len",
        "lower",
        4096,
    )
    warned = "WARNING 01-01 00:00:00 config.py:1] " + line.replace("ValueError: ", "")
    d = diagnose(DoctorInputs(log=warned))
    assert not any(f.id == "max-model-len-above-derived" for f in d.findings)


def test_mamba_blocks_line_cut_before_max_num_seqs_still_lowers_it():
    top = _top("exceeds available Mamba cache blocks (95)... CUDA graph capture cannot proceed")
    assert (top.actions[0].knob, top.actions[0].direction, top.actions[0].value) == (
        "max_num_seqs",
        "lower",
        95,
    )


@pytest.mark.parametrize(
    "log",
    [
        "ValueError: Free memory on device cuda:0 (30.12/31.84 GiB) on startup\n"
        "is less than desired GPU memory utilization (0.95, 30.25 GiB).",
        "ValueError: Available memory on node 0 (10.78/15.61 GiB) on startup is less\n"
        "than desired CPU memory utilization (0.7, 10.93 GiB).",
    ],
)
def test_free_memory_refusal_wrapped_or_on_the_cpu_backend_lowers_utilization(log):
    top = _top(log, ["vllm", "serve", "m", "--gpu-memory-utilization", "0.95"])
    assert top.id == "free-memory-below-utilization"
    assert (top.actions[0].knob, top.actions[0].direction) == ("gpu_memory_utilization", "lower")
