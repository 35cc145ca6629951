"""Candidate configurations: the doctor's fixes are searched and checked, not guessed.

A fix for one step must not break another. So a fix is a whole configuration (TP, PP,
utilization or --kv-cache-memory-bytes, max_model_len, max_num_seqs, max_num_batched_tokens,
kv_cache_dtype, enforce_eager, a quantized checkpoint when the model is not one already),
kept only when it passes every step:
  step 2: heads divide TP (vLLM's exact rule);
  step 3: TP inside a node, TP x PP within the GPUs there are;
  step 1 + 4: weights + activation + graphs + the wanted KV fit per GPU, by the memory model
  for the vLLM release in use.
Feasible candidates are ranked by the mitigation order (free knobs first, hardware last) and
then by what each gives up; the best one becomes the finding's actions, one knob at a time
(candidate_actions.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from headroom.doctor.memory_model import Knobs, MemoryAccount, account, heads_valid
from headroom.doctor.model_bytes import GIB, kv_bytes_per_token
from headroom.doctor.versions import (
    default_utilization,
    effective_version,
    profile_follows_length,
)

MAX_UTILIZATION = 0.95  # above it the CUDA context and graphs have no room left
UTIL_MARGIN = 0.01  # of the GPU on top of a computed utilization (the estimate's error)

# Mitigation order: the tier of each knob (lower = try first). Free knobs, then the batch
# limits, then the context, the KV dtype (quality check), eager mode (speed), then hardware.
TIER = {
    "gpu_memory_utilization": 1,
    "kv_cache_memory_bytes": 1,
    "max_num_batched_tokens": 2,
    "max_num_seqs": 2,
    "max_model_len": 3,
    "kv_cache_dtype": 4,
    "enforce_eager": 5,
    "tensor_parallel_size": 6,
    "pipeline_parallel_size": 7,
    "quantization": 8,
}
COST = {
    "gpu_memory_utilization": "less slack for the CUDA context, graphs and other processes",
    "kv_cache_memory_bytes": "less memory left for activations and CUDA graphs",
    "max_num_batched_tokens": "long prompts prefill in more chunks: slower time to first token",
    "max_num_seqs": "fewer requests run at once: lower throughput under load",
    "max_model_len": "requests longer than this are rejected",
    "kv_cache_dtype": "about half the KV bytes per token; check output quality",
    "enforce_eager": "no CUDA graphs: slower decoding, most at small batch sizes",
    "tensor_parallel_size": "more GPUs, and an all-reduce on every layer",
    "pipeline_parallel_size": "more GPUs and a longer path per token: bubbles at low load",
    "quantization": "a different (quantized) checkpoint: some quality loss",
}
# An engine argument (as in Action.knob) -> the Knobs field it sets.
KNOB_FIELD = {
    "tensor_parallel_size": "tp",
    "pipeline_parallel_size": "pp",
    "gpu_memory_utilization": "gpu_memory_utilization",
    "kv_cache_memory_bytes": "kv_cache_memory_bytes",
    "max_model_len": "max_model_len",
    "max_num_seqs": "max_num_seqs",
    "max_num_batched_tokens": "max_num_batched_tokens",
    "kv_cache_dtype": "kv_cache_dtype",
    "enforce_eager": "enforce_eager",
    "quantization": "quantization",
}
MEMORY_CODES = ("no-kv", "one-request", "wanted")


@dataclass(frozen=True)
class Problem:
    code: str  # "heads" | "node" | "gpus" | "layers" | "no-kv" | "one-request" | "wanted"
    text: str


@dataclass(frozen=True)
class Candidate:
    knobs: Knobs
    changes: tuple[tuple[str, object], ...]  # (engine-arg name, new value), mitigation order
    account: MemoryAccount
    rank: tuple

    @property
    def gpus(self) -> int:
        return self.knobs.tp * self.knobs.pp


def apply(knobs: Knobs, changes) -> Knobs:
    """Knobs with engine-arg changes applied (names as in Action.knob); unknown names ignored."""
    fields = {KNOB_FIELD[k]: v for k, v in dict(changes).items() if k in KNOB_FIELD}
    return replace(knobs, **fields) if fields else knobs


def is_quantized(model, knobs: Knobs) -> bool:
    """A quantized checkpoint (quantization_config in config.json) or --quantization given."""
    return bool(
        knobs.quantization
        or getattr(model, "quantization", None)
        or getattr(model, "quantization_config", None)
    )


def problems(
    model,
    gpu,
    knobs: Knobs,
    version: str | None,
    *,
    per_node: int | None = None,
    nodes: int = 1,
    want_tokens: int | None = None,
) -> tuple[tuple[Problem, ...], MemoryAccount]:
    """What stops `knobs` from starting (or from holding `want_tokens`), step by step."""
    out: list[Problem] = []
    tp, pp = max(knobs.tp, 1), max(knobs.pp, 1)
    if not heads_valid(model, tp):
        out.append(
            Problem(
                "heads",
                f"TP {tp} does not divide {model.num_attention_heads} heads / "
                f"{model.num_kv_heads} KV heads",
            )
        )
    per_node = per_node or (gpu.count if gpu is not None else None)
    if per_node and tp > per_node:
        out.append(Problem("node", f"TP {tp} is more than the {per_node} GPUs of one node"))
    if per_node and tp * pp > per_node * max(nodes, 1):
        out.append(Problem("gpus", f"TP {tp} x PP {pp} = {tp * pp} GPUs, {per_node * nodes} there"))
    if pp > model.num_layers:
        out.append(Problem("layers", f"PP {pp} is more than the {model.num_layers} layers"))
    acc = account(model, gpu, knobs, version)
    if acc.kv_cache_gib <= 0:
        out.append(
            Problem(
                "no-kv",
                f"weights {acc.weights_gib:.2f} + activation {acc.activation_gib:.2f} + "
                f"overhead {acc.overhead_gib:.2f}"
                + (f" + graphs {acc.cudagraph_gib:.2f}" if acc.cudagraph_in_budget else "")
                + f" GiB fill the {acc.budget_gib:.2f} GiB budget per GPU at TP {tp} x PP {pp}",
            )
        )
    elif acc.usable_tokens < acc.max_model_len:
        out.append(
            Problem(
                "one-request",
                f"KV {acc.kv_cache_gib:.2f} GiB = {acc.usable_tokens:,} usable tokens, less "
                f"than one request of {acc.max_model_len:,}",
            )
        )
    if want_tokens and acc.kv_cache_gib > 0 and acc.usable_tokens < want_tokens:
        out.append(Problem("wanted", f"{acc.usable_tokens:,} KV tokens, {want_tokens:,} wanted"))
    return tuple(out), acc


def needed_utilization(model, gpu, knobs: Knobs, version, tokens: int) -> float | None:
    """The lowest utilization (+ margin, 2 decimals) that holds `tokens` KV tokens plus the
    null block with these knobs; None when the GPU size makes it meaningless."""
    usable = gpu.min_usable_gib
    if usable <= 0:
        return None
    at_one = account(model, gpu, replace(knobs, gpu_memory_utilization=1.0), version)
    fixed = usable - at_one.kv_cache_gib  # weights + activation + overhead (+ graphs)
    per = kv_bytes_per_token(model, knobs.tp, knobs.pp, knobs.kv_cache_dtype)
    block = max(knobs.block_size, 1)
    kv_need = (-(-tokens // block) + 1) * block * per / GIB
    return math.ceil(((fixed + kv_need) / usable + UTIL_MARGIN) * 100 - 1e-9) / 100


def _fit_len_at(model, gpu, knobs: Knobs, version) -> int:
    """The longest max_model_len that starts with these knobs. V0 without chunked prefill
    profiles one max(max_model_len, 2048) prefill (versions.RELEASE_TABLE, 0.5.5 row): a
    shorter context also shrinks the activation peak, so the fit is searched (the largest
    length whose own account fits) instead of read off the KV left at this length."""
    acc = account(model, gpu, knobs, version)
    fit = acc.max_model_len_fit if acc.kv_cache_gib > 0 else 0
    ver = effective_version(version)
    batched_set = knobs.max_num_batched_tokens is not None
    if not profile_follows_length(ver, acc.max_model_len, batched_set, knobs.chunked_prefill):
        return fit
    low, high = max(fit // 16, 1), acc.max_model_len // 16  # in blocks of 16 tokens
    if account(model, gpu, replace(knobs, max_model_len=low * 16), version).fits is False:
        return fit
    while low < high:
        mid = (low + high + 1) // 2
        if account(model, gpu, replace(knobs, max_model_len=mid * 16), version).fits:
            low = mid
        else:
            high = mid - 1
    return max(fit, low * 16)


def search(
    model,
    gpu,
    base: Knobs,
    version: str | None,
    *,
    per_node: int | None = None,
    nodes: int = 1,
    want_tokens: int | None = None,
    allow: frozenset[str] | None = None,
    min_len: int = 16,
    tp_divides: tuple[int, ...] = (),
) -> list[Candidate]:
    """Every candidate over the allowed knobs that passes every step, best first.

    `want_tokens`: KV tokens the fix must hold (default one request of max_model_len).
    `allow`: the knobs that may change (default all of TIER). max_model_len may be cut, to
    no less than `min_len`, only when allowed; the utilization is raised to just what the
    wanted tokens need (never above 0.95), or left alone. `tp_divides`: sizes vLLM also
    splits by TP that the model's heads do not say (a vision encoder's heads, a quantized
    matrix's groups): a TP must divide each."""
    allow = frozenset(TIER) if allow is None else allow

    def tp_ok(t: int) -> bool:
        return heads_valid(model, t) and all(n % t == 0 for n in tp_divides)

    per_node = per_node or gpu.count
    ver = effective_version(version)
    util0 = base.gpu_memory_utilization or default_utilization(ver)
    max_len0 = base.max_model_len or model.max_position_embeddings or 4096
    base = replace(base, max_model_len=max_len0)
    tps = [base.tp]
    if "tensor_parallel_size" in allow:
        tps = [t for t in range(1, per_node + 1) if tp_ok(t)] or [base.tp]
    pps = [base.pp]
    if "pipeline_parallel_size" in allow:
        limit = min(per_node * max(nodes, 1), model.num_layers)
        pps = list(range(1, limit + 1))
    kv_dtypes = [base.kv_cache_dtype]
    if "kv_cache_dtype" in allow and not str(base.kv_cache_dtype).startswith(("fp8", "int8")):
        kv_dtypes.append("fp8")
    quants = [base.quantization]
    if "quantization" in allow and not is_quantized(model, base):
        quants.append("fp8")
    eagers = [base.enforce_eager]
    if "enforce_eager" in allow and not base.enforce_eager:
        eagers.append(True)
    batches: list[int | None] = [base.max_num_batched_tokens]
    if "max_num_batched_tokens" in allow:
        current = account(model, gpu, base, version).batched_tokens
        if current > 512:
            batches.append(max(current // 2 // 256 * 256, 256))
    found: list[Candidate] = []
    for tp in tps:
        for pp in pps:
            if tp * pp > per_node * max(nodes, 1) or (
                pp > 1
                and tp * pp <= per_node
                and "tensor_parallel_size" in allow
                and tp_ok(tp * pp)
            ):
                continue  # PP inside one node only where TP cannot take the GPUs instead
            for kv in kv_dtypes:
                for quant in quants:
                    for eager in eagers:
                        for batched in batches:
                            knobs = replace(base, tp=tp, pp=pp, kv_cache_dtype=kv,
                                            quantization=quant, enforce_eager=eager,
                                            max_num_batched_tokens=batched)  # fmt: skip
                            found.extend(
                                _with_budget(
                                    model,
                                    gpu,
                                    knobs,
                                    base,
                                    version,
                                    util0,
                                    per_node,
                                    nodes,
                                    want_tokens,
                                    allow,
                                    min_len,
                                )  # fmt: skip
                            )
    found.sort(key=lambda c: c.rank)
    return found


def _with_budget(model, gpu, knobs, base, version, util0, per_node, nodes, want, allow, min_len):
    """The candidates of one layout: as is, with the utilization raised to what is needed,
    and (when allowed) with max_model_len cut to what fits, at the current and at 0.95."""
    out = []
    tokens = max(want or 0, knobs.max_model_len)
    options: list[Knobs] = [knobs]
    if knobs.kv_cache_memory_bytes:
        if "kv_cache_memory_bytes" in allow:
            per = kv_bytes_per_token(model, knobs.tp, knobs.pp, knobs.kv_cache_dtype)
            block = max(knobs.block_size, 1)
            need = int((-(-tokens // block) + 1) * block * per * 1.05)
            need = -(-need // 2**20) * 2**20
            if need > knobs.kv_cache_memory_bytes:
                options.append(replace(knobs, kv_cache_memory_bytes=need))
    elif "gpu_memory_utilization" in allow:
        util = needed_utilization(model, gpu, knobs, version, tokens)
        if util is not None and util0 < util <= MAX_UTILIZATION:
            options.append(replace(knobs, gpu_memory_utilization=util))
        elif util is not None and util > MAX_UTILIZATION and util0 < MAX_UTILIZATION:
            options.append(replace(knobs, gpu_memory_utilization=MAX_UTILIZATION))
    if "max_model_len" in allow and not want:
        for k in list(options):
            fit = _fit_len_at(model, gpu, k, version)
            length = fit // 16 * 16
            if k.max_model_len is not None and min_len <= length < k.max_model_len:
                options.append(replace(k, max_model_len=length))
    for k in options:
        found, acc = problems(
            model, gpu, k, version, per_node=per_node, nodes=nodes, want_tokens=want
        )
        if found:
            continue
        changes = _changes(base, k, util0)
        out.append(Candidate(k, changes, acc, _rank(changes, k, base, acc)))
    return out


def _changes(base: Knobs, k: Knobs, util0: float) -> tuple[tuple[str, object], ...]:
    out: list[tuple[str, object]] = []
    for name, field in KNOB_FIELD.items():
        before, after = getattr(base, field), getattr(k, field)
        if name == "gpu_memory_utilization":
            before = before or util0
            after = after or util0
        if after != before:
            out.append((name, after))
    out.sort(key=lambda kv: TIER[kv[0]])
    return tuple(out)


def _rank(changes, k: Knobs, base: Knobs, acc: MemoryAccount) -> tuple:
    """The mitigation order: the costly changes a candidate needs, most costly first and
    compared tier by tier (hardware last); the free KV budget knob is not counted there, so a
    candidate that raises it to keep more context beats one that only cuts the context. Then
    the context kept (longer first), the number of changes, the GPUs nearest to the ones in
    use, the fewest GPUs, the KV room."""
    tiers = sorted((TIER[name] for name, _ in changes if TIER[name] > 1), reverse=True)
    return (
        tiers,
        -(k.max_model_len or 0),
        len(changes),
        abs(k.tp * k.pp - base.tp * base.pp),  # nearest to the GPUs the user chose
        k.tp * k.pp,
        -acc.kv_capacity_tokens,
    )


def describe_change(name: str, before, after) -> str:
    return f"{name} {before} -> {after}"


def best_fix(model, gpu, base: Knobs, version, **kwargs) -> Candidate | None:
    found = search(model, gpu, base, version, **kwargs)
    return found[0] if found else None


def what_would_fit(
    model, gpu, base: Knobs, version, *, want_tokens: int | None = None
) -> list[str]:
    """When nothing fits the GPUs at hand: the smallest changes that would, in words (more
    GPUs of the kind, a quantized checkpoint, an fp8 KV cache), each checked by the model."""
    out: list[str] = []
    quantized = is_quantized(model, base)
    for count in (2, 4, 8, 16):
        if count <= gpu.count:
            continue
        bigger = replace(gpu, count=count, groups=())
        fix = best_fix(model, bigger, base, version, want_tokens=want_tokens,
                       allow=frozenset({"tensor_parallel_size", "gpu_memory_utilization"}))  # fmt: skip
        if fix is not None:
            out.append(f"{count} GPUs of this kind: TP {fix.knobs.tp} holds it")
            break
    for name, extra in (("an fp8 KV cache", {"kv_cache_dtype"}),
                        ("a quantized (FP8) checkpoint", {"quantization"})):  # fmt: skip
        if name.startswith("a quantized") and quantized:
            continue
        allow = frozenset({"tensor_parallel_size", "gpu_memory_utilization", *extra})
        fix = best_fix(model, gpu, base, version, want_tokens=want_tokens, allow=allow)
        if fix is not None:
            out.append(f"{name} at TP {fix.knobs.tp} on these GPUs")
    return out
