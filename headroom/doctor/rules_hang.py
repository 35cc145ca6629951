"""A multi-GPU start that hangs while its GPUs set up communication: the field's usual fixes,
ranked for what the input shows (probes/symptom_hang.py reads the signs).

A hang has no single cause, and no error line says which; so this finding ranks what public
threads and the docs answer, by what the input shows, and says what to check:

- NCCL's peer-to-peer transport between GPUs over PCIe is the usual culprit. Consumer cards
  (RTX 3090/4090/5090) and PCIe data-center cards without NVLink (L4, L40, A10, T4) often
  report P2P as possible and then stall or corrupt data in it (NVIDIA/nccl-tests #117,
  NVIDIA/nccl #631 "ACS / IOMMU"); `NCCL_P2P_DISABLE=1` stages the traffic through host
  memory instead: the fix of vllm-project/vllm #2466, #5484 (youkaichao), #6370, and the
  suggestion of vLLM's troubleshooting page. It ranks first unless the input says otherwise.
- `NCCL_P2P_LEVEL=NVL` keeps P2P on NVLink and drops it on PCIe: first where a topology
  shows NVLink for some pairs of the group and PCIe for others (bridged pairs), since it keeps
  the fast links (vllm #8087); otherwise after NCCL_P2P_DISABLE.
- vLLM's custom all-reduce (0.3.0+) is in play for TP 2 on any link and for more GPUs only
  on a full NVLink mesh ("Custom allreduce is disabled because it's not supported on more
  than two PCIe-only GPUs", custom_all_reduce.py of every release since 0.4.0); its set-up
  runs after NCCL's and tests P2P itself ("generating GPU P2P access cache", 0.4.3+).
  `--disable-custom-all-reduce` ranks first when the log stops in that test, when the words
  name the kernel, and on Volta (V100, SM70) with TP 2, where the kernel spins (1Cat-vLLM
  #652, #431); second otherwise, where it is in play.

A start that stops in CUDA-graph capture across GPUs (every all-reduce kernel is captured
there) runs --enforce-eager first, which skips capture (vllm #2770, #4412, #17167, #52682),
then the custom all-reduce (first on Volta) and NCCL's P2P.

Across nodes (--nodes, --nnodes, the words "multi-node", "two machines", "多机") the network
between them comes first: NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME name the NIC the nodes
share (vLLM's distributed troubleshooting), then the P2P fixes inside each node.

Conservative: only for a start that stops in communication set-up with two ranks or more,
or a person's words that report such a hang with TP/PP > 1, several GPUs or NCCL; never for a
log with an error line, a single GPU, or a hang said to be in a download, a load or a compile.
"""

from __future__ import annotations

from headroom.doctor.findings import Action, Finding
from headroom.doctor.gpu_table import GpuModel, find_gpu
from headroom.doctor.versions import parse_version
from headroom.probes.symptom_hang import CommStall, HangWords, comm_stall, hang_words
from headroom.probes.topology_verdict import tp_verdicts

__all__ = ["RULES", "comms_hang", "gpu_of", "ranked_fixes"]

_CUSTOM_AR_SINCE = (0, 3, 0)  # vllm 0.3.0: model_executor/parallel_utils/custom_all_reduce.py
_CHECKS = (
    "check: `nvidia-smi topo -m` (PIX/PXB/PHB/SYS = PCIe; NV# = NVLink) and "
    "`nvidia-smi topo -p2p r` (OK/GNS/CNS per pair)",
    "vLLM's troubleshooting page: run its NCCL sanity-check script with NCCL_DEBUG=TRACE; a "
    "stall there is the host (ACS/IOMMU on PCIe boards: iommu=pt or ACS off in the BIOS), not "
    "vLLM",
)


def _link_class(ctx, tp: int, gpu: GpuModel | None) -> str:
    """'nvlink' | 'partial' | 'pcie' | 'unknown': the links inside the TP group. Only a
    topology says NVLink for sure: a name like "A100" or "V100" is sold as SXM and as PCIe."""
    matrix = ctx.inputs.topology
    if matrix is not None and tp >= 2:
        verdicts = tp_verdicts(matrix, [tp])
        if verdicts and verdicts[0].gpus and verdicts[0].level != "unknown":
            subset = verdicts[0].gpus
            codes = [matrix.links[i][j] for i in subset for j in subset if i < j]
            linked = [c for c in codes if c.startswith("NV")]
            if codes and len(linked) == len(codes):
                return "nvlink"
            return "partial" if linked else "pcie"
    if gpu is None:
        return "unknown"
    if not gpu.has_nvlink:
        return "pcie"  # the part has no NVLink at all (RTX 4090/5090, L4, L40, A10, T4)
    if not gpu.datacenter or gpu.name == "A40":
        # a bridge joins two cards (RTX 3090, A6000, A40): a larger group crosses PCIe
        return "pcie" if tp > 2 else "unknown"
    return "unknown"


def _gpu(ctx, words: HangWords | None) -> GpuModel | None:
    spec = ctx.gpu
    if spec is not None and spec.known:
        found = find_gpu(spec.name)
        if found is not None:
            return found
    for token in words.gpu_tokens if words is not None else ():
        found = find_gpu(token)
        if found is not None:
            return found
    return None


def _custom_ar_in_play(ctx, tp: int, links: str, stall: CommStall | None) -> bool:
    version = parse_version(ctx.version)
    if version is not None and version < _CUSTOM_AR_SINCE:
        return False
    if ctx.arg("disable_custom_all_reduce") or (stall is not None and stall.custom_allreduce_off):
        return False
    if ctx.of("custom_allreduce_disabled"):
        return False
    return tp <= 2 or links != "pcie"  # more than 2 PCIe-only GPUs: vLLM turns it off


def _actions(ctx, tp: int, links: str, gpu: GpuModel | None, custom_first: bool, custom: bool):
    p2p_off = Action(
        "NCCL_P2P_DISABLE",
        "set",
        "1",
        "NCCL stops using GPU peer-to-peer and stages all-reduce through host memory: the "
        "usual cure for a PCIe board whose P2P stalls",
        "slower all-reduce; on NVLink GPUs much slower (NCCL_P2P_LEVEL=NVL keeps NVLink)",
    )
    nvl_only = Action(
        "NCCL_P2P_LEVEL",
        "set",
        "NVL",
        "P2P only over NVLink: keeps the NVLink pairs, drops P2P across PCIe",
        "PCIe pairs copy through host memory",
    )
    no_custom = Action(
        "disable_custom_all_reduce",
        "set",
        True,
        "vLLM's own all-reduce kernel (CUDA IPC between the GPUs) is off; NCCL does it",
        "slightly slower all-reduce on small messages",
    )
    env = getattr(ctx.inputs.host, "nccl_env", None) or {}
    acts: list[Action] = []
    if custom_first and custom:
        acts.append(no_custom)
    if links == "partial":
        acts.append(nvl_only)
    if env.get("NCCL_P2P_DISABLE") != "1":
        acts.append(p2p_off)
    if custom and not custom_first:
        acts.append(no_custom)
    bridged = gpu is not None and gpu.has_nvlink
    if links != "partial" and env.get("NCCL_P2P_LEVEL") is None and (links == "unknown" or bridged):
        acts.append(nvl_only)
    return tuple(acts)


def ranked_fixes(
    ctx,
    tp: int,
    gpu: GpuModel | None = None,
    links: str | None = None,
    *,
    stall: CommStall | None = None,
    custom_named: bool = False,
) -> tuple[Action, ...]:
    """The field's fixes for GPUs that stall talking to each other, in the order the input
    calls for (the module docstring); also for a collective that timed out at start-up."""
    if links is None:
        links = _link_class(ctx, max(tp, 2), gpu)
    custom = _custom_ar_in_play(ctx, tp, links, stall)
    volta = gpu is not None and gpu.generation == "Volta" and tp <= 2
    custom_first = custom_named or (volta and custom)
    return _actions(ctx, tp, links, gpu, custom_first, custom or custom_named)


def gpu_of(ctx) -> GpuModel | None:
    """The GPU model the input names (--gpus, NVML), when the table knows it."""
    return _gpu(ctx, None)


def _capture_fixes(ctx, tp: int, gpu: GpuModel | None, acts: tuple[Action, ...]):
    """A start that stops in CUDA-graph capture across GPUs: every all-reduce kernel is
    captured there. --enforce-eager skips capture (vllm #2770, #4412 TP+PP, #17167 across
    nodes, #52682 TP 4 on RTX A5000); the custom kernel comes next (it registers the graphs'
    buffers over CUDA IPC), first on Volta (1Cat-vLLM #652/#431), then NCCL's P2P."""
    if ctx.knobs.enforce_eager:
        return acts
    eager = Action(
        "enforce_eager",
        "set",
        True,
        "no CUDA graphs: the all-reduce runs eagerly, outside any captured graph",
        "slower decoding (no CUDA graphs)",
    )
    volta = gpu is not None and gpu.generation == "Volta" and tp <= 2
    first = [a for a in acts if a.knob == "disable_custom_all_reduce"] if volta else []
    rest = [a for a in acts if a not in first]
    custom = [a for a in rest if a.knob == "disable_custom_all_reduce"]
    others = [a for a in rest if a.knob != "disable_custom_all_reduce"]
    return (*first, eager, *custom, *others)


def _across_nodes(ctx) -> tuple[Action, ...]:
    """Across nodes NCCL's bootstrap and the Gloo group pick a NIC each; a bridge, VPN or
    docker interface the other node cannot reach hangs the set-up (vLLM's distributed
    troubleshooting: NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME on every node; fleet-facts.md).
    The interface is the operator's to name: advice, no value."""
    env = getattr(ctx.inputs.host, "nccl_env", None) or {}
    acts = []
    for name, why in (
        ("NCCL_SOCKET_IFNAME", "NCCL bootstraps over the NIC the nodes share (e.g. eth0)"),
        ("GLOO_SOCKET_IFNAME", "vLLM's CPU (Gloo) group on the same NIC; Ray does not copy it"),
    ):
        if not env.get(name):
            acts.append(Action(name, "set", None, why, "set it on every node"))
    return tuple(acts)


def _tp_of(ctx, stall: CommStall | None, words: HangWords | None) -> int:
    tp = ctx.knobs.tp * ctx.knobs.pp
    if ctx.inputs.command is not None:
        return tp
    seen = [tp, stall.ranks if stall is not None else 0, (words.tp or 0) if words else 0]
    return max(seen)


def comms_hang(ctx) -> list[Finding]:
    if any(e.severity == "error" for e in ctx.events):
        return []  # an error line is the story; a hang leaves none
    stall = comm_stall(ctx.raw_lines)
    words = None
    if stall is None:
        words = hang_words(ctx.raw_lines, ctx.events)
        if words is None or words.other_stage:
            return []
    tp = _tp_of(ctx, stall, words)
    several = (stall is not None and stall.ranks >= 2) or (words is not None and words.multi_gpu)
    if ctx.inputs.command is not None and tp <= 1 and not (stall is not None and stall.ranks >= 2):
        return []  # the command runs one GPU: a hang there is not between GPUs
    if tp <= 1 and not several:
        return []
    gpu = _gpu(ctx, words)
    links = _link_class(ctx, max(tp, 2), gpu)
    named = (stall is not None and stall.stage == "p2p_check") or (
        words is not None and words.custom_allreduce
    )
    acts = ranked_fixes(ctx, tp, gpu, links, stall=stall, custom_named=named)
    if stall is not None and stall.stage == "graph_capture":
        acts = _capture_fixes(ctx, tp, gpu, acts)
    if ctx.nodes > 1 or (words is not None and words.multi_node):
        acts = _across_nodes(ctx) + acts  # the network between the nodes before P2P inside one
    if not acts:
        return []
    # without a command line TP 1 is only the placeholder: the words or ranks said several
    said_tp = tp if tp > 1 or ctx.known("tensor_parallel_size") else None
    evidence = _evidence(stall, words, said_tp, links, gpu)
    title = "A multi-GPU start said to hang: GPU-to-GPU communication is the usual cause"
    if stall is not None:
        title = (
            "The start hangs capturing CUDA graphs across its GPUs (no error, no ready line)"
            if stall.stage == "graph_capture"
            else "The start hangs while its GPUs set up communication (no error, no ready line)"
        )
    return [Finding("comms-hang", None, "error", title, evidence, acts)]


def _evidence(stall, words, tp: int | None, links: str, gpu: GpuModel | None) -> tuple[str, ...]:
    out: list[str] = []
    if stall is not None:
        out.extend(stall.lines[-3:])
        stage = {
            "p2p_check": "the last lines are the custom all-reduce's P2P test between the GPUs",
            "workers": "the workers started and nothing followed: torch.distributed / NCCL "
            "set-up never finished",
            "nccl": "the last lines are NCCL's set-up: the communicator never finished",
            "graph_capture": "the last lines are CUDA-graph capture across the GPUs: the "
            "all-reduce kernels captured there never returned",
        }[stall.stage]
        out.append(f"{stage} ({stall.ranks or 'several'} ranks seen)")
        out.extend(stall.nccl_warnings)
    elif words is not None:
        out.append(f"said: {words.text[:300]}")
    where = {
        "pcie": "these GPUs talk over PCIe",
        "partial": "NVLink joins only some of these GPUs; the rest is PCIe",
        "nvlink": "these GPUs sit on NVLink: if NVSwitch, nvidia-fabricmanager must run",
        "unknown": "the links between the GPUs are not known (--topo, --gpus): NVSwitch "
        "systems also need nvidia-fabricmanager running",
    }[links]
    name = f"{gpu.name}, " if gpu is not None else ""
    layout = f"TP x PP {tp}" if tp else "TP x PP not given (no command line)"
    out.append(f"{name}{layout}: {where}")
    out.append(
        "a hang has no single cause: these are the field's usual fixes in order, one at a time"
    )
    out.extend(_CHECKS)
    return tuple(out)


RULES = (comms_hang,)
