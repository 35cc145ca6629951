"""Per launcher, its own names for vLLM's engine args, and what it gives vLLM unasked.

Each table was read from the launcher's own source (the file and commit or tag named in
its `source`); a name maps to the engine arg the launcher hands it to, with how:
  - ``value``: the value as it is (typed as vLLM types that engine arg);
  - ``dtype``: a precision word (``bf16`` -> ``bfloat16``), as the launcher converts it;
  - ``above_one``: only a value above 1 is passed (FastChat: `if args.num_gpus > 1`);
  - ``above_one_on``: an on/off engine arg turned on by a size above 1 (verl's
    expert_parallel_size > 1 -> enable_expert_parallel);
  - ``set_on``: any value turns the engine arg on (LLaMA-Factory: an adapter -> enable_lora);
  - ``engine_args``: a JSON mapping of engine args (LLaMA-Factory's vllm_config);
  - ``length``: a part of the length the launcher sums into max_model_len (verl and EasyR1
    prompt + response, OpenRLHF prompt_max_len + generate_max_len, TRL likewise);
  - ``gpus``: the GPUs the launcher sees (tensor_parallel_size where it uses them all).
`defaults` are the values the launcher passes when its line does not say (its own
defaults, which are not vLLM's); `own` are its settings that vLLM's parser would take for
its own flags but that mean something else there (FastChat's `--port` is the worker's).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Launcher:
    key: str
    name: str  # "FastChat's vllm_worker", as the doctor's note names it
    settings: Mapping[str, tuple[str, str]]  # the launcher's name -> (engine arg, how)
    source: str
    vllm_flags: bool = False  # the launcher hands vLLM's own flags through (add_cli_args)
    own: frozenset[str] = frozenset()
    defaults: Mapping[str, object] = field(default_factory=dict)
    defaults_note: str = ""
    prefixes: tuple[str, ...] = ()  # Hydra/OmegaConf key prefixes read as vLLM's (engine_kwargs)
    aliases: Mapping[str, str] = field(default_factory=dict)  # short option -> its long name

    def engine_args_named(self) -> frozenset[str]:
        """Every engine arg this table can give (the property tests hold reading to it)."""
        named = {arg for arg, how in self.settings.values() if how not in ("length", "gpus")}
        return frozenset(named | set(self.defaults) | {"tensor_parallel_size", "max_model_len"})


FASTCHAT = Launcher(
    key="fastchat",
    name="FastChat's vllm_worker",
    source="lm-sys/FastChat fastchat/serve/vllm_worker.py, __main__ (commit 0e6d3e4b): "
    "args.model = args.model_path; if args.num_gpus > 1: args.tensor_parallel_size = "
    "args.num_gpus; the rest is AsyncEngineArgs.add_cli_args(parser)",
    settings={
        "model_path": ("model", "value"),
        "num_gpus": ("tensor_parallel_size", "above_one"),
        "gpu_memory_utilization": ("gpu_memory_utilization", "value"),
    },
    vllm_flags=True,
    own=frozenset(
        {
            "host",
            "port",
            "worker_address",
            "controller_address",
            "model_names",
            "limit_worker_concurrency",
            "no_register",
            "conv_template",
            "trust_remote_code",
        }
    ),  # fmt: skip
)

LLAMA_FACTORY = Launcher(
    key="llamafactory",
    name="LLaMA-Factory",
    source="hiyouga/LLaMA-Factory src/llamafactory/hparams/model_args.py VllmArguments and "
    "src/llamafactory/chat/vllm_engine.py engine_args (commit ff6d4d12e; defaults read at "
    "tags v0.6.0-v0.9.4): tensor_parallel_size is get_device_count(), every GPU it sees",
    settings={
        "model_name_or_path": ("model", "value"),
        "vllm_maxlen": ("max_model_len", "value"),
        "vllm_gpu_util": ("gpu_memory_utilization", "value"),
        "vllm_enforce_eager": ("enforce_eager", "value"),
        "vllm_max_lora_rank": ("max_lora_rank", "value"),
        "vllm_config": ("", "engine_args"),
        "infer_dtype": ("dtype", "dtype"),
        "cache_dir": ("download_dir", "value"),
        "adapter_name_or_path": ("enable_lora", "set_on"),
    },
    own=frozenset({"seed", "model_revision", "quantization_bit", "rope_scaling", "template"}),
    defaults={"max_model_len": 4096, "gpu_memory_utilization": 0.7},
    defaults_note="LLaMA-Factory's own defaults for what the line does not say (vllm_maxlen 2048 before v0.9.1, vllm_gpu_util 0.9 before v0.9.3)",
)

LLAMA_FACTORY_INFER = Launcher(
    key="llamafactory_vllm_infer",
    name="LLaMA-Factory's scripts/vllm_infer.py",
    source="hiyouga/LLaMA-Factory scripts/vllm_infer.py (commit ff6d4d12e): max_model_len = "
    "cutoff_len + max_new_tokens (2048 + 1024 by default), tensor_parallel_size = "
    "get_device_count() // pipeline_parallel_size",
    settings={
        "model_name_or_path": ("model", "value"),
        "pipeline_parallel_size": ("pipeline_parallel_size", "value"),
        "vllm_config": ("", "engine_args"),
        "cutoff_len": ("prompt", "length"),
        "max_new_tokens": ("response", "length"),
    },
    own=frozenset({"seed", "template", "batch_size"}),
    defaults={"max_model_len": 3072},
    defaults_note="vllm_infer.py's defaults (cutoff_len 2048 + max_new_tokens 1024)",
)

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

TRL_SERVE = Launcher(
    key="trl_vllm_serve",
    name="TRL's `trl vllm-serve`",
    source="huggingface/trl trl/scripts/vllm_serve.py ScriptArguments and LLM(...) "
    "(commit f2cd57710): vLLM's names, vllm_model_impl -> model_impl",
    settings={
        **{
            name: (name, "value")
            for name in (
                "model",
                "revision",
                "tensor_parallel_size",
                "data_parallel_size",
                "gpu_memory_utilization",
                "dtype",
                "max_model_len",
                "enable_prefix_caching",
                "enforce_eager",
                "kv_cache_dtype",
                "trust_remote_code",
                "distributed_executor_backend",
            )
        },  # fmt: skip
        "vllm_model_impl": ("model_impl", "value"),
    },
    own=frozenset({"host", "port", "log_level"}),
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

XINFERENCE = Launcher(
    key="xinference",
    name="Xinference's `xinference launch`",
    source="xorbitsai/inference xinference/deploy/cmdline.py model_launch (extra --KEY VALUE "
    "go to the engine) and xinference/model/llm/vllm/core.py _sanitize_model_config "
    "(commit 7ecec16b): tensor_parallel_size defaults to the GPUs it is given",
    settings={
        "model_path": ("model", "value"),
        "n_gpu": ("", "gpus"),
        "gpu_idx": ("", "gpus"),
        "n_worker": ("pipeline_parallel_size", "value"),
    },
    vllm_flags=True,
    own=frozenset(
        {
            "model_name",
            "model_engine",
            "model_type",
            "model_uid",
            "endpoint",
            "replica",
            "model_format",
            "quantization",
            "size_in_billions",
            "trust_remote_code",
            "api_key",
            "peft_model_config",
            "worker_ip",
            "lora_modules",
            "quantization_config",
            "host",
            "port",
            "log_level",
            "image_lora_load_kwargs",
            "image_lora_fuse_kwargs",
        }
    ),  # fmt: skip
    aliases={
        "n": "model_name",
        "s": "size_in_billions",
        "f": "model_format",
        "en": "model_engine",
        "mp": "model_path",
        "q": "quantization",
        "u": "model_uid",
        "r": "replica",
        "e": "endpoint",
        "t": "model_type",
        "lm": "lora_modules",
        "qc": "quantization_config",
    },  # fmt: skip
    defaults={"gpu_memory_utilization": 0.9, "max_num_seqs": 256},
    defaults_note="Xinference's own engine defaults for what the line does not say",
)

KSERVE = Launcher(
    key="kserve",
    name="KServe's huggingfaceserver",
    source="kserve/kserve python/huggingfaceserver/huggingfaceserver/__main__.py (commit "
    "aaac4e29): args.model = args.model_id or args.model_dir; --max_length is max_model_len; "
    "the rest is vLLM's make_arg_parser",
    settings={
        "model_id": ("model", "value"),
        "model_dir": ("model", "value"),
        "max_length": ("max_model_len", "value"),
        "model_revision": ("revision", "value"),
    },
    vllm_flags=True,
    own=frozenset(
        {
            "model_name",
            "backend",
            "task",
            "http_port",
            "grpc_port",
            "workers",
            "predictor_host",
            "tensor_input_names",
            "disable_vllm",
        }
    ),  # fmt: skip
)

LAUNCHERS = (
    FASTCHAT, LLAMA_FACTORY, LLAMA_FACTORY_INFER, VERL, EASYR1, OPENRLHF, TRL_SERVE,
    TRL_TRAINER, XINFERENCE, KSERVE,
)  # fmt: skip
