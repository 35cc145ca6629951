"""The fix vLLM's own error names, for any wording of any release (finding `vllm-named-fix`).

Many of vLLM's errors say their cure ("Please set `--trust-remote-code`", "You can use
float16 instead by explicitly setting the `dtype` flag in CLI, for example: --dtype=half",
"consider setting `VLLM_ALLOW_LONG_MAX_MODEL_LEN=1`", "This model requires `--tokenizer-mode
mistral`"). The signature catalog knows a few hundred of vLLM's texts; each release words
new ones. This rule reads the fix out of any error message of vLLM's
(probes.vllm_hint_lines picks them, probes.vllm_hints reads them) and proposes it, checked:

- only vLLM's own text: a logger record at ERROR, an exception, the server's JSON error; never
  a person's sentence, a client's quoted prompt or a traceback's source line;
- never where the catalog recognised the line as a specific failure: that entry's own rule
  weighs the numbers and may rightly lead with another knob than the message's first hint
  (or the catalog says it is no configuration problem);
- only real knobs (hint_knobs: vLLM's flags of every release read, the variables it reads);
- a memory knob only the way the failure in the log wants it (a CUDA OOM: less memory; a KV
  shortage: more KV budget), whatever the message says.

Ranked below every specific rule (steps._order), and dropped when the findings above it
already offer every change it names.
"""

from __future__ import annotations

from headroom.doctor.findings import Action, Finding
from headroom.doctor.hint_knobs import (
    KNOWN_NAMES,
    ResolvedFix,
    doctrine_problem,
    memory_failure,
    resolve,
)
from headroom.probes.vllm_catalog import SIGNATURES
from headroom.probes.vllm_hint_lines import VllmMessage, vllm_messages
from headroom.probes.vllm_hints import fixes_in_message

__all__ = ["RULES", "named_fix"]

FINDING_ID = "vllm-named-fix"
_MAX_FINDINGS = 3
# Lines the catalog reads as "some exception" or an echo of the engine's death: their own
# rules know nothing of the message's words, so the message's fix is worth reading.
_SIGNATURES = {sig.id: sig for sig in SIGNATURES}
_ECHO_KINDS = frozenset(
    {"engine_core_failed", "engine_dead", "worker_died", "worker_exception", "traceback"}
)


def named_fix(ctx) -> list[Finding]:
    digest = ctx.digest
    lines = list(getattr(digest, "lines", None) or ())
    if not lines:
        return []
    first = max(getattr(digest, "line_count", len(lines)) - len(lines), 0) + 1
    specific = _specific_lines(ctx)
    out: list[Finding] = []
    seen: set[tuple] = set()
    for message in vllm_messages(lines, first):
        if len(out) >= _MAX_FINDINGS:
            break
        if message.severity != "error" or message.lineno in specific:
            continue
        finding = _finding(ctx, message)
        if finding is None:
            continue
        key = tuple((a.knob, a.direction, a.value) for a in finding.actions)
        if key not in seen:
            seen.add(key)
            out.append(finding)
    return out


def _specific_lines(ctx) -> set[int]:
    """Line numbers the catalog read as a specific failure (its own rule answers them)."""
    found = set()
    for event in ctx.events:
        if event.lineno is None or event.fields.get("from_words"):
            continue
        sig = _SIGNATURES.get(event.signature or "")
        if sig is None or sig.generic or event.kind in _ECHO_KINDS:
            continue
        found.add(event.lineno)
    return found


def _finding(ctx, message: VllmMessage) -> Finding | None:
    fixes = fixes_in_message(message.text, KNOWN_NAMES)
    if not fixes:
        return None
    failure = memory_failure(ctx, message.text)
    kept: list[ResolvedFix] = []
    actions: list[Action] = []
    evidence = [message.text[:400]]
    for fix in fixes:
        resolved = resolve(fix, _current(ctx, fix.knob))
        if resolved is None:
            continue
        problem = doctrine_problem(resolved, failure)
        if problem is not None:
            evidence.append(f"not following the message's '{fix.verb} {fix.spelled}': {problem}")
            continue
        kept.append(resolved)
        actions.append(_action(resolved, fix.sentence))
        if resolved.note:
            evidence.append(resolved.note)
    if not actions:
        return None
    title = f"vLLM's error names its fix: {_phrase(kept[0])}"
    if len(kept) > 1:
        title += " (or " + ", ".join(_phrase(k) for k in kept[1:3]) + ")"
    return Finding(FINDING_ID, None, "error", title, tuple(evidence), tuple(actions))


def _current(ctx, knob: str) -> object | None:
    """The knob's value in force: the command's (or the log's non-default args), the
    utilization the release defaults to."""
    value = ctx.arg(knob) if knob.islower() else None
    if value is None and knob == "gpu_memory_utilization":
        return ctx.utilization
    if value is None and knob == "tensor_parallel_size":
        return ctx.knobs.tp
    return value


def _action(fix: ResolvedFix, sentence: str) -> Action:
    why = f"vLLM's own message says so: \u201c{sentence[:240]}\u201d"
    cost = "drop the setting" if fix.remove and fix.value is None else ""
    return Action(fix.knob, fix.direction, fix.value, why, cost)


def _phrase(fix: ResolvedFix) -> str:
    if fix.remove:
        return f"drop {fix.spelled}"
    if fix.direction in ("raise", "lower"):
        value = f" to {fix.value}" if fix.value is not None else ""
        return f"{fix.direction} {fix.spelled.split()[0]}{value}"
    return fix.spelled


RULES = (named_fix,)
