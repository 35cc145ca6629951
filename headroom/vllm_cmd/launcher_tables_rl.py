"""The tables of the training frameworks that start vLLM for their rollouts: verl, EasyR1,
OpenRLHF and TRL's trainer (the format is `launcher_spec.Launcher`, the `how` words are in
`launcher_tables`' docstring)."""

from __future__ import annotations

from headroom.vllm_cmd.launcher_spec import Launcher

_VERL_ROLLOUT = {
    "tensor_model_parallel_size": ("tensor_parallel_size", "value"),
    "gpu_memory_utilization": ("gpu_memory_utilization", "value"),
    "max_num_batched_tokens": ("max_num_batched_tokens", "value"),
    "max_num_seqs": ("max_num_seqs", "value"),
    "max_model_len": ("max_model_len", "value"),
    "enable_chunked_prefill": ("enable_chunked_prefill", "value"),
    "enable_prefix_caching": ("enable_prefix_caching", "value"),
    "enforce_eager": ("enforce_eager", "value"),
    "dtype": ("dtype", "dtype"),
    "pipeline_model_parallel_size": ("pipeline_parallel_size", "value"),
    "data_parallel_size": ("data_parallel_size", "value"),
    "expert_parallel_size": ("enable_expert_parallel", "above_one_on"),
    "quantization": ("quantization", "value"),
    "prompt_length": ("prompt", "length"),
    "response_length": ("response", "length"),
}
VERL = Launcher(
    key="verl",
    name="verl's rollout config",
    source="volcengine/verl verl/trainer/config/rollout/rollout.yaml and verl/workers/rollout/"
    "vllm_rollout/vllm_async_server.py (commit b178a3cd5); vllm_rollout_spmd.py at v0.4.0-"
    "v0.6.0: max_model_len = rollout.max_model_len or prompt_length + response_length",
    settings={
        **{f"actor_rollout_ref.rollout.{k}": v for k, v in _VERL_ROLLOUT.items()},
        "actor_rollout_ref.model.path": ("model", "value"),
        "data.max_prompt_length": ("prompt", "length"),
        "data.max_response_length": ("response", "length"),
        "trainer.n_gpus_per_node": ("", "gpus"),
    },
    prefixes=("actor_rollout_ref.rollout.engine_kwargs.vllm.",),
    defaults={
        "tensor_parallel_size": 2,
        "gpu_memory_utilization": 0.5,
        "max_num_batched_tokens": 8192,
        "enable_chunked_prefill": True,
        "dtype": "bfloat16",
    },
    defaults_note="verl's rollout.yaml defaults for what the line does not say",
)

_EASYR1_ROLLOUT = {
    "tensor_parallel_size": ("tensor_parallel_size", "value"),
    "gpu_memory_utilization": ("gpu_memory_utilization", "value"),
    "max_num_batched_tokens": ("max_num_batched_tokens", "value"),
    "max_model_len": ("max_model_len", "value"),
    "enforce_eager": ("enforce_eager", "value"),
    "enable_chunked_prefill": ("enable_chunked_prefill", "value"),
    "dtype": ("dtype", "dtype"),
    "seed": ("seed", "value"),
}
EASYR1 = Launcher(
    key="easyr1",
    name="EasyR1's rollout config",
    source="hiyouga/EasyR1 verl/workers/rollout/config.py RolloutConfig and "
    "verl/workers/rollout/vllm_rollout_spmd.py LLM(...) (commit b44b311): max_model_len = "
    "config.max_model_len or data.max_prompt_length + data.max_response_length",
    settings={
        **{f"worker.rollout.{k}": v for k, v in _EASYR1_ROLLOUT.items()},
        "worker.actor.model.model_path": ("model", "value"),
        "data.max_prompt_length": ("prompt", "length"),
        "data.max_response_length": ("response", "length"),
        "trainer.n_gpus_per_node": ("", "gpus"),
    },
    defaults={
        "tensor_parallel_size": 2,
        "gpu_memory_utilization": 0.6,
        "max_num_batched_tokens": 8192,
        "enable_chunked_prefill": False,
        "max_model_len": 1024,
        "enable_sleep_mode": True,
    },
    defaults_note="EasyR1's RolloutConfig defaults for what the line does not say "
    "(max_prompt_length 512 + max_response_length 512; sleep mode always on)",
)

OPENRLHF = Launcher(
    key="openrlhf",
    name="OpenRLHF's vLLM engines",
    source="OpenRLHF/OpenRLHF openrlhf/cli/train_ppo_ray.py (v0.4.0-v0.9.0 --vllm_* flags; "
    "commit 3c3be623 --vllm.* flags) and openrlhf/trainer/ray/vllm_engine.py "
    "create_vllm_engines: max_model_len = max_len or prompt_max_len + generate_max_len",
    settings={
        "pretrain": ("model", "value"),
        "actor.model_name_or_path": ("model", "value"),
        "vllm_tensor_parallel_size": ("tensor_parallel_size", "value"),
        "vllm.tensor_parallel_size": ("tensor_parallel_size", "value"),
        "vllm_gpu_memory_utilization": ("gpu_memory_utilization", "value"),
        "vllm.gpu_memory_utilization": ("gpu_memory_utilization", "value"),
        "enforce_eager": ("enforce_eager", "value"),
        "vllm.enforce_eager": ("enforce_eager", "value"),
        "enable_prefix_caching": ("enable_prefix_caching", "value"),
        "vllm.enable_prefix_caching": ("enable_prefix_caching", "value"),
        "vllm_enable_sleep": ("enable_sleep_mode", "value"),
        "vllm.enable_sleep": ("enable_sleep_mode", "value"),
        "max_len": ("max_model_len", "value"),
        "data.max_len": ("max_model_len", "value"),
        "prompt_max_len": ("prompt", "length"),
        "generate_max_len": ("response", "length"),
    },
    own=frozenset({"seed", "ds_tensor_parallel_size", "ds.tensor_parallel_size"}),
    defaults={
        "tensor_parallel_size": 1,
        "gpu_memory_utilization": 0.95,
        "max_model_len": 2048,
        "dtype": "bfloat16",
    },
    defaults_note="OpenRLHF's defaults for what the line does not say "
    "(gpu_memory_utilization 0.9 in v0.6; dtype always bfloat16)",
)

TRL_TRAINER = Launcher(
    key="trl_colocate",
    name="TRL's trainer (vllm_mode colocate)",
    source="huggingface/trl trl/trainer/grpo_config.py and trl/generation/vllm_generation.py "
    "LLM(...) (commit f2cd57710; v0.19.0-v0.2x grpo_trainer.py: max_model_len = "
    "max_prompt_length + max_completion_length); max_num_batched_tokens=4096 always",
    settings={
        "model_name_or_path": ("model", "value"),
        "vllm_gpu_memory_utilization": ("gpu_memory_utilization", "value"),
        "vllm_tensor_parallel_size": ("tensor_parallel_size", "value"),
        "vllm_max_model_length": ("max_model_len", "value"),
        "vllm_enable_sleep_mode": ("enable_sleep_mode", "value"),
        "vllm_model_impl": ("model_impl", "value"),
        "max_prompt_length": ("prompt", "length"),
        "max_completion_length": ("response", "length"),
    },
    own=frozenset({"seed"}),
    defaults={
        "gpu_memory_utilization": 0.3,
        "tensor_parallel_size": 1,
        "max_num_batched_tokens": 4096,
    },  # fmt: skip
    defaults_note="TRL's colocate defaults for what the line does not say "
    "(max_num_batched_tokens always 4096)",
)
