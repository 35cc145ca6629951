"""Parallel sizes against the GPUs and the model (step 3): a world size above the node's GPUs,
data-parallel ranks more than the GPUs hold, VLLM_PP_LAYER_PARTITION that does not fit the
pipeline, and expert parallelism against the model's experts.

- "World size (N) is larger than the number of available GPUs (M) in this node" (config/
  parallel.py 0.14.1+; "Tensor parallel size (N) cannot be larger than ..." in 0.12), the
  multiprocessing executor's "please set tensor_parallel_size (N) to less than max local gpu
  count (M)" (0.4.3-0.10.2), Ray's warning "Tensor parallel size (N) exceeds available GPUs (M)"
  (ray_utils.py 0.14.1+): TP x PP above the GPUs CUDA shows this process. On one node the
  layout must fit M GPUs: the TP that divides the heads within M (searched against the weights
  when the model and GPUs are known, PP taking the rest). On several nodes (--nodes, --nnodes)
  the world size is meant: TP = the GPUs of a node, PP across the nodes, and from 0.14 the
  multiprocessing backend needs --nnodes (vLLM's own text: "set '--nnodes' appropriately").
  Ray's warning on a cluster of several nodes is tp-across-nodes' case (rules_parallel).
- "DP adjusted local rank N is out of bounds" (gpu_worker.py 0.14.1+: DP local rank x TP x PP
  + TP rank must be a visible GPU), "Not enough resources to allocate N DP ranks on DP master
  node ..., possible to fit M DP ranks" (v1/engine/utils.py 0.9.2+): fewer DP ranks per node.
- "len(partitions)=N does not match pp_size=M", "sum(partitions)=N does not match
  num_hidden_layers=M", "Invalid partition string" (distributed/utils.py get_pp_indices
  0.5.5+): the variable needs one layer count per stage, summing to the layers; vLLM's own split
  (the remainder on the stages before the last) is offered.
- "EPLB currently only supports even distribution of experts across ranks. Got N experts and M
  EP ranks." (fused_moe/layer.py 0.14.1+): redundant experts that make N divide by M.
- "Number of experts in the model must be greater than 0 when expert parallelism is enabled"
  (config 0.8.5+): a dense model with --enable-expert-parallel.
"""

from __future__ import annotations

from headroom.doctor import actions as A
from headroom.doctor.candidate_actions import fix_actions
from headroom.doctor.findings import Action, Finding
from headroom.doctor.oom_sizes import gpus_at_hand
from headroom.doctor.versions import parse_version

_NNODES_SINCE = (0, 14, 0)  # --nnodes: absent from 0.11.0's arg_utils.py, in 0.14.1's
_EPLB_CONFIG_SINCE = (0, 14, 0)  # --num-redundant-experts in 0.9.2-0.11.0, --eplb-config after
_ALLOW = frozenset(
    {"tensor_parallel_size", "pipeline_parallel_size", "gpu_memory_utilization", "max_model_len"}
)


def _int(value) -> int | None:
    try:
        found = int(value)
    except (TypeError, ValueError):
        return None
    return found if found > 0 else None


def _first(ctx, *kinds: str):
    found = ctx.of(*kinds)
    return found[0] if found else None


def world_size_too_large(ctx) -> list[Finding]:
    event = _first(ctx, "world_size_too_large", "ray_tp_above_local_gpus")
    if event is None:
        return _world_before_start(ctx)
    nodes = ctx.nodes
    if event.kind == "ray_tp_above_local_gpus" and nodes > 1:
        return []  # a Ray cluster of several nodes: rules_parallel.tp_across_nodes lays it out
    tp, pp = ctx.knobs.tp, max(ctx.knobs.pp, 1)
    world = _int(event.fields.get("world_size")) or tp * pp
    gpus = _int(event.fields.get("gpus")) or ctx.gpu_count
    evidence = [event.line.strip()[:400]]
    if event.kind == "ray_tp_above_local_gpus" and gpus and world > gpus and world % gpus == 0:
        # Ray's executor counts this node's GPUs only: the world size is meant for a cluster
        nodes = world // gpus
        evidence.append(
            f"the Ray executor warns when TP x PP is above this node's {gpus} GPUs: on a "
            f"cluster of {nodes} such nodes, TP must stay inside a node"
        )
    if nodes > 1 and gpus:
        acts = _across_nodes(ctx, world, gpus, nodes, event.line, evidence)
    else:
        acts = _one_node(ctx, tp, pp, gpus, evidence)
        acts.append(
            Action(
                "pipeline_parallel_size",
                "set",
                None,
                "TP inside a node, PP across nodes (with --nnodes or Ray)",
                "multi-node set-up",
            )
        )
    title = "More GPUs requested than this node has"
    severity = "warning" if event.severity == "warning" else "error"
    return [Finding("world-size-too-large", 3, severity, title, tuple(evidence), tuple(acts))]


def _world_before_start(ctx) -> list[Finding]:
    """No log yet: a TP x PP above the GPUs the command line lists (CUDA_VISIBLE_DEVICES) or
    the input describes, on one node, is refused in every release ("World size (N) is larger
    than the number of available GPUs (M)" from 0.14, the executor's "please set
    tensor_parallel_size ... max local gpu count" before, Ray's placement group wait)."""
    if ctx.nodes > 1 or ctx.events:
        return []
    found = gpus_at_hand(ctx)
    tp, pp = ctx.knobs.tp, max(ctx.knobs.pp, 1)
    if found is None or tp * pp <= found[0]:
        return []
    gpus, source = found
    evidence = [f"{source}: vLLM refuses a world size above these {gpus} GPUs at start-up"]
    acts = _one_node(ctx, tp, pp, gpus, evidence)
    if source.startswith("CUDA_VISIBLE_DEVICES"):
        acts.append(
            Action(
                "CUDA_VISIBLE_DEVICES",
                "set",
                None,
                f"list {tp * pp} GPUs for TP {tp} x PP {pp}, if the node has them",
                "those GPUs are then vLLM's",
            )
        )
    title = "More GPUs requested than this node has"
    return [Finding("world-size-too-large", 3, "error", title, tuple(evidence), tuple(acts))]


def _one_node(ctx, tp: int, pp: int, gpus: int | None, evidence: list[str]) -> list[Action]:
    if not gpus or tp * pp <= gpus:
        return []
    evidence.append(f"TP {tp} x PP {pp} = {tp * pp} GPUs; this process sees {gpus}")
    if ctx.model is not None and ctx.gpu is not None and ctx.gpu.count == gpus:
        searched, checked = fix_actions(
            ctx, f"a layout of the {gpus} GPUs this node has that holds the model", allow=_ALLOW,
            step=3,
        )  # fmt: skip
        if searched and all(a.value is not None for a in searched):
            evidence.extend(checked)
            return sorted(searched, key=lambda a: a.knob != "tensor_parallel_size")
    limit = max(gpus // pp, 1)
    # Without the model: a divisor of the TP in use, whose heads vLLM would accept.
    valid = (A.valid_tps(ctx.model, limit) if ctx.model is not None
             else [t for t in range(1, limit + 1) if tp % t == 0])  # fmt: skip
    value = max(valid or [1])
    if value >= tp:
        return []
    return [
        Action(
            "tensor_parallel_size",
            "lower",
            value,
            f"only {gpus} GPUs are visible on this node",
            "fewer GPUs per replica; use --pipeline-parallel-size across nodes if it does not fit",
            step=3,
        )
    ]


def _across_nodes(ctx, world: int, gpus: int, nodes: int, line: str, evidence) -> list[Action]:
    """Several nodes: keep the world size, TP within a node, PP across the nodes."""
    limit = min(gpus, world)
    valid = A.valid_tps(ctx.model, limit) if ctx.model is not None else list(range(1, limit + 1))
    fits = [t for t in valid if world % t == 0]
    acts: list[Action] = []
    if fits:
        new_tp = max(fits)
        new_pp = world // new_tp
        evidence.append(
            f"{world} GPUs over {nodes} nodes of {gpus}: TP {new_tp} inside each node, PP "
            f"{new_pp} across them (the all-reduce of every layer stays on the node's links)"
        )
        if new_tp < ctx.knobs.tp:
            acts.append(
                Action(
                    "tensor_parallel_size",
                    "lower",
                    new_tp,
                    f"TP within one node's {gpus} GPUs",
                    "pipeline bubbles at low concurrency",
                    also=(("pipeline_parallel_size", new_pp),),
                    step=3,
                )
            )
        if new_pp != ctx.knobs.pp:
            acts.append(
                Action(
                    "pipeline_parallel_size",
                    "raise" if new_pp > ctx.knobs.pp else "lower",
                    new_pp,
                    f"PP across the {nodes} nodes takes the GPUs TP gives up",
                    "pipeline bubbles at low concurrency",
                    also=(("tensor_parallel_size", new_tp),),
                )
            )
    version = parse_version(ctx.version)
    mp_backend = str(ctx.arg("distributed_executor_backend") or "mp") == "mp"
    has_nnodes = version is None or version >= _NNODES_SINCE
    if "in this node" in line and mp_backend and has_nnodes and not _int(ctx.arg("nnodes")):
        acts.append(
            Action(
                "nnodes",
                "set",
                nodes,
                "vLLM's text: the multiprocessing backend spans nodes only with --nnodes (and "
                "--node-rank, --master-addr on each node); or --distributed-executor-backend ray",
                "one vLLM process to start on every node",
            )
        )
    return acts


def dp_exceeds_gpus(ctx) -> list[Finding]:
    event = _first(ctx, "dp_exceeds_gpus")
    tp, pp = ctx.knobs.tp, max(ctx.knobs.pp, 1)
    dp = _int(ctx.arg("data_parallel_size")) or 1
    dp_local = _int(ctx.arg("data_parallel_size_local"))
    gpus = ctx.gpu_count
    if event is None:
        # No log yet: on one node, DP ranks x TP x PP above the GPUs at hand never start.
        found = gpus_at_hand(ctx)
        ranks = dp_local or (dp if ctx.nodes == 1 else None)
        if ctx.events or not found or not ranks or ranks < 2 or ranks * tp * pp <= found[0]:
            return []
        gpus = found[0]
        evidence = [
            f"{found[1]}: {ranks} data-parallel ranks x TP {tp} x PP {pp} = {ranks * tp * pp} "
            f"GPUs, {gpus} there"
        ]
    else:
        evidence = [event.line.strip()[:400]]
    room = _int(event.fields.get("dp_available")) if event is not None else None
    if room is None and gpus:
        room = gpus // (tp * pp)
    knob = "data_parallel_size_local" if dp_local else "data_parallel_size"
    current = dp_local or dp
    target = None
    if room is not None:
        target = room if dp_local else room * max(ctx.nodes, 1)
        evidence.append(
            f"each data-parallel rank takes TP {tp} x PP {pp} = {tp * pp} GPUs: a node holds "
            f"{room} of them"
        )
    if target is not None and not 1 <= target < current:
        target = None
    acts = (
        Action(
            knob,
            "lower",
            target,
            "data-parallel ranks x TP x PP must fit the GPUs of each node",
            "fewer replicas: less throughput",
            step=3,
        ),
    )
    title = "More data-parallel ranks than the GPUs of a node hold"
    return [Finding("dp-exceeds-gpus", 3, "error", title, tuple(evidence), acts)]


def vllm_split(layers: int, pp: int) -> list[int]:
    """vLLM's own split (get_pp_indices): equal stages, the remainder one layer each on the
    stages before the last (the last also holds the norm and the LM head)."""
    parts = [layers // pp] * pp
    for i in range(2, layers % pp + 2):
        parts[-i] += 1
    return parts


def pp_partition_invalid(ctx) -> list[Finding]:
    event = _first(ctx, "pp_partition_invalid")
    if event is None:
        return []
    layers = _int(event.fields.get("layers")) or getattr(ctx.model, "num_layers", None)
    pp = _int(event.fields.get("pp")) or max(ctx.knobs.pp, 1)
    evidence = [event.line.strip()[:400]]
    value = None
    if layers and 1 < pp <= layers:
        value = ",".join(map(str, vllm_split(layers, pp)))
        evidence.append(
            f"VLLM_PP_LAYER_PARTITION needs {pp} comma-separated layer counts summing to the "
            f"{layers} layers; vLLM's own split is {value}"
        )
    acts = (
        Action(
            "VLLM_PP_LAYER_PARTITION",
            "set",
            value,
            "one layer count per pipeline stage, summing to the model's layers (or unset it: "
            "vLLM then splits the layers itself)",
            "an uneven split makes the longest stage the pace of the pipeline",
            step=3,
        ),
    )
    title = "VLLM_PP_LAYER_PARTITION does not fit the pipeline"
    return [Finding("pp-partition-invalid", 3, "error", title, tuple(evidence), acts)]


def eplb_experts_uneven(ctx) -> list[Finding]:
    event = _first(ctx, "eplb_experts_uneven")
    if event is None:
        return []
    experts, ep = _int(event.fields.get("experts")), _int(event.fields.get("ep"))
    evidence = [event.line.strip()[:400]]
    acts = []
    if experts and ep:
        extra = -experts % ep
        current = _int(ctx.arg("num_redundant_experts")) or 0
        version = parse_version(ctx.version)
        flag = (
            "--eplb-config '{\"num_redundant_experts\": N}'"
            if version is None or version >= _EPLB_CONFIG_SINCE
            else "--num-redundant-experts N"
        )
        evidence.append(
            f"{experts} experts over {ep} EP ranks: {extra} more redundant experts make "
            f"{experts + extra}, {(experts + extra) // ep} per rank"
        )
        acts.append(
            Action(
                "num_redundant_experts",
                "raise",
                current + extra,
                f"EPLB places the experts evenly: their count must divide by the EP ranks ({flag})",
                "each redundant expert costs one expert's weights on its GPU",
                step=3,
            )
        )
    acts.append(
        Action(
            "enable_eplb",
            "set",
            False,
            "without the load balancer vLLM places the experts unevenly itself",
            "no expert load balancing",
        )
    )
    title = "EPLB cannot spread the experts evenly over the EP ranks"
    return [Finding("eplb-experts-uneven", 3, "error", title, tuple(evidence), tuple(acts))]


def ep_without_moe(ctx) -> list[Finding]:
    event = _first(ctx, "ep_without_moe")
    if event is None:
        return []
    acts = (
        Action(
            "enable_expert_parallel",
            "set",
            False,
            "the model has no experts: expert parallelism needs a mixture-of-experts model",
            "none",
            step=3,
        ),
    )
    title = "Expert parallelism is on for a model without experts"
    return [Finding("ep-without-moe", 3, "error", title, (event.line.strip()[:400],), acts)]


def ep_required(ctx) -> list[Finding]:
    """A MoE kernel (DeepSeek V4's MegaMoE, EPLB) that runs only with expert parallelism: turn
    it on; with it already on the refusal is a bug (vllm#55914, fixed in the engine)."""
    event = _first(ctx, "ep_required")
    if event is None:
        return []
    evidence = [event.line.strip()[:400]]
    if _ep_on(ctx):
        evidence.append(
            "not a configuration problem: --enable-expert-parallel is on already, so vLLM "
            "refuses its own layout (a bug fixed in later builds: upgrade)"
        )
        title = "vLLM refuses expert parallelism that is on (upgrade / known bug)"
        return [Finding("ep-required-bug", None, "error", title, tuple(evidence), ())]
    acts = (
        Action(
            "enable_expert_parallel",
            "set",
            True,
            "this MoE path places whole experts on each GPU: it needs expert parallelism",
            "all-to-all traffic between the GPUs for the experts",
            step=3,
        ),
    )
    title = "This MoE configuration needs --enable-expert-parallel"
    return [Finding("ep-required", 3, "error", title, tuple(evidence), acts)]


def _ep_on(ctx) -> bool:
    value = ctx.arg("enable_expert_parallel")
    return value is True or str(value).lower() in ("true", "1")


RULES = (world_size_too_large, dp_exceeds_gpus, pp_partition_invalid, eplb_experts_uneven,
         ep_without_moe, ep_required)  # fmt: skip
