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

from headroom.vllm_cmd.launcher_spec import Launcher
from headroom.vllm_cmd.launcher_tables_rl import EASYR1, OPENRLHF, TRL_TRAINER, VERL

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
    # vllm_gpu_util's default is 0.9 until v0.9.2 and 0.7 from v0.9.3 (2025-06): which one ran
    # is not known from a line, and 0.9 is vLLM's own, so it is not assumed
    defaults={"max_model_len": 4096},
    defaults_note="LLaMA-Factory's own vllm_maxlen default for a line that does not say "
    "(2048 before v0.9.1; vllm_gpu_util is 0.9, 0.7 from v0.9.3)",
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

LM_EVAL = Launcher(
    key="lm_eval",
    name="lm-evaluation-harness's vllm model",
    source="EleutherAI/lm-evaluation-harness lm_eval/models/vllm_causallms.py VLLM.__init__ "
    "(commit 4e7e0d47f): --model_args key=value,... become LLM(**model_args): pretrained -> "
    "model, max_length -> max_model_len, max_batch_size -> max_num_seqs, the rest passed as "
    "they are; data_parallel_size starts that many engines through Ray, none of them DP",
    settings={
        "model_args.pretrained": ("model", "value"),
        "model_args.max_length": ("max_model_len", "value"),
        "model_args.max_batch_size": ("max_num_seqs", "value"),
        "model_args.lora_local_path": ("enable_lora", "set_on"),
    },
    prefixes=("model_args.",),
    own=frozenset(
        {
            "model",
            "tasks",
            "batch_size",
            "device",
            "model_args.max_gen_toks",
            "model_args.batch_size",
            "model_args.add_bos_token",
            "model_args.prefix_token_id",
            "model_args.enable_thinking",
            "model_args.chat_template_args",
            "model_args.think_end_token",
            "model_args.truncation_side",
            "model_args.device",
            "model_args.data_parallel_size",
        }
    ),  # fmt: skip
    aliases={"M": "model", "a": "model_args", "t": "tasks"},
)

MS_SWIFT = Launcher(
    key="ms_swift",
    name="ms-swift",
    source="modelscope/ms-swift swift/rlhf_trainers/args_mixin.py VllmArguments."
    "get_vllm_engine_kwargs (commit 3602360a5): vllm_X is vLLM's X, vllm_engine_kwargs a JSON "
    "of more; v2.6-v3.x infer arguments spelled as vLLM's (gpu_memory_utilization, "
    "tensor_parallel_size, max_model_len ...; swift/llm/argument/infer_args.py)",
    settings={
        "model": ("model", "value"),
        "model_id_or_path": ("model", "value"),
        "vllm_engine_kwargs": ("", "engine_args"),
    },
    prefixes=("vllm_",),
    own=frozenset(
        {
            "max_length",
            "seed",
            "port",
            "host",
            "tp",
            "max_new_tokens",
            "rope_scaling",
            "torch_dtype",
            "vllm_mode",
            "vllm_server_host",
            "vllm_server_port",
            "vllm_server_base_url",
            "vllm_server_timeout",
            "vllm_use_async_engine",
            "vllm_reasoning_parser",
            "infer_backend",
            "model_type",
            "template",
        }
    ),  # fmt: skip
)

RAY_SERVE_LLM = Launcher(
    key="ray_serve_llm",
    name="a Ray Serve LLM config",
    source="ray-project/ray doc/source/serve/llm: LLMConfig model_loading_config (model_id, "
    "model_source) and engine_kwargs, the vLLM engine args by their own names",
    settings={
        "model_loading_config.model_source": ("model", "value"),
        "model_source": ("model", "value"),
    },  # fmt: skip
    own=frozenset({"name", "port", "host", "num_replicas", "accelerator_type"}),
    engine_keys=True,
)

VLLM_YAML = Launcher(
    key="vllm_yaml",
    name="a YAML of vLLM's own engine args",
    source="vLLM's own --config YAML (vllm/utils/argparse_utils.py load_config_file): each "
    "key an engine arg",
    settings={"model": ("model", "value")},
    own=frozenset({"port", "host"}),
    engine_keys=True,
)

LAUNCHERS = (
    FASTCHAT, LLAMA_FACTORY, LLAMA_FACTORY_INFER, VERL, EASYR1, OPENRLHF, TRL_SERVE,
    TRL_TRAINER, XINFERENCE, KSERVE, LM_EVAL, MS_SWIFT, RAY_SERVE_LLM, VLLM_YAML,
)  # fmt: skip
