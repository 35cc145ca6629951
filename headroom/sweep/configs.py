"""What a sweep tries: `--try "tp=2,pp=2"` specs or the planner's feasible layouts, each
checked against the five steps before anything is launched.

A configuration that the doctor's memory model or the head/node rules say cannot start is
skipped with the reason (heads, memory, nodes): a sweep never launches a run to watch it
fail. The single-GPU baseline comes first whenever it is feasible, since every ratio in
the table is against it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from headroom.doctor.gpu_spec import GpuSpec
from headroom.doctor.planner import plan
from headroom.vllm_cmd import VllmCommand, apply_changes
from headroom.vllm_cmd.flags import lookup_dest, lookup_option

__all__ = ["SweepTry", "candidate_tries", "check_feasible", "order_tries", "parse_try"]

# Short names people type in --try; anything else must be a vLLM engine-arg name.
ALIASES: Mapping[str, str] = {
    "tp": "tensor_parallel_size",
    "pp": "pipeline_parallel_size",
    "dp": "data_parallel_size",
    "util": "gpu_memory_utilization",
    "seqs": "max_num_seqs",
    "len": "max_model_len",
    "batched": "max_num_batched_tokens",
    "kv": "kv_cache_dtype",
}
_SHORT = {v: k for k, v in ALIASES.items() if k in ("tp", "pp", "dp")}


class TryError(ValueError):
    """A --try the sweep cannot read; the message says why."""


@dataclass(frozen=True)
class SweepTry:
    """One configuration: knob changes on top of the base command line."""

    changes: Mapping[str, object]
    label: str = ""
    skip_reason: str | None = None  # set by check_feasible
    notes: tuple[str, ...] = field(default=())

    @property
    def gpus(self) -> int:
        tp = int(self.changes.get("tensor_parallel_size", 1) or 1)  # type: ignore[call-overload]
        pp = int(self.changes.get("pipeline_parallel_size", 1) or 1)  # type: ignore[call-overload]
        dp = int(self.changes.get("data_parallel_size", 1) or 1)  # type: ignore[call-overload]
        return tp * pp * dp

    @property
    def is_single_gpu(self) -> bool:
        return self.gpus == 1


def _value(text: str) -> object:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    return text


def label_of(changes: Mapping[str, object]) -> str:
    parts = []
    for name, value in changes.items():
        short = _SHORT.get(name)
        parts.append(f"{short.upper()}={value}" if short else f"{name}={value}")
    return " ".join(parts) or "as given"


def parse_try(text: str) -> SweepTry:
    """`tp=2,pp=2` or `tp=1 max_num_seqs=64` -> SweepTry. Raises TryError."""
    changes: dict[str, object] = {}
    for part in text.replace(",", " ").split():
        if "=" not in part:
            raise TryError(
                f"cannot read {part!r} in --try {text!r}: expected KNOB=VALUE, e.g. tp=2"
            )
        key, _, raw = part.partition("=")
        key = key.strip().lower().lstrip("-")
        name = ALIASES.get(key, key.replace("-", "_"))
        if lookup_dest(name) is None and lookup_option("--" + name.replace("_", "-")) is None:
            raise TryError(
                f"unknown knob {key!r} in --try {text!r} (tp, pp, dp or a vLLM flag name)"
            )
        if not raw:
            raise TryError(f"{key} has no value in --try {text!r}")
        changes[name] = _value(raw)
    if not changes:
        raise TryError("an empty --try")
    return SweepTry(changes=changes, label=label_of(changes))


def check_feasible(
    item: SweepTry, *, base: VllmCommand, model, gpu: GpuSpec | None, nodes: int = 1
) -> SweepTry:
    """The try with skip_reason set when the five steps say it cannot start."""
    if gpu is not None and item.gpus > gpu.count * nodes:
        why = f"needs {item.gpus} GPUs; {gpu.shape(nodes)} has {gpu.count * nodes}"
        return SweepTry(item.changes, item.label, f"nodes: {why}")
    if model is None or gpu is None:
        return SweepTry(item.changes, item.label, None, ("not checked: model or GPUs unknown",))
    command = apply_changes(base, item.changes)
    try:
        result = plan(model, gpu, nodes=nodes, command=command)
    except (ValueError, ZeroDivisionError) as exc:
        return SweepTry(item.changes, item.label, f"cannot be evaluated: {exc}")
    # `fits` is the memory verdict; a failed step (heads that do not divide, TP beyond a
    # node) refuses the start just as surely.
    failed = [(step, text) for step, status, text in result.steps if status == "fail"]
    names = {1: "memory", 2: "heads", 3: "nodes", 4: "memory", 5: "memory"}
    if failed:
        step, text = failed[0]
        why = f"{names.get(step, 'step')} (step {step}): {text}"
        return SweepTry(item.changes, item.label, why)
    if not result.fits:
        return SweepTry(item.changes, item.label, "memory: does not fit by the memory model")
    return item


def candidate_tries(model, gpu: GpuSpec, *, nodes: int = 1) -> list[SweepTry]:
    """The TP x PP layouts worth comparing on these GPUs: TP over the head-valid sizes inside
    a node, PP over powers of two up to the GPUs left, TP=1 first."""
    total = gpu.count * nodes
    found: list[SweepTry] = []
    for pp in (1, 2, 4, 8):
        for tp in (1, 2, 4, 8, 16):
            if tp * pp > total or tp > gpu.count:
                continue
            changes: dict[str, object] = {"tensor_parallel_size": tp}
            if pp > 1:
                changes["pipeline_parallel_size"] = pp
            found.append(SweepTry(changes, label_of(changes)))
    return found


def order_tries(tries: Sequence[SweepTry]) -> list[SweepTry]:
    """Feasible single-GPU baseline first, then by GPU count, keeping the given order
    otherwise; skipped ones stay in the list (the table shows why)."""
    indexed = list(enumerate(tries))

    def key(pair: tuple[int, SweepTry]) -> tuple[int, int, int]:
        index, item = pair
        baseline = 0 if item.is_single_gpu and item.skip_reason is None else 1
        return (baseline, item.gpus, index)

    return [item for _, item in sorted(indexed, key=key)]
