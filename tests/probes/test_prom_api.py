"""The Prometheus API reader: envelopes and result shapes of 2.42 and 3.x (fleet-facts.md
section 2), error types, proxies without an envelope, and arbitrary bytes."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.probes.prom_api import parse_answer, parse_duration, parse_targets


def test_vector_values_are_strings_and_nan_is_missing() -> None:
    body = json.dumps(
        {
            "status": "success",
            "data": {
                "resultType": "vector",
                "result": [
                    {"metric": {"instance": "a:1"}, "value": [1700000000.5, "3.5"]},
                    {"metric": {"instance": "b:1"}, "value": [1700000000.5, "NaN"]},
                    {"metric": {"instance": "c:1"}, "value": [1700000000.5, "+Inf"]},
                ],
            },
        }
    )
    answer = parse_answer(200, body)
    assert answer.ok and answer.result_type == "vector"
    assert [(labels["instance"], v) for labels, v in answer.vector()] == [
        ("a:1", 3.5),
        ("b:1", None),
        ("c:1", None),
    ]


def test_matrix_points_and_3x_infos_key() -> None:
    body = json.dumps(
        {
            "status": "success",
            "data": {
                "resultType": "matrix",
                "result": [{"metric": {"hr_field": "kv"}, "values": [[1, "0.5"], [2, "0.75"]]}],
            },
            "infos": ["PromQL info: metric might not be a counter"],
            "warnings": ["partial data: one store unreachable"],
        }
    )
    answer = parse_answer(200, body)
    ((labels, points),) = answer.matrix()
    assert labels == {"hr_field": "kv"} and points == [(1.0, 0.5), (2.0, 0.75)]
    assert answer.warnings == ("partial data: one store unreachable",)


def test_error_envelope_keeps_type_and_message() -> None:
    body = (
        '{"status":"error","errorType":"bad_data","error":"invalid parameter \\"query\\": '
        '1:1: parse error: no expression found in input"}'
    )
    answer = parse_answer(400, body)
    assert not answer.ok and answer.error_type == "bad_data"
    assert "no expression found" in answer.describe() and answer.http_status == 400
    assert answer.vector() == []


def test_proxy_page_without_envelope() -> None:
    answer = parse_answer(502, b"<html><body>Bad Gateway</body></html>")
    assert not answer.ok and "HTTP 502" in answer.describe() and "Bad Gateway" in answer.describe()
    assert not parse_answer(200, b'{"hello": 1}').ok


def test_targets_active_list() -> None:
    body = json.dumps(
        {
            "status": "success",
            "data": {
                "activeTargets": [
                    {
                        "discoveredLabels": {},
                        "labels": {"instance": "h:8000", "job": "vllm"},
                        "scrapePool": "vllm",
                        "scrapeUrl": "http://h:8000/metrics",
                        "globalUrl": "",
                        "lastError": "connection refused",
                        "lastScrape": "2026-01-01T00:00:00Z",
                        "lastScrapeDuration": 0.0012,
                        "health": "down",
                        "scrapeInterval": "15s",
                        "scrapeTimeout": "10s",
                    }
                ],
                "droppedTargets": [],
            },
        }
    )
    targets = parse_targets(parse_answer(200, body))
    (t,) = targets.targets
    assert (t.instance, t.job, t.health, t.scrape_interval_s) == ("h:8000", "vllm", "down", 15.0)
    assert t.last_error == "connection refused" and t.last_scrape_duration_s == 0.0012


def test_durations() -> None:
    assert parse_duration("1m30s") == 90 and parse_duration("500ms") == 0.5
    assert parse_duration("2h") == 7200 and parse_duration("") is None
    assert parse_duration("5x") is None and parse_duration("15") is None


@settings(max_examples=300, deadline=None)
@given(st.integers(100, 599), st.one_of(st.binary(max_size=300), st.text(max_size=300)))
def test_any_answer_never_raises(status: int, body) -> None:
    answer = parse_answer(status, body)
    answer.vector()
    answer.matrix()
    parse_targets(answer)
    assert isinstance(answer.describe(), str)


json_values = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["vector", "matrix", "scalar", "string", None]), json_values)
def test_odd_shapes_inside_a_success_envelope(kind, result) -> None:
    body = json.dumps({"status": "success", "data": {"resultType": kind, "result": result}})
    answer = parse_answer(200, body)
    for _, value in answer.vector():
        assert value is None or isinstance(value, float)
    for _, points in answer.matrix():
        assert all(isinstance(t, float) for t, _ in points)
    parse_targets(answer)


async def test_oversized_and_deeply_nested_answers_are_refused(monkeypatch) -> None:
    import httpx

    from headroom.probes import prom_api
    from headroom.probes.prom_api import PrometheusClient

    deep = ("[" * 1500 + "]" * 1500).encode()
    big = b'{"status":"success","data":{"resultType":"vector","result":[' + b" " * 5000 + b"]}}"

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=deep if "deep" in str(request.url) else big)

    monkeypatch.setattr(prom_api, "MAX_BODY_BYTES", 4096)
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    prom = PrometheusClient("http://prom:9090", client=client)
    too_big = await prom.query("up")
    assert not too_big.ok and "over 4,096 bytes" in too_big.describe()
    prom.url = "http://prom:9090/deep"
    nested = await prom.query("up")
    assert not nested.ok and "not a Prometheus API answer" in nested.describe()
    await client.aclose()


async def test_credentials_are_sent_and_never_shown() -> None:
    import base64

    import httpx

    from headroom.probes.prom_api import PrometheusClient

    seen: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization"))
        return httpx.Response(401, text="Unauthorized")

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    basic = PrometheusClient("http://al%40x:s3cret@prom:9090", client=client)
    answer = await basic.query("up")
    assert seen[-1] == "Basic " + base64.b64encode(b"al@x:s3cret").decode()
    assert basic.url == "http://prom:9090"
    assert "s3cret" not in answer.describe() and not answer.ok
    bearer = PrometheusClient("http://prom:9090", client=client, bearer_token="tok-123")
    await bearer.targets()
    assert seen[-1] == "Bearer tok-123"
    await client.aclose()


async def test_only_parameters_prometheus_2_42_knows_are_sent() -> None:
    """fleet-facts.md section 2: 3.x adds limit, lookback_delta, stats; 2.42 would reject
    nothing but ignore them, and a later 2.x proxy might not: never send them."""
    import time

    import httpx

    from headroom.probes.prom_api import PrometheusClient

    sent: list[set[str]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        params = dict(httpx.QueryParams(request.content.decode() or request.url.query.decode()))
        sent.append(set(params))
        return httpx.Response(
            200, json={"status": "success", "data": {"resultType": "vector", "result": []}}
        )

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    prom = PrometheusClient("http://prom:9090", client=client)
    await prom.query("up", time.time())
    await prom.query_range("up", time.time() - 60, time.time(), 15)
    await prom.targets()
    await client.aclose()
    assert sent[0] <= {"query", "time", "timeout"}
    assert sent[1] <= {"query", "start", "end", "step", "timeout"}
    assert sent[2] <= {"state", "scrapePool"}
