"""Ranking, the no-opposite-actions invariant, and the five step statuses.

Ranking: errors first; among them the failure that stops vLLM earliest in its start-up order
is the root cause (a config error before an OOM before a KV shortage), then runtime
warnings, then info. Conflicts: once a higher-ranked finding turns a knob one way, an action
turning the same knob the other way is removed from every lower-ranked finding (and the
removal is said in that finding's evidence), so the list never tells a person to do both.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from headroom.doctor.candidate_actions import action_problems
from headroom.doctor.findings import (
    STEP_NAMES,
    Action,
    Finding,
    StepStatus,
    finding_step,
    plan_to_changes,
)
from headroom.doctor.memory_model import heads_valid
from headroom.doctor.rank_order import ID_ORDER
from headroom.doctor.rules_parallel import gpus_per_node
from headroom.vllm_cmd import apply_changes

_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}

_ID_ORDER = ID_ORDER  # the rank of equal-severity findings: rank_order.py


# Findings from the command line alone (rules_preflight): after every error and warning, so
# that a finding a real log line gives always ranks first; before the notes.
_AFTER_WARNINGS = ("preflight-",)
# The fix a vLLM message names (rules_hints): below every rule that knows the failure, which
# weighs numbers or knows the release and may rightly lead with another knob.
_BELOW_SPECIFIC = ("vllm-named-fix", "v1-engine-core-failed")
# Findings that only restate changes: dropped when those above them already offer them all.
_DROPPED_WHEN_EMPTIED = _BELOW_SPECIFIC


def _order(finding: Finding) -> tuple[int, int]:
    if finding.id.startswith(_AFTER_WARNINGS):
        return _SEVERITY_ORDER["warning"], len(_ID_ORDER) + 3
    if finding.id.startswith(_BELOW_SPECIFIC):
        return _SEVERITY_ORDER[finding.severity], len(_ID_ORDER) + 1
    for i, prefix in enumerate(_ID_ORDER):
        if finding.id.startswith(prefix):
            return _SEVERITY_ORDER[finding.severity], i
    if finding.id == "engine-died":
        return _SEVERITY_ORDER[finding.severity], len(_ID_ORDER) + 2  # a symptom, never the cause
    return _SEVERITY_ORDER[finding.severity], len(_ID_ORDER)


def rank(findings: list[Finding]) -> list[Finding]:
    unique: dict[str, Finding] = {}
    for f in findings:
        unique.setdefault(f.id, f)
    return sorted(unique.values(), key=_order)


def _opposite(a: str, b: str) -> bool:
    return {a, b} in ({"raise", "lower"}, {"set", "unset"})


_PAST = {"raise": "raised", "lower": "lowered", "set": "set", "unset": "unset"}


def resolve_conflicts(findings: list[Finding]) -> list[Finding]:
    """Drop actions that turn a knob against a higher-ranked finding's action on it."""
    claimed: dict[str, tuple[str, object, str]] = {}  # knob -> (direction, value, finding id)
    out = []
    for f in findings:
        kept, dropped = [], []
        for a in f.actions:
            prior = claimed.get(a.knob)
            conflict = prior is not None and (
                _opposite(prior[0], a.direction)
                or (
                    prior[0] == "set" == a.direction
                    and a.value is not None
                    and prior[1] is not None
                    and prior[1] != a.value
                )
            )
            if conflict and prior is not None:
                dropped.append(
                    f"not proposing to {a.direction} {a.knob}: "
                    f"{prior[2]} wants it {_PAST.get(prior[0], prior[0])}"
                )
            else:
                kept.append(a)
        for a in kept:
            claimed.setdefault(a.knob, (a.direction, a.value, f.id))
        if dropped:
            f = replace(f, actions=tuple(kept), evidence=f.evidence + tuple(dropped))
        out.append(f)
    return out


def _same_change(a, b) -> bool:
    """Whether two actions say the same thing: one knob, one direction, and the same value
    (or one of them is advice without a value, which the other one already covers)."""
    if (a.knob, a.direction) != (b.knob, b.direction):
        return False
    return a.value is None or b.value is None or a.value == b.value


def dedupe_actions(findings: list[Finding]) -> list[Finding]:
    """A knob change appears once per finding, and once in the ranked list: a lower-ranked
    finding does not repeat a change a higher-ranked one already offers (its evidence says
    where the change is)."""
    shown: list[tuple[Action, str]] = []  # (action, finding id), in ranked order
    out = []
    for f in findings:
        kept: list = []
        notes: list[str] = []
        for a in f.actions:
            twin = next((i for i, k in enumerate(kept) if _same_change(k, a)), None)
            if twin is not None:
                if kept[twin].value is None and a.value is not None:
                    kept[twin] = a  # keep the one that can be applied with one key
                continue
            # Across findings only a repeat or bare advice goes: a value that can be applied
            # stays even when a higher-ranked finding only advised the same direction.
            earlier = next(
                (
                    fid
                    for b, fid in shown
                    if _same_change(b, a) and (a.value is None or b.value is not None)
                ),
                None,
            )
            if earlier is not None:
                note = f"{a.direction} {a.knob}: see {earlier}"
                if note not in notes:
                    notes.append(note)
                continue
            kept.append(a)
        shown.extend((a, f.id) for a in kept)
        if notes or len(kept) != len(f.actions):
            f = replace(f, actions=tuple(kept), evidence=f.evidence + tuple(notes))
        out.append(f)
    return out


def drop_emptied(findings: list[Finding]) -> list[Finding]:
    """Remove a finding that only restated changes once the findings above it offer them all
    (dedupe_actions and resolve_conflicts took its actions): it would say nothing more."""
    return [f for f in findings if f.actions or not f.id.startswith(_DROPPED_WHEN_EMPTIED)]


def step_by_top_action(findings: list[Finding]) -> list[Finding]:
    """A finding's step is the step of the knob its top action turns (after conflicts and
    repeats are removed); a finding no knob fixes is "other" (None)."""
    out = []
    for f in findings:
        step = finding_step(f)
        out.append(f if step == f.step else replace(f, step=step))
    return out


def drop_infeasible(finding: Finding, ctx) -> Finding:
    """Remove every action the memory model says breaks a step (a TP whose weights do not
    fit, a utilization that leaves no KV cache, a TP beyond the node), and say why in the
    evidence. Without the model and the GPUs nothing can be checked, so nothing is removed;
    nor without the TP x PP in use (no command line, known_knobs): the check would hold the
    change against a layout nothing says ran."""
    if ctx.model is None or ctx.gpu is None or not finding.actions:
        return finding
    if not ctx.known("tensor_parallel_size"):
        return finding

    def infeasible(a: Action) -> str | None:
        why = action_problems(ctx, a)
        return f"not proposing {a.knob} {a.value}: {why}" if why else None

    return _without(finding, infeasible)


def drop_no_ops(finding: Finding, ctx) -> Finding:
    """Remove every action that would restart the same configuration: an engine arg set to
    the value the command line already gives it (`--enforce-eager` proposed on a line that
    has it). One key must never relaunch what just failed; the evidence says it was there."""
    cmd = ctx.inputs.command
    if cmd is None or not finding.actions:
        return finding

    def no_op(a: Action) -> str | None:
        if _changes_nothing(cmd, a):
            if a.direction == "unset":
                return f"no {a.knob} typed on the command line: nothing to unset"
            return f"{a.knob} is already {a.value} on the command line: not proposed"
        return None

    return _without(finding, no_op)


def _without(finding: Finding, why_dropped: Callable[[Action], str | None]) -> Finding:
    """The finding less every action `why_dropped` gives a reason for, each reason added to
    its evidence; the same finding when none is dropped."""
    kept, notes = [], []
    for a in finding.actions:
        why = why_dropped(a)
        if why:
            notes.append(why)
        else:
            kept.append(a)
    if not notes:
        return finding
    return replace(finding, actions=tuple(kept), evidence=finding.evidence + tuple(notes))


def _changes_nothing(cmd, action: Action) -> bool:
    # Environment variables (upper case) and advice without a value are not on the line.
    if not action.applicable or not action.knob.islower():
        return False
    if action.direction != "unset" and not cmd.has(action.knob):
        return False
    changes = plan_to_changes(action)
    try:
        return apply_changes(cmd, changes).engine_args() == cmd.engine_args()
    except ValueError:  # a value the line cannot take: not ours to judge here
        return False


def _table_step(finding: Finding) -> int | None:
    return finding.step


def ctx_findings(ctx) -> list[Finding]:
    return getattr(ctx, "_ranked_findings", [])


def step_statuses(findings: list[Finding], ctx) -> tuple[StepStatus, ...]:
    ctx._ranked_findings = findings
    statuses = []
    for step, name in STEP_NAMES.items():
        mine = [f for f in findings if _table_step(f) == step]
        if any(f.severity == "error" for f in mine):
            worst = next(f for f in mine if f.severity == "error")
            statuses.append(StepStatus(step, name, "fail", worst.title))
            continue
        if any(f.severity == "warning" for f in mine):
            worst = next(f for f in mine if f.severity == "warning")
            statuses.append(StepStatus(step, name, "warn", worst.title))
            continue
        status, why = _ok_or_unknown(step, ctx, mine)
        if mine and status == "ok":  # an info finding: still ok, but say what was noticed
            why = f"{why}; note: {mine[0].title}"
        statuses.append(StepStatus(step, name, status, why))
    return tuple(statuses)


def _ok_or_unknown(step: int, ctx, infos: list[Finding]) -> tuple[str, str]:
    acc = ctx.account
    model, knobs = ctx.model, ctx.knobs
    layout = ctx.known("tensor_parallel_size")
    if step == 1:
        if acc is not None and not layout:
            return "unknown", (
                f"the TP x PP in use is not known (no command line): the weights are "
                f"{acc.weights_gib:.2f} GiB on one GPU, split over TP x PP"
            )
        if acc is not None:
            return "ok", (
                f"weights {acc.weights_gib:.2f} GiB per GPU leave {acc.kv_cache_gib:.2f} GiB "
                f"for KV at TP {acc.tp} x PP {acc.pp}"
            )
        if ctx.events and not ctx.of("cuda_oom", "no_cache_memory"):
            return "ok", "the log shows no memory failure"
        return "unknown", "needs the model (name, --model-config) and the GPUs (--gpus or NVML)"
    if step == 2:
        partial = ctx.model_read  # a config too partial to size may still give the heads
        if model is None and partial is not None and partial.num_attention_heads:
            model = partial if partial.num_kv_heads else None
        if model is None:
            return "unknown", "needs the model's head counts"
        if not layout:
            limit = ctx.gpu_count or 8
            tps = ", ".join(str(t) for t in range(1, limit + 1) if heads_valid(model, t))
            return "unknown", (
                f"the TP in use is not known (no command line); TPs up to {limit} that divide "
                f"{model.num_attention_heads} heads and {model.num_kv_heads} KV heads: {tps}"
            )
        if not heads_valid(model, knobs.tp):  # no finding says so, but the line would not start
            return "fail", (
                f"TP {knobs.tp} does not divide {model.num_attention_heads} heads and "
                f"{model.num_kv_heads} KV heads (vLLM refuses it at start-up)"
            )
        why = f"TP {knobs.tp} divides {model.num_attention_heads} heads and {model.num_kv_heads} KV heads"
        if ctx.inputs.topology is None and ctx.gpu is None:
            return "ok", why + "; links unknown (no topology)"
        return "ok", why
    if step == 3:
        nodes = ctx.nodes
        per_node, source = gpus_per_node(ctx, nodes)
        if per_node is None:
            return "unknown", "needs the GPU count"
        where = f"{per_node} GPU(s) per node"
        if nodes > 1:
            where += f" x {nodes} nodes" + ("" if ctx.gpu_count else f" ({source})")
        if not layout:
            return "unknown", f"the TP x PP in use is not known (no command line); {where}"
        return "ok", f"TP {knobs.tp} x PP {knobs.pp} on {where}"
    if step == 4:
        missing = [name for name, said in (("TP x PP", layout),
                   ("max_model_len", ctx.known("max_model_len"))) if not said]  # fmt: skip
        if acc is not None and missing:
            return "unknown", (
                f"needs the {' and '.join(missing)} in use to size the KV cache (no command line)"
            )
        if acc is not None:
            return "ok", (
                f"KV cache {acc.kv_capacity_tokens:,} tokens = {acc.max_concurrency:.2f} requests "
                f"of {acc.max_model_len:,}"
            )
        if ctx.inputs.metrics_history:
            return "ok", "no KV pressure in the metrics"
        return "unknown", "needs a log, metrics, or model + GPUs"
    if step == 5:
        kv = (knobs.kv_cache_dtype or "auto").lower()
        wanting = [
            f for f in ctx_findings(ctx) if any(a.knob == "kv_cache_dtype" for a in f.actions)
        ]
        if wanting and not kv.startswith("fp8"):
            return (
                "warn",
                f"an fp8 KV cache would double the tokens ({wanting[0].id}); needs a quality check",
            )
        if kv.startswith("fp8"):
            return "ok", f"KV cache already in {kv}"
        if acc is not None or ctx.inputs.metrics_history or ctx.events:
            return "ok", "fp8 KV cache not needed by the evidence"
        return "unknown", "nothing to judge KV pressure from"
    return "unknown", ""
