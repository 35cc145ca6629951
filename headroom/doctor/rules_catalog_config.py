"""Rules for command-line refusals found by the source walk (probes/vllm_catalog/limits.py):
a --gpu-memory-utilization above 1, and two features a release cannot run together.

- "GPU memory utilization must be less than 1.0. Got 90.0." (0.2.7-0.11.0): the flag is a
  fraction; a number above 1 read as a percentage gives the fraction meant, else vLLM's
  long-time default 0.9. Lowering is the only way (0.32+ refuses it in pydantic: le=1).
- Two features one release refuses together (chunked prefill with a sliding window, with LoRA,
  with prefix caching, with multi-step or speculative decoding; prefix caching with an fp8 KV
  cache): drop one of them or take a release that runs both. No memory knob is the fix, and
  which feature to keep is the user's choice, so the finding turns none.
- An fp8 KV cache the model's head size or a kernel refuses: --kv-cache-dtype auto (step 5).
- A CUDA-graph mode the model or backend lacks: eager for 0.9's Mamba layers; piecewise
  graphs (a compilation setting, no knob here) for full graphs on a backend without them.
"""

from __future__ import annotations

from headroom.doctor.findings import Action, Finding

_DEFAULT_UTILIZATION = 0.9  # vLLM's default from 0.1 to 0.11


def utilization_out_of_range(ctx) -> list[Finding]:
    events = ctx.of("utilization_out_of_range")
    if not events:
        return []
    event = events[0]
    try:
        given = float(event.fields.get("utilization"))
    except (TypeError, ValueError):
        given = None
    value = _DEFAULT_UTILIZATION
    why = "--gpu-memory-utilization is the fraction of GPU memory vLLM may use (0.9 = 90%)"
    if given is not None and 1 < given <= 100 and given / 100 < 1:
        value = round(given / 100, 2)
        why += f": {given:g} reads as {given:g}%, i.e. {value}"
    act = Action("gpu_memory_utilization", "lower", value, why, "none: the value was not valid")
    title = "--gpu-memory-utilization is above 1 (it is a fraction)"
    return [Finding("utilization-out-of-range", 4, "error", title, (event.line.strip(),), (act,))]


def feature_combination_unsupported(ctx) -> list[Finding]:
    events = ctx.of("feature_combination_unsupported")
    if not events:
        return []
    evidence = (
        events[0].line.strip()[:400],
        "this release refuses the two features together: drop one of them (the message names "
        "the flag where vLLM gives one), or take a release that runs both; no memory knob",
    )
    title = "This vLLM release cannot run two of the requested features together"
    return [Finding("feature-combination-unsupported", None, "error", title, evidence, ())]


def kv_cache_dtype_refused(ctx) -> list[Finding]:
    """An fp8 KV cache this model's head size (fp8 keys need head_size % 16 == 0) or kernel
    (0.11's TRTLLM FP8 attention with sinks) refuses: --kv-cache-dtype auto, step 5 undone."""
    events = ctx.of("kv_cache_dtype_refused")
    if not events:
        return []
    event = events[0]
    head = event.fields.get("head_size")
    why = "vLLM refuses an fp8 KV cache here" + (
        f": head_size {head} is not a multiple of 16" if head else ""
    )
    act = Action(
        "kv_cache_dtype", "set", "auto", why, "the KV cache takes twice the bytes per token"
    )
    title = "An fp8 KV cache cannot run with this model or kernel"
    return [Finding("kv-cache-dtype-refused", 5, "error", title, (event.line.strip(),), (act,))]


def cuda_graph_unsupported(ctx) -> list[Finding]:
    """A CUDA-graph mode the model (0.9's Mamba layers) or the attention backend (full graphs)
    lacks: eager mode for the first; piecewise graphs, a compilation setting, for the second."""
    events = ctx.of("cuda_graph_unsupported")
    if not events:
        return []
    event = events[0]
    if event.signature == "mamba_cuda_graph":
        act = Action(
            "enforce_eager",
            "set",
            True,
            "this release runs Mamba layers only without CUDA graphs",
            "no CUDA graphs: slower decoding",
        )
        title = "This model's Mamba layers cannot run in CUDA graphs on this release"
        return [Finding("cuda-graph-unsupported", 4, "error", title, (event.line.strip(),), (act,))]
    evidence = (
        event.line.strip()[:400],
        "full CUDA graphs need an attention backend that supports them: set the compilation "
        "config's cudagraph_mode to PIECEWISE (or full_cuda_graph off), or another backend; "
        "--enforce-eager also starts, without any CUDA graphs",
    )
    title = "Full CUDA graphs are not supported by this attention backend"
    return [Finding("cuda-graph-unsupported", None, "error", title, evidence, ())]


RULES = (
    utilization_out_of_range,
    feature_combination_unsupported,
    kv_cache_dtype_refused,
    cuda_graph_unsupported,
)
