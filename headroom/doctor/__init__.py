"""Think: the memory model, the five-step rules and knob plans. Pure functions over probe snapshots.

`diagnose(DoctorInputs) -> Diagnosis` runs every rule over whatever inputs are present, ranks
the findings (first = most likely root cause), removes actions that would turn a knob against
a higher-ranked finding, and gives each of the five steps a status.
"""

from __future__ import annotations

from headroom.doctor import (
    oom_allocation,
    rules_catalog,
    rules_catalog_comms,
    rules_catalog_config,
    rules_catalog_limits,
    rules_catalog_loading,
    rules_catalog_requests,
    rules_compat,
    rules_defaults,
    rules_eager_speed,
    rules_executor_backend,
    rules_flags,
    rules_gpu,
    rules_hang,
    rules_hints,
    rules_long_context,
    rules_memory_gate,
    rules_multinode,
    rules_multinode_log,
    rules_oom,
    rules_parallel,
    rules_parallel_sizes,
    rules_preflight,
    rules_quant_preflight,
    rules_quant_tp,
    rules_release_flags,
    rules_runtime,
    rules_sm12x,
    rules_startup,
    rules_throughput_caps,
    rules_topology,
    rules_upgrade,
    rules_v1_switch,
    rules_v1_words,
    rules_weights_layout,
    rules_words,
    rules_words_fix,
    rules_words_output,
    rules_words_parallel,
    rules_words_sizing,
    rules_words_start,
    rules_words_usage,
)
from headroom.doctor.context import Context
from headroom.doctor.findings import (
    STEP_NAMES,
    Action,
    Diagnosis,
    DoctorInputs,
    Finding,
    StepStatus,
    action_words,
    diagnosis_to_json,
    plan_to_changes,
)
from headroom.doctor.gpu_spec import GpuSpec, GpuSpecError, parse_gpu_spec
from headroom.doctor.known_knobs import unknown_note
from headroom.doctor.steps import (
    dedupe_actions,
    drop_emptied,
    drop_infeasible,
    drop_no_ops,
    rank,
    resolve_conflicts,
    step_by_top_action,
    step_statuses,
)
from headroom.doctor.words_setup import setup_notes
from headroom.probes.model import describe_unread

__all__ = [
    "STEP_NAMES",
    "Action",
    "Diagnosis",
    "DoctorInputs",
    "Finding",
    "GpuSpec",
    "GpuSpecError",
    "StepStatus",
    "action_words",
    "diagnose",
    "diagnosis_to_json",
    "parse_gpu_spec",
    "plan_to_changes",
    "all_rules",
]


def all_rules():
    return (
        rules_startup.RULES
        + rules_oom.RULES
        + oom_allocation.RULES
        + rules_defaults.RULES
        + rules_upgrade.RULES
        + rules_memory_gate.RULES
        + rules_parallel.RULES
        + rules_parallel_sizes.RULES
        + rules_runtime.RULES
        + rules_gpu.RULES
        + rules_topology.RULES
        + rules_compat.RULES
        + rules_catalog.RULES
        + rules_catalog_limits.RULES
        + rules_quant_tp.RULES
        + rules_quant_preflight.RULES
        + rules_catalog_comms.RULES
        + rules_catalog_requests.RULES
        + rules_catalog_config.RULES
        + rules_executor_backend.RULES
        + rules_catalog_loading.RULES
        + rules_v1_switch.RULES
        + rules_flags.RULES
        + rules_release_flags.RULES
        + rules_sm12x.RULES
        + rules_multinode.RULES
        + rules_multinode_log.RULES
        + rules_hang.RULES
        + rules_preflight.RULES
        + rules_weights_layout.RULES
        + rules_long_context.RULES
        + rules_words_sizing.RULES
        + rules_words.RULES
        + rules_words_fix.RULES
        + rules_words_usage.RULES
        + rules_words_output.RULES
        + rules_words_start.RULES
        + rules_throughput_caps.RULES
        + rules_words_parallel.RULES
        + rules_v1_words.RULES
        + rules_eager_speed.RULES
        + rules_hints.RULES
    )


def diagnose(inputs: DoctorInputs) -> Diagnosis:
    """Every rule over the inputs; never raises on missing or odd data (a rule that fails is
    reported as an info finding rather than hiding the others)."""
    ctx = Context(inputs)
    findings: list[Finding] = []
    for rule in all_rules():
        try:
            findings.extend(rule(ctx))
        except Exception as exc:  # one broken rule must not hide the rest
            findings.append(
                Finding(
                    f"rule-error-{rule.__name__}",
                    None,
                    "info",
                    f"Rule {rule.__name__} could not run",
                    (f"{type(exc).__name__}: {exc}",),
                )
            )
    if any(f.severity == "error" and f.id != "engine-died" for f in findings):
        findings = [f for f in findings if f.id != "engine-died"]  # a symptom of the cause found
    # Every action is checked against the memory model before ranking; after conflicts and
    # repeats are removed, each finding takes the step of its top action's knob.
    checked = [drop_no_ops(drop_infeasible(f, ctx), ctx) for f in findings]
    ranked = step_by_top_action(drop_emptied(dedupe_actions(resolve_conflicts(rank(checked)))))
    return Diagnosis(tuple(ranked), step_statuses(ranked, ctx), tuple(_lacking(ctx)))


def _lacking(ctx: Context) -> list[str]:
    i = ctx.inputs
    out = []
    if i.log is None:
        out.append("no vLLM log (--log)")
    if not i.metrics_history:
        out.append("no metrics (--metrics)")
    elif not any(getattr(m, "state", "up") == "up" for m in i.metrics_history):
        last = i.metrics_history[-1]
        out.append(
            f"metrics not readable: {getattr(last, 'message', None) or getattr(last, 'state', '?')}"
        )
    if i.topology is None:
        out.append("no topology (--topo)")
    out.extend(i.lacking)
    out.extend(setup_notes(ctx))  # what the words stood in for (words_setup)
    partial = ctx.model_read
    if partial is not None and not partial.sizable:
        out.append(describe_unread(partial) or f"model config of {partial.name} is incomplete")
    elif ctx.model is None and not any(line.startswith("model") for line in i.lacking):
        out.append("no model shape (--model-config, or a known model name on the command line)")
    if ctx.gpu is None and ctx.gpu_count is None:
        out.append("no GPU description (--gpus or NVML)")
    if i.command is None:
        out.append("no vLLM command line (after --)")
        note = unknown_note(ctx)
        if note:
            out.append(note)
    return out
