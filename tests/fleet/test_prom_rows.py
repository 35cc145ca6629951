"""Prometheus answers -> ServerMetrics: data-parallel engines, a cache shared by several
model_name series (counted once), rates and quantiles taken as Prometheus computed them."""

from __future__ import annotations

from headroom.fleet.prom_rows import ServerSamples, build_server_metrics


def labels(model="m", engine="0", **extra):
    return {"instance": "h:8000", "job": "vllm", "model_name": model, "engine": engine, **extra}


def cache(engine=None, **values):
    out = {"instance": "h:8000", "job": "vllm", "block_size": "16", **values}
    if engine is not None:
        out["engine"] = engine
    return out


def test_dp_engines_with_their_own_cache_size_add_up() -> None:
    s = ServerSamples()
    for engine, usage in (("0", 0.5), ("1", 0.25)):
        s.add_gauge("vllm:kv_cache_usage_perc", labels(engine=engine), usage)
        s.add_gauge("vllm:num_requests_running", labels(engine=engine), 4.0)
        s.add_gauge(
            "vllm:cache_config_info",
            cache(engine, kv_cache_size_tokens="1000", num_gpu_blocks="125"),
            1.0,
        )
    s.add_derived("ttft_p95", {"instance": "h:8000"}, 0.8)
    s.add_derived("preemptions", labels(engine="1"), 2.0)
    m = build_server_metrics("h:8000", "http://h:8000", s, 0.0)
    assert [e.engine for e in m.engines] == ["0", "1"]
    assert m.total.kv_capacity_tokens == 2000
    assert m.total.kv_cache_usage == 0.375  # capacity-weighted
    assert m.total.requests_running == 8 and m.total.preemptions_per_s == 2.0
    assert m.total.ttft.p95 == 0.8 and m.engines[0].ttft.p95 is None


def test_summed_num_gpu_blocks_is_taken_once_for_dp() -> None:
    s = ServerSamples()
    for engine in ("0", "1"):
        s.add_gauge("vllm:kv_cache_usage_perc", labels(engine=engine), 0.5)
        s.add_gauge("vllm:cache_config_info", cache(engine, num_gpu_blocks="250"), 1.0)
    m = build_server_metrics("h:8000", "u", s, 0.0)
    assert m.total.kv_capacity_tokens == 250 * 16
    assert all(e.kv_capacity_tokens is None for e in m.engines)


def test_one_unlabelled_cache_for_two_model_names_is_one_cache() -> None:
    s = ServerSamples()
    for model in ("a", "b"):
        s.add_gauge("vllm:kv_cache_usage_perc", labels(model=model), 0.5)
    s.add_gauge("vllm:cache_config_info", cache(None, num_gpu_blocks="100"), 1.0)
    m = build_server_metrics("h:8000", "u", s, 0.0)
    assert [r.kv_capacity_tokens for r in m.models] == [1600, 1600]
    assert m.total.kv_capacity_tokens == 1600  # not 3200
    assert m.total.kv_free_tokens == 800


def test_no_engine_series_is_metrics_off() -> None:
    m = build_server_metrics("h:8000", "u", ServerSamples(), 0.0)
    assert m.state == "metrics_off" and m.message
