"""Catalog entries: the parallel layout (steps 2 and 3): quantized MoE widths a TP splits off
their groups, the Ray executor's warning that TP is above the node's GPUs, data-parallel ranks
more than the GPUs, VLLM_PP_LAYER_PARTITION that does not fit the pipeline, and expert
parallelism against the model's experts. In match order before `limits` and `failures`
(whose "is not divisible by" and generic exception entries are broader).

Every text is vLLM's own, from the wheels in RELEASES (provenance.py names the files and
releases). The examples' numbers are those of public threads where one is named, else
numbers the text takes for a real model (named beside it) in vLLM's own format.
"""

from __future__ import annotations

from headroom.probes.vllm_catalog.signature import Signature as S

ENTRIES: tuple[S, ...] = (
    # --- a quantized MoE width a TP splits off its groups (rules_quant_tp) --------------------
    # compressed_tensors_moe_wna16.py / _wna16_marlin.py (0.25.1+): static group scales must
    # not cross a TP shard; vLLM's own text offers "a compatible TP size or ... expert
    # parallelism". 96 = Qwen3-30B-A3B's expert width 768 over TP 8, group_size 128.
    S("ct_wna16_moe_group_split", "quantized_tp_split", "error",
      ("MoE intermediate size per tensor-parallel partition",),
      r"partition \((?P<partition>\d+)\) to be divisible by group_size \((?P<divisor>\d+)\)",
      origin="raise", probe=("requires the MoE intermediate size per tensor-parallel partition",),
      fields=("partition", "divisor"),
      feeds="quantized-tp-split (rules_quant_tp): a smaller TP that divides the groups, or "
            "--enable-expert-parallel",
      examples=("ValueError: CompressedTensors WNA16 MoE with static group scales requires the MoE intermediate "
                "size per tensor-parallel partition (96) to be divisible by group_size (128). Scale groups would "
                "otherwise cross TP shard boundaries; use a compatible TP size or enable expert parallelism.",
                "ValueError: CompressedTensors WNA16 Marlin MoE with static group scales requires the MoE "
                "intermediate size per tensor-parallel partition (96) to be divisible by group_size (128). Scale "
                "groups would otherwise cross TP shard boundaries; use a compatible TP size or enable expert "
                "parallelism.")),
    # modelopt.py (0.20.2+): MXFP8 blocks of 32 (mxfp8_utils.MXFP8_BLOCK_SIZE); 80 = an expert
    # width of 640 over TP 8 (vllm#54178's Qwen3.8-Flash-Next shape).
    S("mxfp8_moe_split", "quantized_tp_split", "error",
      ("MXFP8 MoE requires intermediate_size_per_partition divisible by",),
      r"divisible by (?P<divisor>\d+), got (?P<partition>\d+)", origin="raise",
      probe=("MXFP8 MoE requires intermediate_size_per_partition divisible by ",),
      fields=("partition", "divisor"),
      feeds="quantized-tp-split (rules_quant_tp): a smaller TP, or --enable-expert-parallel",
      examples=("ValueError: MXFP8 MoE requires intermediate_size_per_partition divisible by 32, got 80.",)),
    # --- heads split over TP, as a traceback quotes the model file's assertion ---------------
    # models/*.py (0.2.7-0.25.1: ~200 attention classes assert it; the replication branch of
    # 0.2-0.3's llama/mistral-style models asserts tp_size % kv heads). A bare assert carries
    # no numbers: the rule sizes it from the model (rules_parallel.heads_not_divisible).
    S("heads_assert_source", "heads_not_divisible", "error",
      ("total_num_heads % tp_size == 0", "total_num_heads % tensor_model_parallel_world_size == 0",
       "total_num_heads % tp_world_size == 0"),
      origin="source",
      probe=("assert self.total_num_heads % tp_size == 0",
             "assert self.total_num_heads % tensor_model_parallel_world_size == 0",
             "assert self.total_num_heads % tp_world_size == 0"),
      feeds="tp-heads-not-divisible",
      examples=("    assert self.total_num_heads % tp_size == 0",
                "    assert self.total_num_heads % tensor_model_parallel_world_size == 0")),
    S("kv_replication_assert_source", "kv_heads_not_divisible", "error",
      ("tp_size % self.total_num_kv_heads == 0",),
      origin="source", probe=("assert tp_size % self.total_num_kv_heads == 0",),
      feeds="tp-heads-not-divisible (TP above the KV heads must be a multiple of them)",
      examples=("    assert tp_size % self.total_num_kv_heads == 0",)),
    # --- TP above the node's GPUs, as the Ray executor warns it (rules_parallel) -------------
    # v1/executor/ray_utils.py (0.14.1+): device_count() of this node against TP x PP; on a
    # Ray cluster of several nodes it is the TP spread over nodes (tp-across-nodes).
    S("ray_tp_above_local_gpus", "ray_tp_above_local_gpus", "warning", ("exceeds available GPUs (",),
      r"Tensor parallel size \((?P<world_size>\d+)\) exceeds available GPUs \((?P<gpus>\d+)\)",
      probe=("Tensor parallel size (%d) exceeds available GPUs (%d). ",), fields=("world_size", "gpus"),
      feeds="world-size-too-large (one node) or tp-across-nodes (--nodes > 1)",
      examples=("Tensor parallel size (8) exceeds available GPUs (4). This may result in Ray placement group "
                "allocation failures. Consider reducing tensor_parallel_size to 4 or less, or ensure your Ray "
                "cluster has 8 GPUs available.",)),
    # --- data-parallel ranks more than the GPUs (rules_parallel_sizes) -------------------------
    # v1/worker/gpu_worker.py (0.14.1+): local rank = DP local rank x TP x PP + TP rank must be
    # a visible device; v1/engine/utils.py (0.9.2+): Ray places DP ranks on the master node.
    S("dp_local_rank_out_of_bounds", "dp_exceeds_gpus", "error", ("DP adjusted local rank",),
      r"DP adjusted local rank (?P<local_rank>\d+) is out of bounds", origin="assert",
      probe=("DP adjusted local rank ",), fields=("local_rank",),
      feeds="dp-exceeds-gpus: data-parallel ranks x TP x PP above the node's GPUs (fewer DP ranks)",
      examples=("AssertionError: DP adjusted local rank 4 is out of bounds. ",)),
    S("dp_ranks_not_enough", "dp_exceeds_gpus", "error",
      ("DP ranks on DP master node", "placement groups, only created"),
      r"allocate (?P<dp_local>\d+) DP ranks on DP master node (?P<ip>\S+), possible to fit "
      r"(?P<dp_available>\d+) DP ranks", require_match=False, origin="raise",
      probe=("DP ranks on DP master node", "placement groups, only created "),
      fields=("dp_local", "dp_available"),
      feeds="dp-exceeds-gpus: --data-parallel-size-local to the ranks the node can hold",
      examples=("ValueError: Not enough resources to allocate 4 DP ranks on DP master node 10.0.0.2, possible to "
                "fit 2 DP ranks.",
                "ValueError: Not enough resources to allocate 4 placement groups, only created 2 placement groups. "
                "Available resources: {'GPU': 8.0}")),
    # --- VLLM_PP_LAYER_PARTITION that does not fit the pipeline (rules_parallel_sizes) ---------
    # distributed/utils.py get_pp_indices (0.5.5+): the environment variable's comma list must
    # have PP entries summing to the layers. 61 = DeepSeek-V3's layers.
    S("pp_partition_count", "pp_partition_invalid", "error", ("does not match pp_size=",),
      r"len\(partitions\)=(?P<parts>\d+) does not match pp_size=(?P<pp>\d+)", origin="raise",
      probe=("does not match {pp_size=}",), fields=("parts", "pp"),
      feeds="pp-partition-invalid: VLLM_PP_LAYER_PARTITION with one entry per pipeline stage",
      examples=("ValueError: len(partitions)=3 does not match pp_size=2.",)),
    S("pp_partition_sum", "pp_partition_invalid", "error", ("does not match num_hidden_layers=",),
      r"sum\(partitions\)=(?P<total>\d+) does not match num_hidden_layers=(?P<layers>\d+)", origin="raise",
      probe=("does not match {num_hidden_layers=}",), fields=("total", "layers"),
      feeds="pp-partition-invalid: VLLM_PP_LAYER_PARTITION summing to the model's layers",
      examples=("ValueError: sum(partitions)=60 does not match num_hidden_layers=61.",)),
    S("pp_partition_string", "pp_partition_invalid", "error", ("Invalid partition string: ",),
      r"Invalid partition string: (?P<value>\S+)", origin="raise", probe=("Invalid partition string: {}",),
      fields=("value",), feeds="pp-partition-invalid: VLLM_PP_LAYER_PARTITION is comma-separated integers",
      examples=("ValueError: Invalid partition string: 31;30",)),
    # --- the architecture vLLM resolved (config 0.10.2+): which model class a PP refusal is ----
    # about (rules_parallel.pp_unsupported reads it against doctor/pp_support.py)
    S("resolved_architecture", "resolved_architecture", "info", ("Resolved architecture: ",),
      r"Resolved architecture: (?P<architecture>\w+)", probe=("Resolved architecture: %s",),
      fields=("architecture",), feeds="pp-unsupported: the architecture whose PP support is looked up",
      examples=("Resolved architecture: MiniMaxM3SparseForConditionalGeneration",)),
    # --- expert parallelism against the model's experts (rules_parallel_sizes) -----------------
    # fused_moe/layer.py (0.9.2+): EPLB places the experts (routed + redundant) evenly.
    S("eplb_experts_uneven", "eplb_experts_uneven", "error",
      ("EPLB currently only supports even distribution of experts",),
      r"Got (?P<experts>\d+) experts and (?P<ep>\d+) EP ranks", origin="raise",
      probe=("EPLB currently only supports even distribution of experts across ranks",),
      fields=("experts", "ep"),
      feeds="eplb-experts-uneven: redundant experts that make the count divide by the EP ranks",
      examples=("ValueError: EPLB currently only supports even distribution of experts across ranks. Got 160 "
                "experts and 6 EP ranks.",)),
    # MoE kernels that run only with expert parallelism: DeepSeek V4's MegaMoE (models/
    # deepseek_v4, 0.20.2+; "Enable it with --enable-expert-parallel"), MuseSpark and Kimi K3
    # (0.32.0+); config/parallel.py (0.14.1+): EPLB balances the experts of an EP group only.
    S("moe_requires_ep", "ep_required", "error",
      ("MegaMoE currently requires expert parallel", "MegaMoE requires expert parallel",
       "must be True to use EPLB"),
      origin="raise",
      probe=("MegaMoE currently requires expert parallel", "MegaMoE requires expert parallel",
             "enable_expert_parallel must be True to use EPLB."),
      feeds="ep-required: --enable-expert-parallel (with it already on: a bug, vllm#55914)",
      examples=("NotImplementedError: DeepSeek V4 MegaMoE currently requires expert parallel. Enable it with "
                "--enable-expert-parallel, or pick a different MoE backend.",
                "ValueError: enable_expert_parallel must be True to use EPLB.")),
    # config/model.py _verify_with_expert_parallelism (0.8.5+): a dense model with EP on.
    S("ep_without_moe", "ep_without_moe", "error",
      ("must be greater than 0 when expert parallelism is enabled",),
      origin="raise", probe=("Number of experts in the model must be greater than 0 ",),
      feeds="ep-without-moe: drop --enable-expert-parallel (the model has no experts)",
      examples=("ValueError: Number of experts in the model must be greater than 0 when expert parallelism is "
                "enabled.",)),
)  # fmt: skip
