"""--distributed-executor-backend given a name vLLM does not know: set one it does.

ParallelConfig refuses it at start-up ("Unrecognized distributed executor backend tp.
Supported values are 'ray', 'mp' 'uni', 'external_launcher' or custom ExecutorBase
subclass.", vllm/config.py 0.5.5-0.9.2, vllm/config/parallel.py 0.10.2-0.33.0; the catalog's
executor_backend_unknown). The supported names have not changed in meaning across those
releases: 'mp' runs the workers as local processes (vLLM's own choice on one node), 'ray'
spans nodes, 'uni' is one GPU in the engine's process, 'external_launcher' is torchrun's.
vllm-project/vllm-ascend#287 (the docs passed "tp") was fixed by 'mp'.

So: 'mp' on one node, 'ray' when the deployment spans several (--nodes, the command's
--nnodes, or a data-parallel split across nodes: Context.nodes), which only Ray's executor
can place. Never a memory knob.
"""

from __future__ import annotations

from headroom.doctor.findings import Action, Finding

ID = "executor-backend-unknown"


def executor_backend_unknown(ctx) -> list[Finding]:
    events = ctx.of("executor_backend_unknown")
    if not events:
        return []
    event = events[0]
    given = event.fields.get("backend")
    several_nodes = ctx.nodes > 1
    value = "ray" if several_nodes else "mp"
    where = (
        "the deployment spans nodes: Ray's executor places workers across them"
        if several_nodes
        else ("one node: local worker processes, vLLM's own choice there")
    )
    act = Action(
        "distributed_executor_backend",
        "set",
        value,
        f"{given!r} is no executor backend this release knows; {where}",
        "",
    )
    evidence = (
        event.line.strip()[:400],
        "supported: 'mp' (local processes), 'ray' (across nodes), 'uni' (one GPU, in process), "
        "'external_launcher' (torchrun)",
    )
    title = (
        f"vLLM does not know the executor backend {given!r}"
        if given
        else ("vLLM does not know the executor backend given")
    )
    return [Finding(ID, None, "error", title, evidence, (act,))]


RULES = (executor_backend_unknown,)
