"""Rules for command-line refusals found by the source walk (probes/vllm_catalog/limits.py):
a --gpu-memory-utilization above 1, and two features a release cannot run together.

- "GPU memory utilization must be less than 1.0. Got 90.0." (0.2.7-0.11.0): the flag is a
  fraction; a number above 1 read as a percentage gives the fraction meant, else vLLM's
  long-time default 0.9. Lowering is the only way (0.32+ refuses it in pydantic: le=1).
- Two features one release refuses together (chunked prefill with a sliding window, with LoRA,
  with prefix caching, with multi-step or speculative decoding; prefix caching with an fp8 KV
  cache): drop one of them or take a release that runs both. No memory knob is the fix, and
  which feature to keep is the user's choice, so the finding turns none.
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


RULES = (utilization_out_of_range, feature_combination_unsupported)
