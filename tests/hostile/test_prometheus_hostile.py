"""The Prometheus API client against hostile answers (issue 14, items 3 and 8).

Before the fleet's bounded reader: `PrometheusClient` read the whole answer before its
64 MiB check, bounded each read rather than the request (an endless answer never ended),
and a 5000-deep JSON answer raised RecursionError out of parse_answer (documented never to
raise). A redirect to another host is not followed.
"""

from __future__ import annotations

import asyncio
import time

from support.hostile_json import deep_nesting
from support.hostile_server import HostileServer, fixed, huge, redirect, trickle

from headroom.probes.prom_api import MAX_BODY_BYTES, PrometheusClient, parse_answer

GOOD = '{"status":"success","data":{"resultType":"vector","result":[]}}'


async def _query(behaviour, timeout_s: float = 1.0):
    with HostileServer().route("/api/v1/query", behaviour) as server:
        async with PrometheusClient(server.url, timeout_s=timeout_s) as client:
            started = time.monotonic()
            answer = await asyncio.wait_for(client.query("up"), 30)
            return answer, time.monotonic() - started, server


async def test_endless_answer_ends_at_the_deadline() -> None:
    answer, took, _ = await _query(trickle(b" ", every_s=0.05, prefix=b'{"status":'), 0.5)
    assert not answer.ok and "did not answer within" in answer.error
    assert took < 8  # deadline 0.5 + 5 s of grace, never endless


async def test_huge_answer_is_not_read_to_its_end() -> None:
    answer, _, server = await _query(huge(3 * MAX_BODY_BYTES, line=b"x" * 1000 + b"\n"), 20)
    assert not answer.ok and "over" in answer.error
    assert server.sent_bytes["/api/v1/query"] < 2 * MAX_BODY_BYTES


async def test_redirect_elsewhere_is_not_followed() -> None:
    with HostileServer().route("/api/v1/query", fixed(GOOD)) as elsewhere:
        answer, _, _ = await _query(redirect(elsewhere.url + "/api/v1/query", status=307))
        assert elsewhere.requests == []
    assert not answer.ok


async def test_deep_answer_is_an_error_not_an_exception() -> None:
    answer, _, _ = await _query(fixed(deep_nesting(5000), content_type="application/json"))
    assert not answer.ok
    assert not parse_answer(200, deep_nesting(5000)).ok


async def test_ordinary_answer_and_error_envelope_still_read() -> None:
    answer, _, _ = await _query(fixed(GOOD, content_type="application/json"))
    assert answer.ok
    bad = '{"status":"error","errorType":"bad_data","error":"parse error"}'
    answer, _, _ = await _query(fixed(bad, status=400, content_type="application/json"))
    assert not answer.ok and "parse error" in answer.error
