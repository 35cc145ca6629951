"""The Prometheus source when Prometheus answers only in part: one query fails with the
error envelope, another carries warnings, a proxy answers HTML. The rest still shows, and
every problem is a warning in the snapshot. (A fake Prometheus via httpx.MockTransport; the
shapes are those of fleet-facts.md section 2.)"""

from __future__ import annotations

import json

import httpx

from headroom.fleet.prom_source import PrometheusSource

TARGETS = {
    "status": "success",
    "data": {
        "activeTargets": [
            {
                "labels": {"instance": "h:8000", "job": "vllm", "hostname": "h"},
                "scrapePool": "vllm",
                "scrapeUrl": "http://h:8000/metrics",
                "lastError": "",
                "health": "up",
                "scrapeInterval": "15s",
                "lastScrapeDuration": 0.01,
            },
            {
                "labels": {"instance": "g:8000", "job": "vllm"},
                "scrapePool": "vllm",
                "scrapeUrl": "http://g:8000/metrics",
                "lastError": "context deadline exceeded",
                "health": "down",
                "scrapeInterval": "15s",
            },
        ]
    },
}
LABELS = {"instance": "h:8000", "job": "vllm", "hostname": "h", "model_name": "m", "engine": "0"}


def vector(*rows):
    return {
        "status": "success",
        "data": {
            "resultType": "vector",
            "result": [{"metric": m, "value": [1.0, v]} for m, v in rows],
        },
    }


def handler(request: httpx.Request) -> httpx.Response:
    if request.url.path == "/api/v1/targets":
        return httpx.Response(200, json=TARGETS)
    query = dict(httpx.QueryParams(request.content.decode())).get("query", "")
    if "histogram_quantile" in query:
        return httpx.Response(
            422,
            json={
                "status": "error",
                "errorType": "execution",
                "error": "query processing would load too many samples",
            },
        )
    if "DCGM_FI_DEV_POWER_VIOLATION" in query:
        return httpx.Response(502, text="<html>bad gateway</html>")
    if query.startswith("{__name__") and "vllm:" in query:
        body = vector(
            ({**LABELS, "__name__": "vllm:num_requests_running"}, "3"),
            ({**LABELS, "__name__": "vllm:kv_cache_usage_perc"}, "0.25"),
            (
                {
                    "__name__": "vllm:cache_config_info",
                    "instance": "h:8000",
                    "job": "vllm",
                    "engine": "0",
                    "num_gpu_blocks": "100",
                    "block_size": "16",
                },
                "1",
            ),
        )
        body["warnings"] = ["partial response: one remote store did not answer"]
        return httpx.Response(200, json=body)
    if "rate(vllm:generation_tokens_total" in query:
        return httpx.Response(
            200,
            json=vector(
                ({**LABELS, "hr_field": "generation_tokens"}, "123.5"),
                ({"instance": "h:8000", "job": "vllm", "hr_field": "avg_request_tokens"}, "400"),
            ),
        )
    if request.url.path == "/api/v1/query_range":
        return httpx.Response(
            200, json={"status": "success", "data": {"resultType": "matrix", "result": []}}
        )
    return httpx.Response(200, json=vector())


async def test_partial_answers_still_give_the_servers_and_say_what_failed() -> None:
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    source = PrometheusSource("http://prom:9090", client=client, read_info=False)
    snap = await source.refresh()
    await client.aclose()
    up = snap.server("h:8000")
    assert up is not None and up.state == "up" and up.host == "h"
    assert up.total.requests_running == 3 and up.total.kv_capacity_tokens == 1600
    assert up.total.kv_free_tokens == 1200 and up.total.headroom_requests == 3.0
    assert up.total.generation_tokens_per_s == 123.5
    assert up.total.ttft.p95 is None  # its query failed: unknown, not zero
    down = snap.server("g:8000")
    assert down is not None and down.state == "down"
    assert "context deadline exceeded" in (down.metrics.message or "")
    text = " | ".join(snap.warnings)
    assert "latency quantiles query: execution: query processing would load too many" in text
    assert "partial response: one remote store did not answer" in text
    assert "throttling query: HTTP 502" in text
    assert snap.requests_made == 8
    assert json.dumps([w for w in snap.warnings])  # plain strings


def test_target_kind_by_its_series_then_path_then_job() -> None:
    from headroom.fleet.prom_source import _kind
    from headroom.probes.prom_api import Target

    def target(instance: str, job: str, url: str) -> Target:
        return Target(job, url, {"instance": instance, "job": job}, "down", "", None, 15.0)

    mixed_job = {"gpu-nodes"}
    # one job scraping both vLLM and the exporter: the down exporter is not a vLLM server
    assert (
        _kind(
            target("h:9400", "gpu-nodes", "http://h:9400/metrics"),
            set(),
            set(),
            mixed_job,
            mixed_job,
        )
        == "dcgm"
    )
    assert (
        _kind(
            target("h:8000", "gpu-nodes", "http://h:8000/metrics"), set(), set(), mixed_job, set()
        )
        == "vllm"
    )
    assert (
        _kind(target("h:8000", "x", "http://h:8000/metrics"), {"h:8000"}, set(), set(), set())
        == "vllm"
    )
    assert (
        _kind(target("n:9100", "node", "http://n:9100/metrics"), set(), set(), set(), set())
        == "other"
    )
