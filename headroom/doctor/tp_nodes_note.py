"""When TP across nodes is said as a speed note, without the TP-inside-a-node knob (step 3).

vLLM's distributed-serving guide (0.5.5-0.8.x: "The tensor parallel size should be the
number of GPUs in each node, and the pipeline parallel size the number of nodes") is speed
advice for nodes of several GPUs. rules_parallel.tp_across_nodes keeps it a note when:

- the log records an exception of its own (vllm#7662: "GGUF quantization hasn't supported
  tensor parallelism yet" on TP 8 over two nodes of four): a TP kept inside a node does not
  cure a start that fails for another reason; an exception about the links (NCCL, gloo,
  time-outs, connections, Ray, rendezvous) is one it may cure, and keeps the fix;
- each node has one GPU (DGX Spark clusters: one GB10 per node, 200 GbE RoCE between them):
  TP inside a node is then TP 1, a pure pipeline whose stages run one at a time for a single
  request, and the field's layout for such clusters is TP across the nodes over RDMA
  (two-Spark TP=2 and four-Spark TP=4 recipes); which is faster depends on the link and the
  load, so the cost is said and no knob is turned.
"""

from __future__ import annotations

import re

_LINKS = re.compile(r"nccl|gloo|time[sd]?\s*out|connect|socket|network|\bray\b|rendezvous", re.I)


def _failure_not_of_the_links(ctx) -> str | None:
    """The first exception the log records whose text is not about the links."""
    for event in ctx.of("exception"):
        text = f"{event.fields.get('type', '')}: {event.fields.get('message', '')}"
        if not _LINKS.search(text):
            return text.strip(": ")[:200]
    return None


def note_reason(ctx, per_node: int) -> str | None:
    """Why the layout is only a note (an evidence line), or None: the fix stands."""
    failure = _failure_not_of_the_links(ctx)
    if failure is not None:
        return (f"the log records a failure the layout does not cause: {failure}; change the "
                "layout once vLLM starts")  # fmt: skip
    if per_node == 1:
        return ("one GPU per node: TP inside a node is TP 1, a pipeline whose stages run one at "
                "a time for a single request; over an RDMA link (RoCE, InfiniBand) TP across the "
                "nodes is the usual layout for single-GPU nodes, PP pays off under load")  # fmt: skip
    return None
