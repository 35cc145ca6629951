"""`headroom plan`: the five steps forwards, before launch.

1. Memory -> the lowest TP whose per-GPU weights leave KV room for context x concurrency.
2. Heads and interconnect -> the highest TP: heads must divide (vLLM's exact rule), and
   without NVLink TP stays at 4 or below (PCIe all-reduce on every layer).
3. TP inside a node, PP across nodes: PP only when one node cannot hold the model.
4. gpu_memory_utilization first, then max_model_len; max_num_seqs from the concurrency.
5. fp8 KV cache only when the wanted tokens do not fit otherwise (needs a quality check).
Goal "latency" takes the highest TP in bounds; "throughput" the lowest, with the node's other
GPUs as data-parallel replicas.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from headroom.doctor.candidates import MAX_UTILIZATION, needed_utilization
from headroom.doctor.estimate_error import (
    KV_ESTIMATE_ERROR_GIB,
    KV_ESTIMATE_ERROR_REL,
    fit_range,
)
from headroom.doctor.gpu_spec import GpuSpec
from headroom.doctor.memory_model import (
    Knobs,
    MemoryAccount,
    account,
    heads_valid,
    knobs_from_command,
)
from headroom.doctor.model_bytes import GIB
from headroom.doctor.versions import (
    default_utilization,
    effective_version,
    rules_text,
)
from headroom.probes.topology_verdict import tp_verdicts
from headroom.vllm_cmd import render

PCIE_TP_LIMIT = 4


@dataclass(frozen=True)
class Plan:
    """A layout, its accounting and the reasons, ready to print or dump as JSON."""

    model_name: str
    gpu: GpuSpec
    nodes: int
    context: int
    concurrency: int
    goal: str
    tp: int
    pp: int
    dp: int
    account: MemoryAccount
    tp_lower: int | None
    tp_lower_why: str
    tp_upper: int
    tp_upper_why: str
    steps: tuple[tuple[int, str, str], ...]  # (step, status, text)
    command: tuple[str, ...]
    fits: bool
    notes: tuple[str, ...] = field(default_factory=tuple)
    evaluated_command: bool = False
    rules: str = ""  # which vLLM release's rules the accounting used
    fit_range: tuple[int, int] | None = None  # max_model_len that fits, low..high
    range_reasons: tuple[str, ...] = ()


def _valid(model, limit: int) -> list[int]:
    return [tp for tp in range(1, limit + 1) if heads_valid(model, tp)]


def _acc(model, gpu, knobs, version, tp, pp) -> MemoryAccount:
    return account(model, gpu, replace(knobs, tp=tp, pp=pp), version)


def _fits(acc: MemoryAccount, wanted: int) -> bool:
    """`wanted` tokens in the blocks requests can use (vLLM's null block kept out)."""
    return acc.kv_cache_gib > 0 and acc.usable_tokens >= wanted


def plan(
    model,
    gpu: GpuSpec,
    *,
    nodes: int = 1,
    context: int | None = None,
    concurrency: int = 1,
    goal: str = "latency",
    version: str | None = None,
    command=None,
    topology=None,
) -> Plan:
    """Choose (or, given a command line, evaluate) a TP/PP layout for `model` on `gpu` x nodes."""
    if goal not in ("latency", "throughput"):
        raise ValueError(f"goal must be latency or throughput, not {goal!r}")
    base = knobs_from_command(command) if command is not None else Knobs()
    ver = effective_version(version)
    context = context or base.max_model_len or model.max_position_embeddings or 8192
    concurrency = max(concurrency, 1)
    wanted = context * concurrency
    base = replace(base, max_model_len=context)
    if command is None:
        base = replace(base, max_num_seqs=concurrency if concurrency > 1 else None)
    per_node = gpu.count
    notes: list[str] = []

    valid = _valid(model, per_node)
    # Step 2: the upper bound.
    upper = max(valid) if valid else 1
    upper_why = f"{model.num_attention_heads} heads / {model.num_kv_heads} KV heads allow TP {valid} within {per_node} GPUs"
    poor = _poor_tps(topology, valid) if topology is not None else set()
    if poor and upper in poor:
        upper = max([t for t in valid if t not in poor] or [1])
        upper_why += f"; the topology makes TP {sorted(poor)} poor (slow links), so TP <= {upper}"
    elif topology is None and not gpu.nvlink and upper > PCIE_TP_LIMIT:
        upper = max(t for t in valid if t <= PCIE_TP_LIMIT)
        upper_why += f"; no NVLink, so TP <= {PCIE_TP_LIMIT} (all-reduce over PCIe on every layer)"
    # Step 1: the lower bound, inside one node.
    lower = next(
        (t for t in valid if t <= upper and _fits(_acc(model, gpu, base, version, t, 1), wanted)),
        None,
    )
    if lower is not None:
        lower_why = f"TP {lower} is the smallest that holds the weights and {wanted:,} KV tokens"
    else:
        lower_why = f"no TP up to {upper} in one node holds the weights and {wanted:,} KV tokens"

    if command is not None:
        tp, pp = base.tp, base.pp
        notes.append("evaluating the given command line")
    elif lower is not None:
        tp, pp = (upper if goal == "latency" else lower), 1
    else:
        # Step 3: PP across nodes, TP inside each. Inside one node PP is the answer only when
        # slow links cap TP (TP over PHB/SYS wants PP instead).
        tp, pp = upper, max(nodes, 1)
        slow_node = (topology is not None and upper < per_node) or not gpu.nvlink
        max_pp = per_node * max(nodes, 1) // max(upper, 1) if slow_node else max(nodes, 1)
        for p in range(2, max(max_pp, 1) + 1):
            fitting = [t for t in valid if t <= upper and t * p <= per_node * max(nodes, 1)
                       and _fits(_acc(model, gpu, base, version, t, p), wanted)]  # fmt: skip
            if fitting:
                tp, pp = (max(fitting) if goal == "latency" else min(fitting)), p
                if nodes <= 1 or p > nodes:
                    notes.append(f"PP {p} inside a node: its links are too slow for a wider TP")
                break
    acc = _acc(model, gpu, base, version, tp, pp)
    fits = _fits(acc, wanted)
    if not fits and command is None and base.gpu_memory_utilization is None:
        # Step 4's free knob first: raise gpu_memory_utilization (to what the wanted tokens
        # need, at most 0.95) before any cut of max_model_len.
        raised = _raise_utilization(model, gpu, base, version, tp, pp, wanted, ver)
        if raised is not None:
            base, acc = raised
            fits = _fits(acc, wanted)
            notes.append(
                f"step 4: gpu_memory_utilization {acc.utilization:.2f} (default "
                f"{default_utilization(ver)}) gives the KV cache "
                + ("what the wanted tokens need" if fits else "the most it can have (0.95)")
            )
    kv_dtype = base.kv_cache_dtype
    if not fits and not kv_dtype.startswith("fp8") and command is None:
        fp8 = account(model, gpu, replace(base, tp=tp, pp=pp, kv_cache_dtype="fp8"), version)
        if _fits(fp8, wanted):
            acc, fits, kv_dtype = fp8, True, "fp8"
            notes.append(
                "step 5: only an fp8 KV cache holds the wanted tokens; check output quality"
            )
    if pp > 1 and nodes > 1:
        notes.append(
            "across nodes: start with Ray (--distributed-executor-backend ray) or with "
            f"--nnodes {min(nodes, pp)} and --node-rank on each node"
        )
    if not fits:
        where = "with the given flags" if command is not None else f"on {nodes} node(s)"
        notes.append(
            f"does not fit {where}: lower --context or --concurrency, add GPUs, or quantize"
        )
    dp = max(per_node // tp, 1) if (goal == "throughput" and pp == 1 and command is None) else 1
    steps = _steps(
        model,
        gpu,
        acc,
        lower,
        lower_why,
        upper,
        upper_why,
        tp,
        pp,
        nodes,
        wanted,
        fits,
        kv_dtype,
        ver,
    )
    recommended = None
    low, high, reasons = fit_range(model, gpu, replace(base, tp=tp, pp=pp, kv_cache_dtype=kv_dtype),
                                   version, acc)  # fmt: skip
    if command is None and acc.max_model_len_fit < acc.max_model_len:
        recommended, why = recommended_max_model_len(acc, low)
        notes.append(why)
    argv = _command(model, tp, pp, dp, acc, base, kv_dtype, ver, command, recommended)
    return Plan(
        getattr(model, "name", "model"),
        gpu,
        nodes,
        context,
        concurrency,
        goal,
        tp,
        pp,
        dp,
        acc,
        lower,
        lower_why,
        upper,
        upper_why,
        steps,
        tuple(argv),
        fits,
        tuple(notes),
        command is not None,
        rules_text(version),
        (low, high),
        tuple(reasons),
    )


def _raise_utilization(model, gpu, base, version, tp, pp, wanted, ver):
    """(knobs, account) with gpu_memory_utilization raised to what `wanted` tokens need, or
    to 0.95 when even that is short; None when the default is already 0.95 or more."""
    default = default_utilization(ver)
    if default >= MAX_UTILIZATION:
        return None
    knobs = replace(base, tp=tp, pp=pp)
    need = needed_utilization(model, gpu, knobs, version, wanted)
    util = MAX_UTILIZATION if need is None else min(max(need, default), MAX_UTILIZATION)
    if util <= default:
        return None
    knobs = replace(base, gpu_memory_utilization=util)
    return knobs, _acc(model, gpu, knobs, version, tp, pp)


def _poor_tps(topology, sizes: list[int]) -> set[int]:
    return {v.tp for v in tp_verdicts(topology, sizes) if v.level in ("poor", "impossible")}


def _steps(
    model, gpu, acc, lower, lower_why, upper, upper_why, tp, pp, nodes, wanted, fits, kv_dtype, ver
):
    if lower is None and fits and pp > 1:
        s1 = ("ok", f"{lower_why}, so TP {tp} x PP {pp}: weights {acc.weights_gib:.2f} GiB per GPU")
    else:
        # weights above the whole budget cannot load at any context: that is a failure
        s1 = (
            "ok" if lower is not None else "fail" if acc.weights_gib > acc.budget_gib else "warn",
            f"{lower_why}; weights {acc.weights_gib:.2f} GiB per GPU",
        )
    s2 = ("ok" if heads_valid(model, tp) else "fail", upper_why)
    if pp > 1 and nodes > 1:
        s3 = ("ok", f"TP {tp} inside each node, PP {pp} across {nodes} nodes")
    elif pp > 1 and upper < tp * pp:
        s3 = ("ok", f"PP {pp} inside one node: links too slow for TP {tp * pp}, TP {tp} per stage")
    elif pp > 1:
        s3 = ("warn", f"PP {pp} inside one node: prefer TP when the links allow")
    else:
        s3 = ("ok", f"TP {tp} inside one node, no PP")
    s4 = (
        "ok" if fits else "fail",
        f"utilization {acc.utilization:.2f}: KV {acc.kv_capacity_tokens:,} tokens for {wanted:,} wanted "
        f"(max_model_len fits up to {acc.max_model_len_fit:,})",
    )
    s5 = (
        "ok",
        "fp8 KV cache needed to fit" if kv_dtype.startswith("fp8") else "16-bit KV cache is enough",
    )
    if not fits:
        s5 = ("warn", "even fp8 KV does not reach the wanted tokens")
    return tuple((i + 1, status, text) for i, (status, text) in enumerate((s1, s2, s3, s4, s5)))


def recommended_max_model_len(acc: MemoryAccount, low: int | None = None) -> tuple[int, str]:
    """The --max-model-len to recommend when the wanted context does not fit, and why.

    acc.max_model_len_fit is the raw estimate (vLLM's own refusal threshold if the estimate
    were exact). The recommendation is the low end of the fit's range (fit_range: the
    estimate's measured error, and the releases' spread when the release is unknown), rounded
    down to a multiple of 1024 (256 below 16K, the block size below 1K), and it says so:
    a margin with its reason, not a silent cut. The model's position limit is exact."""
    fit = acc.max_model_len_fit
    if low is None:
        per_token = max(acc.kv_bytes_per_token, 1)
        error_gib = max(acc.kv_cache_gib * KV_ESTIMATE_ERROR_REL, KV_ESTIMATE_ERROR_GIB)
        low = max(fit - int(error_gib * GIB // per_token), 0)
    safe = min(low, fit)
    step = 1024 if safe >= 16384 else 256 if safe >= 1024 else max(acc.block_size, 1)
    safe = safe // step * step
    if acc.position_limit and acc.position_limit <= safe:
        return acc.position_limit, (
            f"--max-model-len {acc.position_limit:,}: the model's own limit (the KV cache holds more)"
        )
    if safe < 16:
        return fit, (
            f"--max-model-len {fit:,} is the estimated fit with no margin: the KV cache is "
            f"smaller than the estimate's error, so vLLM may refuse it; add GPUs or lower "
            "the context"
        )
    return safe, (
        f"--max-model-len {safe:,}, the low end of the fit's range (estimated fit "
        f"{fit:,}, below the estimated fit of {fit:,} by the estimate's measured error; "
        "vLLM prints the exact figure at start-up: 'GPU KV cache size'), rounded down to a "
        f"multiple of {step}"
    )


def _command(model, tp, pp, dp, acc, base, kv_dtype, ver, command, recommended=None) -> list[str]:
    if command is not None:
        return render(command)
    argv = ["vllm", "serve", getattr(model, "name", "MODEL"), "--tensor-parallel-size", str(tp)]
    if pp > 1:
        argv += ["--pipeline-parallel-size", str(pp)]
    if dp > 1:
        argv += ["--data-parallel-size", str(dp)]
    if acc.max_model_len_fit >= 16:
        length = recommended or min(acc.max_model_len, acc.max_model_len_fit)
        argv += ["--max-model-len", str(length)]
    if base.max_num_seqs:
        argv += ["--max-num-seqs", str(base.max_num_seqs)]
    if acc.utilization != default_utilization(ver):
        argv += ["--gpu-memory-utilization", f"{acc.utilization:.2f}"]
    if kv_dtype != "auto":
        argv += ["--kv-cache-dtype", kv_dtype]
    return argv


def plan_to_json(p: Plan) -> dict[str, object]:
    """The `headroom plan --json` document (keys listed in the README)."""
    a = p.account
    return {
        "model": p.model_name,
        "gpus": p.gpu.describe(),
        "nodes": p.nodes,
        "vllm_version": a.version,
        "rules": p.rules,
        "max_model_len_fit_range": list(p.fit_range) if p.fit_range else None,
        "range_reasons": list(p.range_reasons),
        "goal": p.goal,
        "context": p.context,
        "concurrency": p.concurrency,
        "tensor_parallel_size": p.tp,
        "pipeline_parallel_size": p.pp,
        "data_parallel_size": p.dp,
        "tp_lower_bound": p.tp_lower,
        "tp_lower_reason": p.tp_lower_why,
        "tp_upper_bound": p.tp_upper,
        "tp_upper_reason": p.tp_upper_why,
        "gpu_memory_utilization": a.utilization,
        "budget_gib_per_gpu": a.budget_gib,
        "weights_gib_per_gpu": a.weights_gib,
        "activation_gib": a.activation_gib,
        "overhead_gib": a.overhead_gib,
        "cudagraph_gib": a.cudagraph_gib,
        "kv_cache_gib_per_gpu": a.kv_cache_gib,
        "kv_bytes_per_token": a.kv_bytes_per_token,
        "kv_capacity_tokens": a.kv_capacity_tokens,
        "max_model_len": a.max_model_len,
        "max_model_len_fit": a.max_model_len_fit,
        "max_concurrency": a.max_concurrency,
        "fits": p.fits,
        "steps": [{"step": s, "status": st, "why": text} for s, st, text in p.steps],
        "arithmetic": list(a.arithmetic),
        "command": list(p.command),
        "notes": list(p.notes),
    }
