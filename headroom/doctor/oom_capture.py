"""Whether a CUDA OOM fell inside vLLM's CUDA-graph capture, by the start-up's own order.

vLLM's start-up runs in one order in every release read: load the weights, profile, size the
KV cache, then capture CUDA graphs (unless --enforce-eager), then serve. Capture opens with a
line of its own and closes with "Graph capturing finished in N secs[, took X GiB]" (V0
model_runner.py 0.2.7+, V1 gpu_model_runner.py; the catalog's graph_capturing_finished). The
opening texts, each read in vLLM's source at the tags named:

- "Capturing the model for CUDA graphs. This may lead to unexpected consequences if the model
  is not static. ..." (V0 model_runner.py, 0.2.7-0.5.5);
- "Capturing cudagraphs for decoding. ..." (V0 model_runner.py, 0.6.4-0.10.x);
- the tqdm bars "Capturing CUDA graph shapes" (0.6.6+, V0 and V1) and "Capturing CUDA graphs
  (mixed prefill-decode, PIECEWISE)" / "(decode, FULL)" (V1 gpu_model_runner.py, 0.32+).

An OOM after an opening line, with no closing line and no sign of serving (the server's
ready line, engine stats) between them, happened during capture, whatever frames the last
lines of its traceback show: capture first runs the model once per batch size ("warm-up"
runs inside CUDAGraphRunner.capture / _dummy_run), so a long traceback ends in a layer's
forward and the capture frames lie above the lines the phase reader looks at. vLLM's own
hint for it: "If out-of-memory error occurs during cudagraph capture, consider decreasing
`gpu_memory_utilization` or switching to eager mode." (V0 model_runner.py 0.6.4-0.10.x).
"""

from __future__ import annotations

import re

from headroom.probes.vllm_log import LogEvent

CAPTURE_OPENS = re.compile(
    r"Capturing (?:the model for CUDA graphs|cudagraphs for decoding|CUDA graph shapes|"
    r"CUDA graphs \()"
)
# The catalog's graph_capturing_finished line (kind cuda_graph_memory) closes a capture;
# lower case, as the phase reader compares.
CAPTURE_CLOSES = "graph capturing finished"
# Events that say the engine got past its start-up: it was serving.
_SERVING = frozenset({"startup_complete", "stats"})


def capture_open_at_oom(ctx, event: LogEvent) -> str | None:
    """The capture line the OOM `event` falls under (stripped), or None when the log shows
    no capture opened before it, or one closed (or the engine serving) since."""
    before = ctx.lines_before(event, len(ctx.raw_lines))
    if not before:
        return None
    opened: str | None = None
    for line in before[:-1]:
        if CAPTURE_OPENS.search(line):
            opened = line.strip()
        elif CAPTURE_CLOSES in line.lower():
            opened = None
    if opened is None:
        return None
    index = ctx.events.index(event)
    later = [e for e in ctx.events[:index] if e.kind in _SERVING]
    if later and _follows(ctx, later[-1], opened):
        return None  # the engine served after the capture opened: a runtime OOM
    return opened[:300]


def _follows(ctx, serving: LogEvent, opened: str) -> bool:
    """Whether the serving event's line comes after the capture's opening line."""
    lines = ctx.lines_before(serving, len(ctx.raw_lines))
    return any(line.strip() == opened for line in lines[:-1])
