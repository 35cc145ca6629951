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
- "No available shared memory broadcast block found in 60 seconds. This typically happens
  when some processes are hanging or doing some time-consuming work (e.g. compilation,
  weight/kv cache quantization)." (distributed/device_communicators/shm_broadcast.py,
  0.8.5-0.33, INFO; the interval is VLLM_RINGBUFFER_WARNING_INTERVAL, a logging setting): the
  engine core waited that long for a worker to take its next step. The field's threads
  (gpustack/gpustack#3888 during a DeepSeek-V3.2 load, vllm-ascend#3717, vllm#27313) find a
  slow load or compile (it stops once the worker is done) or a worker stuck behind another
  error; no setting is the cause, so the finding turns no knob. With TP/PP > 1 and no error
  it is evidence for comms-hang (rules_hang), which answers then.
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


def shm_broadcast_wait(ctx) -> list[Finding]:
    events = ctx.of("shm_broadcast_wait")
    if not events:
        return []
    waited = len(events)
    evidence = (
        events[0].line.strip()[:400],
        f"printed {waited} time(s): the engine core waited for a worker to take its next "
        "step; once or twice while loading, compiling or capturing CUDA graphs it is that "
        "work, and passes; repeated while serving, a worker is stuck: the error or hang "
        "above it (NCCL, a dead rank) is the cause. No engine setting is.",
    )
    title = (
        "A worker took over a minute for one step (shm broadcast wait): slow work or a stuck worker"
    )
    return [Finding("shm-broadcast-wait", None, "info", title, evidence, ())]


RULES = (custom_allreduce_failed, cupy_nccl_failed, shm_broadcast_wait)
