"""Catalog entries: vLLM's start-up configuration checks that scripts/catalog_coverage.py listed
as unknown and that users meet (vLLM's issue threads): the batch token budget against the
KV block size (hybrid Mamba models' align mode, V0's chunked prefill with prefix caching) and
against speculative decoding's draft slots, TP above the GPUs a node has (the multiprocessing
executor's own check), float16 for a model that refuses it, a quantization method the release
does not know, the V0 warning about a long derived context, CUDA graphs an attention path
cannot run, and a model layout a release cannot run. In match order after `limits`, before
`failures` (whose pydantic "Value error, " entry is generic).

Every text is vLLM's own, from the wheels in RELEASES (provenance.py names the files); the
examples' numbers are those of the public threads named beside them where one exists.
"""

from __future__ import annotations

from headroom.probes.vllm_catalog.signature import NOT_CONFIG
from headroom.probes.vllm_catalog.signature import Signature as S

# 0.20.2+: max_num_scheduled_tokens = max_num_batched_tokens - draft slots x max_num_seqs;
# 0.32+ also refuses a batch no larger than num_lookahead_tokens; 0.17.1-0.25.1 say it when
# max_num_scheduled_tokens is given. Each number is read on its own.
_SPEC_BUDGET = (
    r"(?=.*?max_num_scheduled_tokens is set to (?P<max_num_scheduled_tokens>-?\d+))?"
    r"(?=.*?max_num_batched_tokens=(?P<max_num_batched_tokens>\d+))?"
    r"(?=.*?num_lookahead_tokens=(?P<num_lookahead_tokens>\d+))?"
    r"(?=.*?should be greater by at least (?P<scheduled_token_delta>\d+))?"
)

ENTRIES: tuple[S, ...] = (
    # --- the batch token budget against the KV block size ------------------------------------
    # vllm/config/vllm.py (0.17.1-0.25.1, PR #34445): hybrid (Mamba/GDN) models with prefix
    # caching run the Mamba cache in "align" mode, whose attention block can be larger than
    # the default batch budget; vllm#36734 (Qwen3.5, block 2096 > 2048) answers with a larger
    # --max-num-batched-tokens.
    S("mamba_align_block_above_batch", "batched_tokens_block_size", "error", ("In Mamba cache align mode, block_size",),
      r"block_size \((?P<block_size>\d+)\) must be <= max_num_batched_tokens \((?P<max_num_batched_tokens>\d+)\)",
      origin="assert", probe=("In Mamba cache align mode, block_size ",),
      fields=("block_size", "max_num_batched_tokens"),
      feeds="mamba-align-block-above-batch (rules_lengths): raise --max-num-batched-tokens to the block size",
      examples=("AssertionError: In Mamba cache align mode, block_size (2096) must be <= max_num_batched_tokens "
                "(2048).",
                # vllm#36734, through pydantic
                "Assertion failed, In Mamba cache align mode, block_size (2096) must be <= max_num_batched_tokens "
                "(2048). [type=assertion_error, input_value=ArgsKwargs((), {'model_co...transfer_config': None}), "
                "input_type=ArgsKwargs]")),
    # vllm/core/scheduler.py (0.6.4-0.6.6): V0 chunked prefill with prefix caching schedules
    # whole blocks, so the chunk must be a multiple of the block size.
    S("chunk_not_block_multiple", "batched_tokens_block_size", "error", ("must be dividable by block size",),
      r"chunk_size \((?P<max_num_batched_tokens>\d+)\) % block_size \((?P<block_size>\d+)\) = (?P<remainder>\d+)",
      require_match=False, origin="raise", probe=("(chunk size) must be dividable by ",),
      fields=("max_num_batched_tokens", "block_size", "remainder"),
      feeds="batched-tokens-below-block-size: --max-num-batched-tokens a multiple of the block size",
      examples=("ValueError: When enabling chunked prefill and prefix caching, max_num_batched_tokens (chunk size) "
                "must be dividable by block size, but got chunk_size (1000) % block_size (16) = 8",)),
    # --- speculative decoding's draft slots take the batch budget ------------------------------
    # vllm/config/vllm.py _set_max_num_scheduled_tokens (0.20.2+; vllm#50708: DFlash with 16
    # speculative tokens, "-1792"), the 0.32+ check against num_lookahead_tokens, and 0.17.1's
    # text for an explicit max_num_scheduled_tokens.
    S("spec_decode_no_slots", "spec_decode_batch_too_small", "error",
      ("which does not allow any tokens to be scheduled", "does not have enough slots to schedule a token",
       "does not have enough slots to support the speculative decoding"),
      _SPEC_BUDGET, require_match=False, origin="raise",
      probe=("which does not allow any tokens to be scheduled", "does not have enough slots to schedule a token",
             "does not have enough slots to support the speculative decoding"),
      fields=("max_num_scheduled_tokens", "max_num_batched_tokens", "num_lookahead_tokens", "scheduled_token_delta"),
      feeds="spec-decode-batch-too-small: raise --max-num-batched-tokens (or fewer seqs / draft tokens)",
      examples=("ValueError: max_num_scheduled_tokens is set to -1792 based on the speculative decoding settings, "
                "which does not allow any tokens to be scheduled. Increase max_num_batched_tokens to accommodate the "
                "additional draft token slots, or decrease num_speculative_tokens or max_num_seqs.",
                "ValueError: VllmConfig does not have enough slots to schedule a token and support the speculative "
                "decoding settings. Got max_num_batched_tokens=4 and num_lookahead_tokens=7.",
                "ValueError: VllmConfig received max_num_scheduled_tokens but it does not have enough slots to "
                "support the speculative decoding settings. It should be greater by at least 256, but got "
                "max_num_batched_tokens=2048 and max_num_scheduled_tokens=2048.")),
    # --- TP above the GPUs of the node: the multiprocessing executor's own check ---------------
    # vllm/executor/multiproc_gpu_executor.py (0.4.3-0.6.6), mp_distributed_executor.py
    # (0.7.3-0.10.2); vllm#5790. 0.4.3's assert carries no numbers.
    S("tp_above_local_gpus", "world_size_too_large", "error",
      ("to less than max local gpu count", "is less than than max local gpu count"),
      r"(?:tensor_parallel_size|world_size) \((?P<world_size>\d+)\) (?:to|is) less than (?:than )?max local gpu "
      r"count \((?P<gpus>\d+)\)", require_match=False, origin="raise", probe=("max local gpu count",),
      fields=("world_size", "gpus"), feeds="world-size-too-large",
      examples=("RuntimeError: please set tensor_parallel_size (4) to less than max local gpu count (2)",
                "RuntimeError: please ensure that world_size (8) is less than than max local gpu count (4)",
                "AssertionError: please set tensor_parallel_size to less than max local gpu count")),
    # --- dtype and quantization ---------------------------------------------------------------
    # vllm/config (0.9.2+, _FLOAT16_NOT_SUPPORTED_MODELS: gemma2, gemma3, plamo2, glm4...):
    # "Numerical instability. Please use bfloat16 or float32 instead." (vllm#28857 through pydantic).
    S("float16_unsupported_model", "dtype_unsupported", "error", ("does not support float16. Reason:",),
      r"The model type '?(?P<model_type>[\w.-]+)'? does not support float16", origin="raise",
      quoted=True, probe=("does not support float16. Reason: ",), fields=("model_type",),
      feeds="dtype-unsupported: --dtype bfloat16 (float32 on a GPU without bf16)",
      examples=("ValueError: The model type 'gemma3' does not support float16. Reason: Numerical instability. "
                "Please use bfloat16 or float32 instead.",
                "Value error, The model type 'gemma3' does not support float16. Reason: Numerical instability. "
                "Please use bfloat16 or float32 instead. [type=value_error, input_value=ArgsKwargs((), {'model': "
                "...rocessor_plugin': None}), input_type=ArgsKwargs")),
    # vllm/config (0.2.7+): a --quantization (or a checkpoint's method) this release lacks:
    # vllm#1769 ("gptq" on 0.2.2, which knew awq and squeezellm).
    S("quantization_method_unknown", "quantization_unknown", "error", ("Unknown quantization method:",),
      r"Unknown quantization method: (?P<method>[^\s.]+)\.? Must be one of (?P<supported>\[.*?\])",
      require_match=False, origin="raise", probe=("Unknown quantization method: ",),
      fields=("method", "supported"),
      feeds=NOT_CONFIG + ": this release does not know the method (upgrade vLLM, or the method's right name)",
      examples=("ValueError: Unknown quantization method: gptq. Must be one of ['awq', 'squeezellm'].",)),
    # vllm/config (ParallelConfig, 0.6.3-0.33): --distributed-executor-backend given a name it
    # lacks; vllm-project/vllm-ascend#287 (its docs passed "tp"), answered with "mp".
    S("executor_backend_unknown", "executor_backend_unknown", "error",
      ("Unrecognized distributed executor backend",),
      r"Unrecognized distributed executor backend (?P<backend>\S+?)\. Supported values are",
      require_match=False, origin="raise", probe=("Unrecognized distributed executor backend ",),
      fields=("backend",),
      feeds="executor-backend-unknown (rules_executor_backend): set --distributed-executor-backend mp, or ray across nodes",
      examples=("ValueError: Unrecognized distributed executor backend tp. Supported values are 'ray', 'mp' 'uni', "
                "'external_launcher' or custom ExecutorBase subclass.",)),
    # --- the derived context length (V0's warning, 0.5.5-0.10.2 arg_utils.py) ------------------
    S("long_context_warning", "long_context_warning", "warning", ("The model has a long context length (",),
      r"long context length \((?P<context_length>\d+)\)", probe=("The model has a long context length (",),
      fields=("context_length",),
      feeds="StartupFacts.max_model_len (the derived length: a profiling OOM or a short KV cache wants "
            "a lower --max-model-len)",
      examples=("The model has a long context length (131072). This may cause OOM errors during the initial "
                "memory profiling phase, or result in low performance due to small KV cache space. Consider "
                "setting --max-model-len to a smaller value.",
                # 0.8.5-0.10.2 lost a space: "causeOOM"
                "The model has a long context length (131072). This may causeOOM during the initial memory "
                "profiling phase, or result in low performance due to small KV cache size. Consider setting "
                "--max-model-len to a smaller value.")),
    # --- CUDA graphs an attention path cannot run ----------------------------------------------
    # vllm/engine/arg_utils.py (0.9.2-0.10.2): Qwen's dual-chunk attention runs eager only.
    S("dual_chunk_cuda_graph", "cuda_graph_unsupported", "error",
      ("Cuda graph is not supported with DualChunkFlashAttention",), origin="assert",
      probe=("Cuda graph is not supported with DualChunkFlashAttention",),
      feeds="cuda-graph-unsupported: --enforce-eager",
      examples=("AssertionError: Cuda graph is not supported with DualChunkFlashAttention. To run the model in "
                "eager mode, set 'enforce_eager=True' or use '--enforce-eager' in the CLI.",)),
    # vllm/v1/attention/backends/flash_attn.py (0.9.2-0.11.0): FA3's full graphs stop at 992
    # tokens; vllm#25508 lowered gpt-oss's capture size in the code (no user setting).
    S("fa3_full_graph_capture_size", "cuda_graph_unsupported", "error",
      ("Capture size larger than 992 is not supported for full cuda graph",), origin="raise",
      probe=("Capture size larger than 992 is not supported for ",),
      feeds=NOT_CONFIG + ": a release whose default capture sizes fit FA3 (vllm#25508)",
      examples=("ValueError: Capture size larger than 992 is not supported for full cuda graph.",)),
    # --- LoRA adapters above the rank the engine was started for --------------------------------
    # vllm/lora/worker_manager.py (0.3.3-0.6.6), lora/peft_helper.py (0.7.3+): an adapter whose
    # rank exceeds --max-lora-rank (default 16); modelscope/ms-swift#4221 (rank 32, answered
    # with max_lora_rank 32).
    S("lora_rank_above_max", "lora_rank_unsupported", "error", ("is greater than max_lora_rank",),
      r"LoRA rank (?P<rank>\d+) is greater than max_lora_rank (?P<max_lora_rank>\d+)", origin="raise",
      probe=("is greater than max_lora_rank",), fields=("rank", "max_lora_rank"),
      feeds="lora-rank-unsupported: raise --max-lora-rank to the adapter's rank (a value the release allows)",
      examples=("ValueError: LoRA rank 32 is greater than max_lora_rank 16.",)),
    # vllm/config (0.3.3-0.11.0): --max-lora-rank must be one of the release's kernel sizes
    # ((8, 16, 32, 64) in 0.3.3, up to 256 in 0.7.3, 320 and 512 added by 0.10).
    S("max_lora_rank_not_allowed", "lora_rank_unsupported", "error", ("max_lora_rank (",),
      r"max_lora_rank \((?P<max_lora_rank>\d+)\) must be one of \((?P<allowed>[\d, ]+)\)", origin="raise",
      probe=("max_lora_rank ({self.max_lora_rank}) must be one of ",), fields=("max_lora_rank", "allowed"),
      feeds="lora-rank-unsupported: the smallest allowed --max-lora-rank at or above the one given",
      examples=("ValueError: max_lora_rank (48) must be one of (8, 16, 32, 64, 128, 256, 320, 512).",)),
    # --- a model layout a release cannot run ----------------------------------------------------
    # vllm/model_executor/models/qwen2.py (0.4.3+; an assert from 0.14): a sliding window on
    # only some layers; vllm#17306, fixed in the engine by PR #17772.
    S("partial_sliding_window", "release_lacks_feature", "error",
      ("Sliding window for some but all layers is not supported",), origin="raise",
      probe=("Sliding window for some but all layers is not ",),
      feeds=NOT_CONFIG + ": this release cannot run the model's layout (upgrade vLLM)",
      examples=("ValueError: Sliding window for some but all layers is not supported. This model uses sliding "
                "window but `max_window_layers` = 64 is less than `num_hidden_layers` = 64. Please open an issue to "
                "discuss this feature.",)),
)  # fmt: skip
