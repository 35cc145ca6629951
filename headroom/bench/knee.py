"""The knee of a concurrency ramp: where one more concurrent request stops paying.

Gain is measured as *marginal efficiency*: the relative throughput gain from one step to
the next divided by the relative concurrency increase,

    efficiency = ((T_next - T) / T) / ((c_next - c) / c)

1.0 means throughput grew in proportion to concurrency (the GPU had room); 0 means the extra
requests only queued. The knee is the last step before efficiency falls below a threshold,
or the last step whose p95 latency stayed within a target (whichever comes first), because
beyond it added load buys latency, not throughput.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from headroom.bench.stats import StepResult

DEFAULT_GAIN_THRESHOLD = 0.25


@dataclass(frozen=True)
class LatencyTargets:
    """p95 ceilings in seconds; None = no target for that figure."""

    ttft_p95: float | None = None
    itl_p95: float | None = None
    e2e_p95: float | None = None

    def breaches(self, step: StepResult) -> list[str]:
        out = []
        for name, target in (
            ("ttft_p95", self.ttft_p95),
            ("itl_p95", self.itl_p95),
            ("e2e_p95", self.e2e_p95),
        ):
            value = getattr(step, name)
            if target is not None and value is not None and value > target:
                label = name.replace("_p95", "").upper() + " p95"
                out.append(f"{label} {value * 1000:.0f} ms > target {target * 1000:.0f} ms")
        return out

    def to_json(self) -> dict[str, float | None]:
        return {"ttft_p95": self.ttft_p95, "itl_p95": self.itl_p95, "e2e_p95": self.e2e_p95}


@dataclass(frozen=True)
class Knee:
    """The knee step (None when not found) and why; `knee` in `bench --json`."""

    concurrency: int | None
    step_index: int | None
    reason: str
    kind: str  # "gain" | "latency" | "none" | "errors"
    efficiency: float | None = None  # marginal efficiency of the step after the knee

    def to_json(self) -> dict[str, object]:
        return {
            "step": self.step_index,
            "concurrency": self.concurrency,
            "reason": self.reason,
            "kind": self.kind,
            "efficiency": self.efficiency,
        }


def marginal_efficiency(prev: StepResult, nxt: StepResult) -> float | None:
    t0, t1 = prev.output_tokens_per_s, nxt.output_tokens_per_s
    if t0 is None or t1 is None or t0 <= 0 or nxt.concurrency <= prev.concurrency:
        return None
    return ((t1 - t0) / t0) / ((nxt.concurrency - prev.concurrency) / prev.concurrency)


def find_knee(
    steps: Sequence[StepResult],
    gain_threshold: float = DEFAULT_GAIN_THRESHOLD,
    targets: LatencyTargets | None = None,
) -> Knee:
    """Walk the ramp in order and stop at the first step that no longer pays."""
    targets = targets or LatencyTargets()
    if not steps:
        return Knee(None, None, "no steps were measured", "none")
    first_breach = targets.breaches(steps[0])
    if first_breach:
        return Knee(
            None,
            None,
            f"already past the latency target at concurrency {steps[0].concurrency}: "
            + "; ".join(first_breach),
            "latency",
        )
    for i in range(len(steps) - 1):
        cur, nxt = steps[i], steps[i + 1]
        if _failing(nxt) and not _failing(cur):
            return Knee(
                cur.concurrency,
                i,
                f"at concurrency {nxt.concurrency} {nxt.errors} of "
                f"{nxt.errors + nxt.requests} requests failed",
                "errors",
            )
        breach = targets.breaches(nxt)
        if breach:
            return Knee(
                cur.concurrency,
                i,
                f"at concurrency {nxt.concurrency} " + "; ".join(breach),
                "latency",
            )
        eff = marginal_efficiency(cur, nxt)
        if eff is not None and eff < gain_threshold:
            t0, t1 = cur.output_tokens_per_s or 0.0, nxt.output_tokens_per_s or 0.0
            return Knee(
                cur.concurrency,
                i,
                f"going from {cur.concurrency} to {nxt.concurrency} concurrent requests raised "
                f"output throughput only {t0:.0f} -> {t1:.0f} tok/s "
                f"(efficiency {eff:.2f} < {gain_threshold:.2f}); "
                f"extra requests queue instead of running",
                "gain",
                round(eff, 4),
            )
    last = steps[-1]
    if len(steps) == 1:
        return Knee(None, None, "only one step was measured: a knee needs at least two", "none")
    return Knee(
        None,
        None,
        f"throughput still growing at the largest concurrency tried ({last.concurrency}); "
        "extend the ramp (e.g. --max-concurrency) to find the knee",
        "none",
    )


def _failing(step: StepResult) -> bool:
    total = step.errors + step.requests
    return total > 0 and step.errors / total > 0.1
