"""Topology and host rules: links between the TP group's GPUs, PP versus TP, NCCL and /dev/shm.

TP over PHB/NODE/SYS stages every all-reduce through host memory: it wants a smaller TP with
PP across the slow hops. PP inside a node with fast links at low concurrency wants TP instead
(bubbles, and one token's latency crosses every stage). NCCL and /dev/shm problems are
"other": no engine knob fixes them.
"""

from __future__ import annotations

import re
from dataclasses import replace

from headroom.doctor import actions as A
from headroom.doctor.findings import Action, Finding, compact_actions
from headroom.doctor.memory_model import account
from headroom.doctor.rules_hang import gpu_of, ranked_fixes
from headroom.probes.topology_verdict import tp_verdicts

_SLOW = ("PHB", "NODE", "SYS", "SOC")
_SEQ_NUM = re.compile(r"WorkNCCL\(SeqNum=(\d+)")


def _verdict(ctx, tp: int):
    matrix = ctx.inputs.topology
    if matrix is None or tp < 2:
        return None
    verdicts = tp_verdicts(matrix, [tp])
    return verdicts[0] if verdicts else None


def _smaller_tp(ctx, tp: int) -> int | None:
    """The largest TP below `tp` that divides it, divides the heads, sits on links that are
    at least tolerable and still fits in memory with PP making up the GPUs."""
    from dataclasses import replace

    if ctx.model is not None:
        candidates = [t for t in A.valid_tps(ctx.model, tp - 1) if tp % t == 0]
    else:
        candidates = [t for t in range(1, tp) if tp % t == 0]
    for t in sorted(candidates, reverse=True):
        verdict = _verdict(ctx, t)
        if verdict is not None and verdict.level not in ("good", "tolerable"):
            continue
        if ctx.model is not None and ctx.gpu is not None:
            knobs = replace(ctx.knobs, tp=t, pp=ctx.knobs.pp * tp // t)
            if not account(ctx.model, ctx.gpu, knobs, ctx.version).fits:
                continue
        return t
    return None


def tp_over_slow_links(ctx) -> list[Finding]:
    tp = ctx.knobs.tp
    verdict = _verdict(ctx, tp)
    if verdict is None or verdict.level not in ("poor",):
        return []
    evidence = [
        f"TP {tp} on GPUs {', '.join(map(str, verdict.gpus))}: weakest link {verdict.weakest_link}",
        *verdict.reasons,
    ]
    smaller = _smaller_tp(ctx, tp)
    acts: list[Action | None] = []  # None: a knob already at its limit; compact_actions drops it
    if smaller:
        acts.append(
            Action(
                "tensor_parallel_size",
                "lower",
                smaller,
                f"keep TP on the fast links; {verdict.weakest_link} stages all-reduce through the CPU",
                "each GPU holds more of the model: less KV cache per GPU",
                also=(("pipeline_parallel_size", tp // smaller * ctx.knobs.pp),),
                step=2,  # the links set it: step 2's interconnect bound
            )
        )
        more_pp = A.raise_pp(
            ctx, tp // smaller * ctx.knobs.pp, "spread the layers over the same GPUs in stages"
        )
        if more_pp is not None:  # PP takes the GPUs TP gives up: one change, not two
            acts.append(replace(more_pp, also=(("tensor_parallel_size", smaller),)))
    severity = "warning"
    return [
        Finding(
            "tp-over-slow-links",
            2,
            severity,
            f"Tensor parallel size {tp} crosses {verdict.weakest_link} links",
            tuple(evidence),
            compact_actions(acts),
        )
    ]


def pp_at_low_concurrency(ctx) -> list[Finding]:
    """PP inside one node with fast links while few requests run: TP serves them faster."""
    pp, tp = ctx.knobs.pp, ctx.knobs.tp
    if pp < 2 or ctx.nodes > 1:
        return []
    total = tp * pp
    verdict = _verdict(ctx, total)
    fast = verdict is not None and verdict.level == "good"
    if verdict is None and ctx.gpu is not None:
        fast = ctx.gpu.nvlink
    running = [
        m.total.requests_running
        for m in ctx.inputs.metrics_history[-12:]
        if getattr(m, "total", None) is not None and m.total.requests_running is not None
    ]
    low = bool(running) and max(running) < 2 * pp
    if not (fast and (low or not running)):
        return []
    if ctx.model is not None and total not in A.valid_tps(ctx.model, total):
        return []
    evidence = [f"TP {tp} x PP {pp} inside one node with fast links"]
    if running:
        evidence.append(
            f"at most {max(running):.0f} requests running: too few to fill {pp} pipeline stages"
        )
    acts = (
        Action(
            "tensor_parallel_size",
            "raise",
            total,
            "TP uses every GPU for every token",
            "all-reduce on every layer, which NVLink carries easily",
            also=(("pipeline_parallel_size", 1),),
        ),
        Action(
            "pipeline_parallel_size",
            "lower",
            1,
            "no bubbles, one hop per token",
            "none on fast links",
            also=(("tensor_parallel_size", total),),
        ),
    )
    return [
        Finding(
            "pp-inside-fast-node",
            3,
            "warning" if running else "info",
            "Pipeline parallel inside a fast node: tensor parallel would serve faster",
            tuple(evidence),
            acts,
        )
    ]


def nccl_and_shm(ctx) -> list[Finding]:
    out = []
    shm = ctx.of("shm_full")
    if shm:
        out.append(
            Finding(
                "shm-full",
                None,
                "error",
                "/dev/shm is too small for NCCL",
                (
                    shm[0].line.strip(),
                    "give the container more shared memory: docker --shm-size=10g or --ipc=host; "
                    "in Kubernetes mount an in-memory emptyDir at /dev/shm",
                ),
                (),
            )
        )
    host = ctx.inputs.host
    if (
        host is not None
        and ctx.knobs.tp * ctx.knobs.pp > 1
        and host.shm_total_bytes is not None
        and host.shm_total_bytes < 1 * 2**30
        and not shm
    ):
        out.append(
            Finding(
                "shm-small",
                None,
                "warning",
                f"/dev/shm is only {host.shm_total_bytes / 2**20:.0f} MiB for a multi-GPU run",
                (
                    "NCCL stages traffic through /dev/shm when P2P is off; Docker's default is 64 MiB",
                ),
                (),
            )
        )
    watchdog = ctx.of("watchdog_timeout")
    if watchdog:
        out.append(_watchdog_finding(ctx, watchdog[0]))
    nccl = ctx.of("nccl_error")
    if nccl and not shm:
        warns = [e.line.strip() for e in ctx.of("nccl_warn")][:3]
        out.append(
            Finding(
                "nccl-error",
                None,
                "error",
                "NCCL failed to set up the GPUs' communication",
                (
                    nccl[0].line.strip(),
                    *warns,
                    "rerun with NCCL_DEBUG=INFO: the NCCL WARN line before the error names the cause",
                ),
                (),
            )
        )
    allreduce = ctx.of("custom_allreduce_disabled")
    if allreduce and (ctx.knobs.tp > 2 or ctx.inputs.command is None):
        out.append(_custom_allreduce_off(allreduce[0]))
    raw = ctx.raw_lines
    if any("via SHM/direct" in line or "via direct shared memory" in line for line in raw):
        out.append(
            Finding(
                "nccl-shm-transport",
                2,
                "info",
                "GPUs in one node exchange data through host shared memory, not peer-to-peer",
                (
                    "NCCL channels show `via SHM`: TP all-reduce is staged through the CPU; "
                    "keep TP small on these GPUs or use PP",
                ),
                (),
            )
        )
    if any(
        "NET/IB : No device found" in line or "Failed to open libibverbs" in line for line in raw
    ) and any("NET/Socket" in line for line in raw):
        out.append(
            Finding(
                "nccl-tcp-between-nodes",
                3,
                "info",
                "NCCL falls back to TCP sockets between nodes (no InfiniBand/RoCE found)",
                ("PP across nodes tolerates this; TP across nodes over TCP does not",),
                (),
            )
        )
    env = getattr(host, "nccl_env", None) or {}
    if env.get("NCCL_P2P_DISABLE") == "1" and ctx.gpu is not None and ctx.gpu.nvlink:
        out.append(
            Finding(
                "nccl-p2p-disabled",
                None,
                "warning",
                "NCCL_P2P_DISABLE=1 on NVLink GPUs",
                ("NCCL then copies through host memory instead of NVLink",),
                (),
            )
        )
    # a rejected flag ("unrecognized arguments") is rules_flags.unrecognized_arguments's
    return out


# Why vLLM turned its custom all-reduce off, by the reason its warning gives
# (custom_all_reduce.py 0.4.0-0.33.0): the title says that reason, not always the mesh.
_ALLREDUCE_OFF_WHY: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("PCIe-only", "these GPUs have no full NVLink mesh", ()),
    (
        "P2P",
        "these GPUs failed its peer-to-peer test",
        (
            "NCCL uses the same P2P paths: a start that then hangs in NCCL wants "
            "NCCL_P2P_DISABLE=1 (`nvidia-smi topo -p2p r` shows which pairs lack P2P)",
        ),
    ),
    ("spans across nodes", "the group spans nodes (NCCL does it over the network)", ()),
    ("world size", "vLLM's kernel supports only some TP sizes (2, 4, 6, 8)", ()),
)


def _custom_allreduce_off(event) -> Finding:
    reason = str(event.fields.get("reason") or event.line)
    why: str = "these GPUs have no full NVLink mesh"
    notes: tuple[str, ...] = ()
    for needle, text, extra in _ALLREDUCE_OFF_WHY:
        if needle in reason:
            why, notes = text, extra
            break
    return Finding(
        "custom-allreduce-off",
        2,
        "info",
        f"vLLM's fast all-reduce is off: {why}",
        (event.line.strip(), *notes),
        (),
    )


def _watchdog_finding(ctx, event) -> Finding:
    """PyTorch's watchdog: a collective ran past its timeout. Its first collectives (SeqNum 1
    or 2: the warm-up all-reduce of torch.distributed's set-up, vllm #5458 and #1957 on RTX
    3090s, #6042) time out when the GPUs cannot talk at all, the start-up hang's family: the
    same ranked fixes (rules_hang). Later ones, or across nodes, keep the custom all-reduce
    first with P2P named beside it."""
    seq = _SEQ_NUM.search(event.line)
    startup = seq is not None and int(seq.group(1)) <= 2 and ctx.nodes <= 1
    acts: tuple[Action, ...] = (
        Action(
            "disable_custom_all_reduce",
            "set",
            True,
            "rule out vLLM's custom all-reduce; also try NCCL_P2P_DISABLE=1",
            "slightly slower all-reduce on small messages",
        ),
    )
    why = "usually one rank died or PCIe peer-to-peer is broken on this board"
    if startup:
        tp = max(ctx.knobs.tp * ctx.knobs.pp, 2)
        acts = ranked_fixes(ctx, tp, gpu_of(ctx)) or acts
        why = (
            f"collective number {seq.group(1) if seq else '?'} of the start timed out: the GPUs "
            "never exchanged data, the start-up hang's family (P2P over PCIe first)"
        )
    return Finding(
        "nccl-watchdog-timeout",
        None,
        "error",
        "A collective operation hung (NCCL watchdog)",
        (event.line.strip()[:300], why),
        acts,
    )


def engine_died(ctx) -> list[Finding]:
    """The engine died and no other rule explained why: say so, point at the traceback."""
    dead = ctx.of("engine_core_failed", "engine_dead", "worker_died", "worker_exception")
    if not dead:
        return []
    lines = [e.line.strip() for e in dead[:2]]
    tb = [e.line.strip() for e in ctx.of("traceback")][-1:]
    return [Finding("engine-died", None, "error", "The vLLM engine stopped", tuple(lines + tb), ())]


def memory_gate(ctx) -> list[Finding]:
    """Before start: other processes already hold more than (1 - utilization) of a GPU."""
    snap = ctx.inputs.gpus
    if (
        snap is None
        or not getattr(snap, "available", False)
        or ctx.of("free_memory_below_utilization")
    ):
        return []
    util = ctx.utilization
    out = []
    for g in snap.gpus:
        if g.lost or not g.memory_total or g.memory_free is None:
            continue
        if any(p.is_vllm for p in g.processes):
            continue  # vLLM itself is running there; the gate only applies before start
        need = g.memory_total * util
        if g.memory_free < need and (g.memory_total - g.memory_free) > 0.5 * 2**30:
            free_share = g.memory_free / g.memory_total
            out.append(
                Finding(
                    f"memory-gate-gpu{g.index}",
                    None,
                    "warning",
                    f"GPU {g.index} has {g.memory_free / 2**30:.2f} GiB free, less than "
                    f"utilization {util:.2f} asks for",
                    (
                        f"{(g.memory_total - g.memory_free) / 2**30:.2f} GiB already in use; vLLM refuses to start "
                        f"when free < total x gpu_memory_utilization",
                    ),
                    tuple(
                        a
                        for a in (
                            A.lower_utilization(ctx, free_share - 0.02, "fit in what is free"),
                        )
                        if a
                    ),
                )
            )
    return out


RULES = (tp_over_slow_links, pp_at_low_concurrency, nccl_and_shm, engine_died, memory_gate)
