"""What the doctor says: findings with evidence and knob actions, one status per step.

These are the contract types of docs/ARCHITECTURE.md (Action, Finding, StepStatus, Diagnosis,
DoctorInputs) plus their JSON form, which is the `headroom doctor --json` schema.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from headroom.vllm_cmd import REMOVE  # the command module's removal marker, for an unset

if TYPE_CHECKING:  # snapshot types of the probe layer; only needed for annotations
    from headroom.doctor.gpu_spec import GpuSpec
    from headroom.probes.host import HostFacts
    from headroom.probes.metrics import ServerMetrics
    from headroom.probes.model import ModelShape
    from headroom.probes.nvml import GpuSnapshot
    from headroom.probes.ray_cluster import RayCluster
    from headroom.probes.topology import TopologyMatrix
    from headroom.probes.vllm_log import LogDigest
    from headroom.vllm_cmd import VllmCommand

SEVERITIES = ("info", "warning", "error")
# "unset" removes a knob: a flag with its `--no-x` / `=value` forms off the command line, or
# an environment variable out of the server's environment (vLLM's default comes back).
DIRECTIONS = ("raise", "lower", "set", "unset")

# The five-step table. Step None is "other": host and NCCL settings, foreign processes,
# a second engine on the same GPU.
STEP_NAMES: Mapping[int, str] = {
    1: "Memory accounting -> lowest TP",
    2: "Head divisibility and interconnect -> highest TP",
    3: "TP inside a node, PP across nodes",
    4: "gpu_memory_utilization, then max_model_len (also max_num_seqs / max_num_batched_tokens)",
    5: "fp8 KV cache",
}


@dataclass(frozen=True)
class Action:
    """One knob change. `value` None means advice only (it cannot be applied with one key),
    except for "unset", which needs no value: the knob is removed, and its value is None."""

    knob: str  # vLLM engine-arg name with underscores, e.g. "gpu_memory_utilization"
    direction: str  # "raise" | "lower" | "set" | "unset"
    value: object | None
    why: str
    cost: str = ""
    # Knobs that must change in the same restart (lowering TP needs PP to take the GPUs);
    # each also appears as its own action in the same finding.
    also: tuple[tuple[str, object], ...] = ()
    # The step this change belongs to when the knob alone does not say (TP is step 1 when
    # memory sets it, step 2 when heads or links do); None = the knob's own step (knob_step).
    step: int | None = None

    def __post_init__(self) -> None:
        if self.direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {DIRECTIONS}, not {self.direction!r}")
        if self.direction == "unset" and self.value is not None:
            raise ValueError(f"an unset takes no value (the knob goes), not {self.value!r}")
        if self.step is not None and self.step not in STEP_NAMES:
            raise ValueError(f"step must be 1-5 or None, not {self.step!r}")

    @property
    def applicable(self) -> bool:
        """Whether one key can apply it: a value to set, or a knob to remove."""
        return self.value is not None or self.direction == "unset"


def action_words(action: Action) -> str:
    """The change in words: "raise max_num_seqs to 64", "unset enforce_eager (remove the
    flag)", "unset VLLM_USE_V1 (remove the environment variable)", advice without a value."""
    if action.direction == "unset":
        what = "environment variable" if action.knob.isupper() else "flag"
        return f"unset {action.knob} (remove the {what})"
    if action.value is None:
        return f"{action.direction} {action.knob}"
    return f"{action.direction} {action.knob} to {action.value}"


# Which step each knob belongs to (the table in README "The five steps"): step 4's budget and
# batch knobs, step 5's KV dtype; quantized weights are step 1's (they lower the TP needed).
KNOB_STEPS: Mapping[str, int] = {
    "gpu_memory_utilization": 4,
    "kv_cache_memory_bytes": 4,
    "max_model_len": 4,
    "max_num_seqs": 4,
    "max_num_batched_tokens": 4,
    "enforce_eager": 4,
    "kv_cache_dtype": 5,
    "quantization": 1,
    "pipeline_parallel_size": 3,
}


def compact_actions(actions) -> tuple[Action, ...]:
    """The actions a rule built, less the None of each knob already at its limit."""
    return tuple(a for a in actions if a is not None)


def knob_step(action: Action) -> int | None:
    """The step of the knob an action turns. TP: step 3 when it moves with PP (a layout across
    nodes or stages), step 1 when raised (memory sets the lowest TP), step 2 when lowered or
    set (heads and links set the highest); an action may name its step where the reason
    differs (a raise to the next TP that divides the heads is step 2's)."""
    if action.step is not None:
        return action.step
    if action.knob == "tensor_parallel_size":
        if any(k == "pipeline_parallel_size" for k, _ in action.also):
            return 3
        return 1 if action.direction == "raise" else 2
    return KNOB_STEPS.get(action.knob)


def finding_step(finding: Finding) -> int | None:
    """A finding belongs to the step of its top action's knob; an error no knob fixes is
    "other" (None); a warning or note without an action keeps the step it describes."""
    if finding.actions:
        return knob_step(finding.actions[0])
    return None if finding.severity == "error" else finding.step


@dataclass(frozen=True)
class Finding:
    """A diagnosis a person can act on: what is wrong, why we think so, and what to turn."""

    id: str
    step: int | None
    severity: str
    title: str
    evidence: tuple[str, ...] = ()
    actions: tuple[Action, ...] = ()

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, not {self.severity!r}")
        if self.step is not None and self.step not in STEP_NAMES:
            raise ValueError(f"step must be 1-5 or None, not {self.step!r}")


@dataclass(frozen=True)
class StepStatus:
    """The table view: one row per step with a status and the reason for it."""

    step: int
    name: str
    status: str  # "ok" | "warn" | "fail" | "unknown"
    why: str


@dataclass(frozen=True)
class Diagnosis:
    """Ranked findings (first = most likely root cause) and the five step statuses."""

    findings: tuple[Finding, ...]
    steps: tuple[StepStatus, ...]
    lacking: tuple[str, ...] = ()  # inputs the doctor did not have, in words

    @property
    def worst_severity(self) -> str | None:
        if not self.findings:
            return None
        return max((f.severity for f in self.findings), key=SEVERITIES.index)


@dataclass(frozen=True)
class DoctorInputs:
    """Everything the doctor may reason from; any of it may be missing."""

    command: VllmCommand | None = None
    log: LogDigest | None = None
    metrics_history: Sequence[ServerMetrics] = ()
    gpus: GpuSnapshot | None = None
    gpu_spec: GpuSpec | None = None
    topology: TopologyMatrix | None = None
    model: ModelShape | None = None
    host: HostFacts | None = None
    vllm_version: str | None = None
    nodes: int = 1
    ray_cluster: RayCluster | None = None  # the Ray cluster under a multi-node start
    extra: Mapping[str, Any] = field(default_factory=dict)
    # What the input loading could not read (a hub that did not answer, a config field, the
    # memory of `--gpus 4xGPU`): reported in Diagnosis.lacking, never an error.
    lacking: tuple[str, ...] = ()
    gpu_count: int | None = None  # GPUs known by count only (no memory, so no GpuSpec)
    # A model named by the user (--model-config NAME) that no table, file or hub could read:
    # the doctor still reads its name (a parameter count, a context length, a family).
    model_name: str | None = None


def action_to_json(a: Action) -> dict[str, object]:
    return {
        "knob": a.knob,
        "direction": a.direction,
        "value": _jsonable(a.value),
        "applicable": a.applicable,
        "why": a.why,
        "cost": a.cost,
        "also": {k: _jsonable(v) for k, v in a.also},
        "step": knob_step(a),
    }


def finding_to_json(f: Finding) -> dict[str, object]:
    return {
        "id": f.id,
        "step": f.step,
        "severity": f.severity,
        "title": f.title,
        "evidence": list(f.evidence),
        "actions": [action_to_json(a) for a in f.actions],
    }


def diagnosis_to_json(d: Diagnosis) -> dict[str, object]:
    """The `headroom doctor --json` document: {"findings": [...], "steps": [...]}."""
    return {
        "findings": [finding_to_json(f) for f in d.findings],
        "steps": [
            {"step": s.step, "name": s.name, "status": s.status, "why": s.why} for s in d.steps
        ],
        "lacking": list(d.lacking),
    }


def plan_to_changes(action: Action) -> dict[str, object]:
    """knob -> value for cmdline.apply_changes (vllm_cmd.REMOVE for an unset: the flag in
    every spelling, or the environment variable, goes); empty for advice (value None)."""
    if action.direction == "unset":
        return {action.knob: REMOVE, **dict(action.also)}
    if action.value is None:
        return {}
    return {action.knob: action.value, **dict(action.also)}


def _jsonable(value: object) -> object:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)
