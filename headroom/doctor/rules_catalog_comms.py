"""Rules for the all-reduce paths a flag turns off (probes/vllm_catalog/limits.py): each reads
the event and the release, never a thread's sentence.

- vLLM's custom all-reduce kernel exits on a failed CUDA call (CUDACHECK in
  csrc/custom_all_reduce.cuh: IPC handles and peer access between the GPUs). Its flag
  --disable-custom-all-reduce hands the all-reduce to NCCL; the table's step 2 (interconnect)
  is where it belongs, and no memory knob changes it.
- vLLM 0.3.x set up CuPy's NCCL only to capture CUDA graphs ("don't use cupy for eager mode",
  engine/llm_engine.py of 0.3.3); CuPy's TCP store failing is answered by --enforce-eager
  there. Later releases use CuPy only for Ray's compiled graphs, whose fix is not that flag:
  without a 0.3 release (or with compiled-graph traces) the finding turns no knob.
"""

from __future__ import annotations

from headroom.doctor.findings import Action, Finding
from headroom.doctor.versions import parse_version

_CUPY_FOR_GRAPHS_UNTIL = (0, 4, 0)  # 0.4 replaced CuPy by pynccl
# Ray compiled graphs in a traceback or message (executor/ray_distributed_executor.py 0.8.5:
# `self.forward_dag = self._compiled_ray_dag(enable_asyncio=False)`; the env var and extras).
_COMPILED_GRAPH_MARKERS = ("compiled_ray_dag", "RAY_COMPILED_DAG", "ray[cgraph]", "ray[adag]")


def custom_allreduce_failed(ctx) -> list[Finding]:
    events = ctx.of("custom_allreduce_failed")
    if not events:
        return []
    event = events[0]
    error = str(event.fields.get("error") or "").strip()
    act = Action(
        "disable_custom_all_reduce",
        "set",
        True,
        "vLLM's custom all-reduce kernel failed a CUDA call between the GPUs"
        + (f" ({error})" if error else "")
        + "; NCCL does the all-reduce instead",
        "slightly slower all-reduce on small messages",
    )
    evidence = (
        event.line.strip()[:400],
        "the kernel opens the other GPUs' memory over CUDA IPC / peer access: PCIe boards "
        "without P2P, GPUs split across containers or MIG instances refuse it; "
        "--enforce-eager also avoids it (no CUDA graphs: slower decoding)",
    )
    title = "vLLM's custom all-reduce kernel failed between the GPUs"
    return [Finding("custom-allreduce-failed", None, "error", title, evidence, (act,))]


def cupy_nccl_failed(ctx) -> list[Finding]:
    events = ctx.of("cupy_nccl_failed")
    if not events:
        return []
    event = events[0]
    version = parse_version(ctx.version)
    compiled_graph = any(m in line for line in ctx.raw_lines for m in _COMPILED_GRAPH_MARKERS)
    old_release = version is None or version < _CUPY_FOR_GRAPHS_UNTIL
    evidence = [event.line.strip()[:400]]
    acts: tuple[Action, ...] = ()
    if old_release and not compiled_graph:
        acts = (
            Action(
                "enforce_eager",
                "set",
                True,
                "vLLM 0.3.x sets up CuPy's NCCL only to capture CUDA graphs; eager mode skips it",
                "no CUDA graphs: slower decoding",
            ),
        )
        evidence.append("0.4+ replaced CuPy by its own NCCL wrapper: upgrading also removes it")
    else:
        evidence.append(
            "CuPy's NCCL here belongs to Ray's compiled graphs (VLLM_USE_RAY_COMPILED_DAG*): "
            "unset those, or install a CuPy matching the CUDA version"
        )
    title = "CuPy's NCCL set-up failed (its TCP store)"
    return [Finding("cupy-nccl-failed", None, "error", title, tuple(evidence), acts)]


RULES = (custom_allreduce_failed, cupy_nccl_failed)
