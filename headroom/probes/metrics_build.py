"""From parsed `vllm:` samples to per-engine, per-model and total `EngineMetrics`.

The names come from `metric_names` (one table for the parser and this builder). KV capacity follows section 1.4:
`kv_cache_size_tokens` is per data-parallel engine, while `num_gpu_blocks` is already the
sum over the DP engines, so block counts are never added across engines.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

from headroom.probes.metric_names import CACHE_INFO, COUNTER_NAMES, GAUGE_NAMES, HISTOGRAM_NAMES
from headroom.probes.metrics_parse import MAX_COUNT, Exposition, label_float, label_int
from headroom.probes.metrics_types import EngineMetrics
from headroom.probes.metrics_window import (
    HistogramState,
    WindowTracker,
    histogram_from_parts,
    latency_from,
    merge_histograms,
    sum_if_all_known,
)
from headroom.probes.safe_text import safe_optional

Key = tuple[str | None, str | None]  # (model_name, engine)

# cache_config_info labels that mean "tokens != blocks x block_size" (hybrid, Mamba, MLA,
# sliding window). Without kv_cache_size_tokens such a capacity is reported as unknown.
_HYBRID_MARKERS = ("mamba_block_size", "mamba_page_size_padded", "sliding_window")


@dataclass
class RawSeries:
    """Cumulative values of one (model_name, engine) series at one scrape."""

    # None: the page gave an implausible value (see collect), which then counts as unknown.
    gauges: dict[str, float | None] = field(default_factory=dict)
    counters: dict[str, float | None] = field(default_factory=dict)
    histograms: dict[str, HistogramState] = field(default_factory=dict)


@dataclass
class RawScrape:
    series: dict[Key, RawSeries] = field(default_factory=dict)
    cache_info: dict[str | None, Mapping[str, str]] = field(default_factory=dict)  # by engine


def collect(exposition: Exposition) -> RawScrape:
    """Group the kept samples by series and resolve old/new metric names."""
    by_name = exposition.by_name()
    scrape = RawScrape()

    def series(key: Key) -> RawSeries:
        return scrape.series.setdefault(key, RawSeries())

    # One implausible value (1e308, NaN, a negative count, usage 7.0) makes that value
    # unknown; the rest of the page still counts.
    for field_name, names in GAUGE_NAMES.items():
        check = _fraction if field_name == "usage" else _count
        for key, value in _first_name_per_key(by_name, names, summed=False).items():
            series(key).gauges[field_name] = check(value)
    for field_name, names in COUNTER_NAMES.items():
        for key, value in _first_name_per_key(by_name, names, summed=True).items():
            series(key).counters[field_name] = _count(value)
    for field_name, names in HISTOGRAM_NAMES.items():
        taken: set[Key] = set()
        for name in names:
            for key, state in _histograms(by_name, name).items():
                if key not in taken:
                    taken.add(key)
                    series(key).histograms[field_name] = state
    for sample in by_name.get(CACHE_INFO, ()):
        scrape.cache_info[sample.labels.get("engine")] = sample.labels
    return scrape


def tracker_inputs(
    scrape: RawScrape,
) -> tuple[dict[Hashable, float | None], dict[Hashable, HistogramState]]:
    counters: dict[Hashable, float | None]
    histograms: dict[Hashable, HistogramState]
    counters = {(f, *key): v for key, s in scrape.series.items() for f, v in s.counters.items()}
    histograms = {(f, *key): h for key, s in scrape.series.items() for f, h in s.histograms.items()}
    return counters, histograms


def build_rows(
    scrape: RawScrape, tracker: WindowTracker
) -> tuple[EngineMetrics, tuple[EngineMetrics, ...], tuple[EngineMetrics, ...]]:
    """(total, engines, models) for one scrape already fed to `tracker`."""
    keys = sorted(scrape.series, key=lambda k: (k[0] or "", _engine_order(k[1])))
    by_model: dict[str | None, list[Key]] = {}
    for key in keys:
        by_model.setdefault(key[0], []).append(key)

    engines: list[EngineMetrics] = []
    models: list[EngineMetrics] = []
    for model, model_keys in by_model.items():
        dp = len(model_keys) > 1
        rows = []
        for key in model_keys:
            labels = _cache_labels(scrape, key[1])
            capacity = _positive(labels, "kv_cache_size_tokens")
            blocks = _positive(labels, "num_gpu_blocks")
            if capacity is None and not dp:
                capacity = _blocks_capacity(labels)
            rows.append(
                _row(scrape, tracker, [key], model, key[1], capacity, None if dp else blocks)
            )
        engines.extend(rows)
        model_labels = [_cache_labels(scrape, k[1]) for k in model_keys]
        per_engine = [r.kv_capacity_tokens for r in rows]
        engines_total = sum_if_all_known(per_engine)
        if engines_total is not None and any(
            _positive(lab, "kv_cache_size_tokens") is not None for lab in model_labels
        ):
            capacity = _whole(engines_total)  # each DP engine has its own cache of that size
        else:
            # num_gpu_blocks is already summed over DP engines: take it once.
            capacity = _blocks_capacity(model_labels[0]) if model_labels else None
        block_counts = [_positive(lab, "num_gpu_blocks") for lab in model_labels]
        blocks = max((b for b in block_counts if b is not None), default=None)
        models.append(_row(scrape, tracker, model_keys, model, None, capacity, blocks, rows))

    # One cache_config_info series describes one cache, however many model_name series point
    # at it (an aggregator's or router's page): count each cache once in the total.
    # (by_model, not m.model_name: the row's name is escaped for terminals, the key is raw.)
    cache_sets = [
        frozenset(id(_cache_labels(scrape, k[1])) for k in model_keys)
        for model_keys in by_model.values()
    ]
    distinct = [i for i, c in enumerate(cache_sets) if c not in cache_sets[:i]]
    shared = len(distinct) < len(models)
    model_caps = [models[i].kv_capacity_tokens for i in distinct]
    model_blocks = [models[i].num_gpu_blocks for i in distinct]
    total = _row(
        scrape,
        tracker,
        keys,
        models[0].model_name if len(models) == 1 else None,
        None,
        _whole(sum_if_all_known(model_caps)) if models else None,
        _whole(sum_if_all_known(model_blocks)) if models else None,
        models,
        sum_free=not shared,
    )
    return total, tuple(engines), tuple(models)


def _row(
    scrape: RawScrape,
    tracker: WindowTracker,
    keys: Sequence[Key],
    model: str | None,
    engine: str | None,
    capacity: int | None,
    blocks: int | None,
    parts: Sequence[EngineMetrics] = (),
    sum_free: bool = True,
) -> EngineMetrics:
    series = [scrape.series[k] for k in keys]
    labels = [_cache_labels(scrape, k[1]) for k in keys]
    usage = _usage(series, parts, capacity)
    free = None
    if sum_free and parts and all(p.kv_free_tokens is not None for p in parts):
        free = sum(p.kv_free_tokens for p in parts)  # type: ignore[misc]
    elif capacity is not None and usage is not None:
        free = max(0, int(round(capacity * (1.0 - usage))))
    avg_tokens = _average_request_tokens(tracker, keys)
    headroom = free / avg_tokens if free is not None and avg_tokens else None
    hits = _window_sum(tracker, "prefix_hits", keys)
    queries = _window_sum(tracker, "prefix_queries", keys)

    def window(field_name: str) -> HistogramState | None:
        return merge_histograms(tracker.window_histogram((field_name, *k)) for k in keys)

    return EngineMetrics(
        # Label values are the server's text: shown escaped wherever they reach a terminal.
        model_name=safe_optional(model),
        engine=safe_optional(engine),
        kv_cache_usage=usage,
        kv_capacity_tokens=capacity,
        kv_free_tokens=free,
        headroom_requests=headroom,
        block_size=_common(label_int(lab, "block_size") for lab in labels),
        num_gpu_blocks=blocks,
        cache_dtype=safe_optional(_common(lab.get("cache_dtype") for lab in labels)),
        gpu_memory_utilization=_common(
            _fraction(label_float(lab, "gpu_memory_utilization"), slack=0.0) or None
            for lab in labels
        ),
        kv_cache_memory_bytes=_common(label_int(lab, "kv_cache_memory_bytes") for lab in labels),
        requests_running=finite_sum(s.gauges.get("running") for s in series),
        requests_waiting=finite_sum(s.gauges.get("waiting") for s in series),
        preemptions_total=finite_sum(s.counters.get("preemptions") for s in series),
        preemptions_per_s=_rate(tracker, "preemptions", keys),
        prompt_tokens_per_s=_rate(tracker, "prompt_tokens", keys),
        generation_tokens_per_s=_rate(tracker, "generation_tokens", keys),
        avg_request_tokens=avg_tokens,
        ttft=latency_from(window("ttft")),
        itl=latency_from(window("itl")),
        e2e=latency_from(window("e2e")),
        queue=latency_from(window("queue")),
        finished_requests_per_s=_rate(tracker, "finished", keys),
        # hits > queries only from a broken page: unknown rather than a rate over 100 %
        prefix_cache_hit_rate=_fraction(hits / queries) if hits is not None and queries else None,
    )


def _usage(
    series: Sequence[RawSeries], parts: Sequence[EngineMetrics], capacity: int | None
) -> float | None:
    """An engine's own gauge; for a group, the capacity-weighted mean of its parts."""
    if not parts:
        return _clean(finite_mean(s.gauges.get("usage") for s in series))
    if len(parts) == 1:
        return parts[0].kv_cache_usage
    usages = [p.kv_cache_usage for p in parts]
    weights = [p.kv_capacity_tokens for p in parts]
    pairs = [(u, w) for u, w in zip(usages, weights, strict=True) if u is not None and w]
    if len(pairs) == len(parts):
        weighted = sum(u * w for u, w in pairs)
        return _clean(weighted / sum(w for _, w in pairs))
    return _clean(finite_mean(usages))


def _average_request_tokens(tracker: WindowTracker, keys: Sequence[Key]) -> float | None:
    """Prompt + generated tokens of recent finished requests; lifetime mean as fallback."""
    for source in (tracker.window_histogram, tracker.lifetime_histogram):
        prompt = merge_histograms(source(("prompt_len", *k)) for k in keys)
        generated = merge_histograms(source(("generation_len", *k)) for k in keys)
        if prompt is None or prompt.sum is None or not prompt.total > 0:
            continue
        generated_sum = generated.sum if generated is not None and generated.sum else 0.0
        average = (prompt.sum + generated_sum) / prompt.total
        if average > 0 and math.isfinite(average):
            return average
    return None


def _blocks_capacity(labels: Mapping[str, str]) -> int | None:
    blocks, size = _positive(labels, "num_gpu_blocks"), _positive(labels, "block_size")
    if blocks is None or size is None or _looks_hybrid(labels):
        return None
    return blocks * size


def _positive(labels: Mapping[str, str], key: str) -> int | None:
    value = label_int(labels, key)
    return value if value is not None and value > 0 else None


def _looks_hybrid(labels: Mapping[str, str]) -> bool:
    if labels.get("is_attention_free") == "True" or "mla" in labels.get("cache_dtype", ""):
        return True
    return any(labels.get(m, "None") not in ("None", "0", "") for m in _HYBRID_MARKERS)


def _cache_labels(scrape: RawScrape, engine: str | None) -> Mapping[str, str]:
    info = scrape.cache_info
    if engine in info:
        return info[engine]
    if None in info:  # older pages: one cache_config_info without an engine label
        return info[None]
    return info[next(iter(info))] if len(info) == 1 else {}


def _first_name_per_key(by_name, names: Sequence[str], summed: bool) -> dict[Key, float]:
    values: dict[Key, float] = {}
    for name in names:
        found: dict[Key, float] = {}
        for sample in by_name.get(name, ()):
            key = (sample.labels.get("model_name"), sample.labels.get("engine"))
            found[key] = found.get(key, 0.0) + sample.value if summed else sample.value
        for key, value in found.items():
            values.setdefault(key, value)
    return values


def _histograms(by_name, name: str) -> dict[Key, HistogramState]:
    buckets: dict[Key, dict[float, float]] = {}
    sums: dict[Key, float] = {}
    counts: dict[Key, float] = {}
    for sample in by_name.get(name + "_bucket", ()):
        try:
            bound = float(sample.labels.get("le", "nan"))
        except ValueError:
            continue
        key = (sample.labels.get("model_name"), sample.labels.get("engine"))
        count = _count(sample.value)
        if count is None:
            continue  # histogram_from_parts keeps the buckets it can trust
        buckets.setdefault(key, {})[bound] = count
    for suffix, target in (("_sum", sums), ("_count", counts)):
        for sample in by_name.get(name + suffix, ()):
            value = _count(sample.value)
            if value is not None:
                target[(sample.labels.get("model_name"), sample.labels.get("engine"))] = value
    states = {}
    for key, per_bound in buckets.items():
        state = histogram_from_parts(per_bound, sums.get(key), counts.get(key))
        if state is not None:
            states[key] = state
    return states


def _rate(tracker: WindowTracker, field_name: str, keys: Sequence[Key]) -> float | None:
    return finite_sum(tracker.rate((field_name, *k)) for k in keys)


def _window_sum(tracker: WindowTracker, field_name: str, keys: Sequence[Key]) -> float | None:
    return finite_sum(tracker.window_increment((field_name, *k)) for k in keys)


def finite_sum(values) -> float | None:
    """The sum of the finite values present; None when there are none (also fleet/prom_rows)."""
    present = [v for v in values if v is not None and math.isfinite(v)]
    return sum(present) if present else None


def finite_mean(values) -> float | None:
    """The mean of the finite values present; None when there are none."""
    present = [v for v in values if v is not None and math.isfinite(v)]
    return sum(present) / len(present) if present else None


def _count(value: float | None) -> float | None:
    """A count or counter: finite, not negative, below 2**53 (past it floats lose units)."""
    if value is None or not 0.0 <= value <= MAX_COUNT:  # NaN fails both comparisons
        return None
    return value


def _fraction(value: float | None, slack: float = 0.01) -> float | None:
    """A 0..1 value; within `slack` of the range it is clamped (float noise), beyond unknown."""
    if value is None or not -slack <= value <= 1.0 + slack:
        return None
    return min(1.0, max(0.0, value))


def _whole(value: float | None) -> int | None:
    return int(value) if value is not None else None


def _clean(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _common(values):
    distinct = {v for v in values if v is not None}
    return distinct.pop() if len(distinct) == 1 else None


def _engine_order(engine: str | None) -> tuple[int, str]:
    if engine is not None and engine.isdigit():
        return int(engine), ""
    return 1 << 30, engine or ""
