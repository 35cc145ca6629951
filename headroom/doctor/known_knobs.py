"""Which knobs the input says: set, left to the release's default, or not known at all.

About half of what people paste into the doctor has no command line (an error and a title),
and then `Context.knobs` holds `Knobs()`: TP 1, PP 1, the release's utilization and lengths.
Those are placeholders, not facts. A knob is

- *set* when the command line gives it or the log says what vLLM ran with: the engine's
  config line every release prints ("tensor_parallel_size=8, pipeline_parallel_size=1, ...
  max_seq_len=32768", llm_engine.py / v1 core), `vllm serve`'s "non-default args: {...}"
  line (0.9+), /metrics' cache_config_info, the server's /v1/models max_model_len;
- *default* when a command line was given and does not set it, or the log's non-default
  args line leaves it out: vLLM's default for that release applies, a fact;
- *unknown* when there is no command line and nothing in the log says it.

Rules that draw a conclusion from a knob's value ask here first, and treat an unknown knob as
unknown: they reason over the range it could take (TP x PP from 1 to the GPUs at hand) or say
in the evidence what it would take to decide, and leave the lead to what is known.
"""

from __future__ import annotations

SET, DEFAULT, UNKNOWN = "set", "default", "unknown"

# Knobs the log's own lines can say, and the StartupFacts field that carries each.
_LOGGED = {
    "tensor_parallel_size": "tensor_parallel_size",
    "pipeline_parallel_size": "pipeline_parallel_size",
    "max_model_len": "max_model_len",
}
# How each knob reads in a sentence that says it is not known.
_SPOKEN = {
    "tensor_parallel_size": "TP",
    "pipeline_parallel_size": "PP",
    "max_model_len": "max_model_len",
    "max_num_seqs": "max_num_seqs",
    "max_num_batched_tokens": "max_num_batched_tokens",
    "gpu_memory_utilization": "gpu_memory_utilization",
}


def knob_state(ctx, arg: str) -> str:
    """SET, DEFAULT or UNKNOWN for one engine arg (underscore name), as the module says."""
    cmd = ctx.inputs.command
    if cmd is not None:
        return SET if cmd.get(arg) is not None else DEFAULT
    if arg in ctx.launched_args:
        return SET
    field = _LOGGED.get(arg)
    if field is not None and getattr(ctx.facts, field, None) is not None:
        return SET
    if getattr(ctx.facts, "non_default_args", None):
        return DEFAULT  # the log lists what was set, and this is not among them
    return UNKNOWN


def gpus_in_all(ctx) -> int | None:
    """The GPUs the deployment could use, every node: the described GPUs (or the count the
    words give) times the nodes; None when nothing says."""
    per_node = ctx.gpu_count
    if per_node is None and ctx.words is not None:
        per_node = ctx.words.gpus_at_hand
    if not per_node:
        return None
    return per_node * max(ctx.nodes, 1)


def layout_known(ctx) -> bool:
    """Whether TP and PP in force are known: said (set or default), or only one GPU at hand."""
    if gpus_in_all(ctx) == 1:
        return True
    return all(
        knob_state(ctx, arg) != UNKNOWN
        for arg in ("tensor_parallel_size", "pipeline_parallel_size")
    )


def known(ctx, arg: str) -> bool:
    """Whether the value of `arg` in force is known (TP/PP also when one GPU is all there is)."""
    if arg in ("tensor_parallel_size", "pipeline_parallel_size"):
        return layout_known(ctx)
    return knob_state(ctx, arg) != UNKNOWN


def unknown_note(ctx) -> str | None:
    """The lacking line that names the knobs nothing gave (None when all are known)."""
    if ctx.inputs.command is not None:
        return None
    missing = [spoken for arg, spoken in _SPOKEN.items() if not known(ctx, arg)]
    if not missing:
        return None
    return (
        "no command line: " + ", ".join(missing) + " in force not known (the doctor does not "
        "assume vLLM's defaults; the command line after -- would say)"
    )
