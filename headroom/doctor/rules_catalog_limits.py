"""Rules for the catalog entries found by walking vLLM's sources (probes/vllm_catalog/limits.py):
each reads the event's numbers, never its sentence.

- CPU swap space (V0): vLLM refuses (above 70 % of the host's RAM) or warns (above 40 %) when
  --swap-space GiB per GPU times the GPUs of a node is too much of the host's memory: lower
  --swap-space; it aborts when swapped-out sequences fill the swap: raise it.
- The Ray driver without a GPU: vLLM must run on a node whose GPUs are in the placement
  group; up to 0.5, --engine-use-ray let Ray place the engine itself.
- Quantized weights a TP cannot split (Marlin/GPTQ/AWQ groups, fp8 blocks): rules_quant_tp.py.
- A pre-quantized bitsandbytes checkpoint with TP: TP 1, the same GPUs as pipeline stages.
- Pipeline parallelism an old release lacks (0.2-0.5): upgrade, no knob.
- fp8 KV scales a release cannot load, CUDA used before vLLM forked: named, no engine knob.
- vLLM's own text calls it a bug: say so, turn no knob.
"""

from __future__ import annotations

import math

from headroom.doctor.findings import Action, Finding
from headroom.doctor.versions import parse_version

# vLLM's CPU-memory gates for the swap space (CacheConfig.verify_with_parallel_config, 0.2.7
# to 0.11.0): above 0.7 x RAM it refuses, above 0.4 x RAM it warns.
_SWAP_WARN_SHARE = 0.4
_DEFAULT_SWAP_GIB = 4.0  # --swap-space's default in every release that has it
# --engine-use-ray: in arg_utils.py from 0.2.7 to 0.6.1 (0.5.5-0.6.1 refuse it unless
# VLLM_ALLOW_ENGINE_USE_RAY=1: async_llm_engine.py), gone in 0.6.2 (the wheels).
_ENGINE_USE_RAY_UNTIL = (0, 6, 2)
# VLLM_WORKER_MULTIPROC_METHOD (envs.py): read from 0.4.2; its default is "spawn" in
# 0.4.2-0.5.0.post1 and "fork" from 0.5.1 on (0.6.3+ switch to spawn by themselves when they
# see CUDA initialised: multiproc_gpu_executor.py, later utils._check_multiproc_method).
_FORK_DEFAULT_SINCE = (0, 5, 1)


def _first(ctx, *kinds: str):
    for kind in kinds:
        events = ctx.of(kind)
        if events:
            return events[0]
    return None


def _num(fields, name: str, kind=float):
    try:
        value = kind(fields[name])
    except (KeyError, TypeError, ValueError):
        return None
    return value if value >= 0 else None


def _swap_per_gpu(ctx) -> float:
    given = _num({"v": ctx.arg("swap_space")}, "v")
    return given if given is not None else _DEFAULT_SWAP_GIB


def swap_space_too_large(ctx) -> list[Finding]:
    """ "Too large swap space. S GiB out of the T GiB total CPU memory is allocated for the
    swap space." S is --swap-space times the node's TP ranks; below 0.4 x T nothing warns."""
    event = _first(ctx, "swap_space_too_large", "swap_space_large")
    if event is None:
        return []
    swap, total = (_num(event.fields, k) for k in ("swap_gib", "cpu_total_gib"))
    per_gpu = _swap_per_gpu(ctx)
    evidence = [event.line.strip()[:400]]
    value = None
    if swap and total:
        ranks = max(round(swap / per_gpu), 1) if per_gpu > 0 else max(ctx.knobs.tp, 1)
        value = max(math.floor(_SWAP_WARN_SHARE * total / ranks), 0)
        evidence.append(
            f"{swap:.1f} GiB of swap ({ranks} GPU(s) x {swap / ranks:.1f} GiB) is "
            f"{100 * swap / total:.0f}% of the host's {total:.1f} GiB RAM; vLLM refuses above 70% "
            f"and warns above 40%"
        )
    act = Action(
        "swap_space",
        "lower",
        value,
        "the CPU swap space is pinned host memory for every GPU of the node"
        + (f": at most {value} GiB per GPU keeps it under 40% of RAM" if value is not None else ""),
        "sequences preempted for parallel sampling or beam search have less room to swap "
        "(0 disables swapping; greedy requests are recomputed, not swapped)",
    )
    error = event.kind == "swap_space_too_large"
    title = "The CPU swap space is too large for this host's memory"
    return [
        Finding(
            "swap-space-too-large",
            None,
            "error" if error else "warning",
            title,
            tuple(evidence),
            (act,),
        )  # fmt: skip
    ]


def swap_space_exhausted(ctx) -> list[Finding]:
    """ "Aborted due to the lack of CPU swap space": V0 swaps out the groups of parallel
    sampling / beam search when the KV cache is full, and the swap filled up."""
    event = _first(ctx, "swap_space_exhausted")
    if event is None:
        return []
    per_gpu = _swap_per_gpu(ctx)
    act = Action(
        "swap_space",
        "raise",
        max(per_gpu * 2, 1.0),
        "swapped-out sequences (parallel sampling, beam search) filled the CPU swap space",
        "more pinned host memory per GPU (keep swap x GPUs under 40% of RAM)",
    )
    evidence = (
        event.line.strip()[:400],
        "the KV cache was full, so vLLM preempted by swapping; a larger KV cache (step 4) or "
        "fewer parallel samples per request (n, best_of) swaps less",
    )
    title = "vLLM aborted: the CPU swap space ran out"
    return [Finding("swap-space-exhausted", None, "error", title, evidence, (act,))]


def ray_driver_without_gpu(ctx) -> list[Finding]:
    """The process that starts vLLM is the Ray driver and must hold one of the placement
    group's GPUs; vLLM started on a CPU-only node (or one whose GPUs another job holds)."""
    event = _first(ctx, "ray_driver_without_gpu")
    if event is None:
        return []
    # Only 0.2.7-0.6.1 had --engine-use-ray, and the text is the same from 0.2.7 to 0.7.3: offered
    # only when the release is known. Otherwise the fix is where vLLM starts (the text's own
    # advice), and a library that drives vLLM from a Ray actor places that actor.
    version = parse_version(ctx.version)
    old_release = version is not None and version < _ENGINE_USE_RAY_UNTIL
    evidence = [
        event.line.strip()[:400],
        "start vLLM on a node of the Ray cluster that has free GPUs (the node `ray status` "
        "lists with GPUs), and check that no other job holds that node's GPUs",
    ]
    ip = event.fields.get("driver_ip")
    if ip:
        evidence.append(f"the driver ran on {ip}: VLLM_HOST_IP must be the IP Ray registered")
    acts: tuple[Action, ...] = ()
    if old_release and "does not allocate any GPUs" in event.line:
        acts = (
            Action(
                "engine_use_ray",
                "set",
                True,
                "up to vLLM 0.6.1 the engine can run as a Ray actor that Ray places on a GPU node "
                "(0.5.5-0.6.1 also need VLLM_ALLOW_ENGINE_USE_RAY=1; removed in 0.6.2)",
                "one more process hop for every request",
            ),
        )
    title = "vLLM runs on a Ray node without a GPU of its placement group"
    return [Finding("ray-driver-without-gpu", None, "error", title, tuple(evidence), acts)]


def quantized_tp_unsupported(ctx) -> list[Finding]:
    """A pre-quantized bitsandbytes checkpoint loads without TP only (0.7-0.11)."""
    event = _first(ctx, "quantized_tp_unsupported")
    if event is None:
        return []
    gpus = max(ctx.knobs.tp * ctx.knobs.pp, 1)
    acts = [
        Action(
            "tensor_parallel_size",
            "lower",
            1,
            "vLLM loads a pre-quantized bitsandbytes checkpoint only without tensor parallelism",
            "one GPU per stage: pipeline bubbles at low concurrency",
            also=(("pipeline_parallel_size", gpus),) if gpus > 1 else (),
            step=2,
        )
    ]
    if gpus > 1:
        acts.append(
            Action(
                "pipeline_parallel_size",
                "raise",
                gpus,
                f"the same {gpus} GPUs as pipeline stages, as vLLM's text says",
                "pipeline bubbles at low concurrency",
                also=(("tensor_parallel_size", 1),),
            )
        )
    title = "A pre-quantized bitsandbytes checkpoint cannot run tensor parallel"
    evidence = (event.line.strip()[:400],)
    return [Finding("quantized-tp-unsupported", 2, "error", title, evidence, tuple(acts))]


def pp_unsupported_release(ctx) -> list[Finding]:
    """0.2-0.4 have no pipeline parallelism and 0.5 runs it for a short list of architectures;
    later releases run it for almost every model: an upgrade, not a setting."""
    event = _first(ctx, "pp_unsupported_release")
    if event is None:
        return []
    evidence = (
        event.line.strip()[:400],
        "not a configuration problem: newer vLLM releases run pipeline parallelism for almost "
        "every model; upgrade. To start on this release meanwhile: --pipeline-parallel-size 1 "
        "(the GPUs as tensor parallel, if the heads divide)",
    )
    title = "This vLLM release cannot run this model pipeline parallel (upgrade)"
    return [Finding("pp-unsupported-release", None, "error", title, evidence, ())]


def fp8_kv_scale_unsupported(ctx) -> list[Finding]:
    """ "Only support per-tensor scaling factor for fp8 KV cache" (0.4.3-0.33.0): the KV scales
    vLLM read are not one number per tensor: a checkpoint with per-channel/per-head KV scales,
    or, with fp8 checkpoints without KV scales, a default-scale bug fixed in vLLM (PR #6761)."""
    event = _first(ctx, "kv_scale_unsupported")
    if event is None:
        return []
    evidence = (
        event.line.strip()[:400],
        "not a configuration problem: upgrade vLLM (or a checkpoint with one KV scale per "
        "layer); --kv-cache-dtype auto starts without an fp8 KV cache (twice the KV bytes)",
    )
    title = "vLLM cannot load these fp8 KV-cache scales (upgrade / known bug)"
    return [Finding("fp8-kv-scale-unsupported", None, "error", title, evidence, ())]


def cuda_forked_subprocess(ctx) -> list[Finding]:
    """torch's "Cannot re-initialize CUDA in forked subprocess": the script touched CUDA before
    vLLM forked its worker processes (TP > 1 with the multiprocessing executor). From 0.5.1 vLLM
    forks by default and VLLM_WORKER_MULTIPROC_METHOD=spawn is the fix (fastchat #3507); in
    0.4.2-0.5.0.post1 vLLM already spawns, so the fork is the program's own (vllm #6152: "you
    might initialized cuda before using vLLM") and no setting of vLLM's changes it."""
    event = _first(ctx, "cuda_forked_subprocess")
    if event is None:
        return []
    version = parse_version(ctx.version)
    spawns_already = version is not None and version < _FORK_DEFAULT_SINCE
    evidence = [
        event.line.strip()[:400],
        "the program used CUDA (torch.cuda, a model on the GPU) before a process was forked: "
        'create the vLLM engine first, under `if __name__ == "__main__":`',
    ]
    acts: tuple[Action, ...] = ()
    if spawns_already:
        evidence.append(
            f"vLLM {ctx.version} starts its workers with spawn already (its default until "
            "0.5.1): the fork is the program's own (its multiprocessing, a DataLoader)"
        )
    else:
        acts = (
            Action(
                "VLLM_WORKER_MULTIPROC_METHOD",
                "set",
                "spawn",
                "vLLM's workers start fresh instead of forking a process that already holds "
                "CUDA (fork is vLLM's default from 0.5.1; 0.6.3+ switch by themselves when they "
                "see CUDA in use, so there the fork may be the program's own)",
                'slower worker start; a script needs its `if __name__ == "__main__":` guard',
            ),
        )
    title = "CUDA was initialised before vLLM forked its workers"
    return [Finding("cuda-forked-subprocess", None, "error", title, tuple(evidence), acts)]


def vllm_reported_bug(ctx) -> list[Finding]:
    """vLLM's own text says the state it reached is a bug: no knob is the fix."""
    event = _first(ctx, "vllm_bug")
    if event is None:
        return []
    evidence = (
        event.line.strip()[:400],
        "not a configuration problem: vLLM's own message calls this a bug; upgrade vLLM, or "
        "report it with the log",
    )
    title = "vLLM reports a bug of its own (upgrade / known bug)"
    return [Finding("vllm-reported-bug", None, "error", title, evidence, ())]


RULES = (
    swap_space_too_large,
    swap_space_exhausted,
    ray_driver_without_gpu,
    quantized_tp_unsupported,
    pp_unsupported_release,
    fp8_kv_scale_unsupported,
    cuda_forked_subprocess,
    vllm_reported_bug,
)
