"""The ramp runner against a scripted server whose throughput curve is known.

The fake server runs `slots` requests at once and gives each one token per `token_s`
whatever the batch size, so T(c) = min(c, slots) / token_s: throughput doubles with each
doubling of concurrency up to `slots` and then stays flat while requests queue. The knee
must therefore land at c = slots.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from bench_fake_server import FakeServer

from headroom.bench.ramp import BenchConfig, BenchError, run_bench
from headroom.bench.workload import Distribution, Mix

SMALL = Distribution("small", "test", mix=Mix("small", "test", (8, 16), (10, 20)), fingerprint="s")


def cfg(url: str, **kw) -> BenchConfig:
    base = dict(
        ramp=(1, 2, 4, 8),
        step_duration_s=0.8,
        warmup_s=0.2,
        distribution=SMALL,
        sample_interval_s=0.1,
        read_gpus=False,
    )
    base.update(kw)
    return BenchConfig(url, **base)


async def test_knee_at_the_server_slot_count() -> None:
    # Slow tokens (50 ms) keep the test about the service model, not this machine's CPU:
    # even at concurrency 8 the client handles only ~160 chunks/s, so a busy 2-core machine
    # (CI beside other work) still sees the curve.
    rate = 20.0  # tokens/s per stream: 1 / token_s
    async with FakeServer(slots=4, token_s=1 / rate) as srv:
        result = await run_bench(cfg(srv.url, step_duration_s=1.5))
    steps = {s.concurrency: s for s in result.steps}
    assert [s.concurrency for s in result.steps] == [1, 2, 4, 8]
    # Known curve: `rate` tok/s per stream up to 4 streams (allow for event-loop overhead),
    # and never more than the 4 slots give, however many streams ask (load only slows it).
    for c in (1, 2, 4):
        assert 0.5 * rate * c < steps[c].output_tokens_per_s <= 1.05 * rate * c
    assert steps[8].output_tokens_per_s <= 1.05 * rate * 4
    assert result.knee.concurrency == 4, result.knee.reason
    assert result.knee.kind == "gain"
    # Beyond the slots, requests wait: the server's waiting gauge and TTFT both show it.
    assert steps[8].waiting_peak and steps[8].waiting_peak >= 1
    assert steps[8].ttft_p95 > 3 * steps[4].ttft_p95
    assert steps[4].kv_usage_peak == pytest.approx(1.0)
    assert result.workload["model"] == "fake/model"
    assert result.workload["ramp"] == [1, 2, 4, 8]
    assert result.workload["distribution"]["name"] == "small"


async def test_requests_ask_for_exact_output_lengths() -> None:
    async with FakeServer() as srv:
        await run_bench(cfg(srv.url, ramp=(1,), step_duration_s=0.3))
    assert srv.bodies[0]["max_tokens"] == 1  # the tokenizer calibration request
    assert srv.bodies[1:]
    for body in srv.bodies[1:]:
        assert body["ignore_eos"] is True and body["stream"] is True
        assert 10 <= body["max_tokens"] <= 20
        assert body["model"] == "fake/model"


async def test_chat_endpoint_skips_the_role_chunk() -> None:
    async with FakeServer(slots=2, token_s=0.01, prefill_s=0.05) as srv:
        result = await run_bench(cfg(srv.url, ramp=(1,), endpoint="chat", step_duration_s=0.5))
    step = result.steps[0]
    assert step.requests >= 1
    assert step.ttft_p50 >= 0.05  # the empty role chunk arrives early; TTFT waits for content
    # `usage.completion_tokens` (= max_tokens with ignore_eos) is what counts.
    assert 10 <= step.mean_output_tokens <= 20


async def test_api_key_goes_to_v1_only_and_metrics_stay_unauthenticated() -> None:
    async with FakeServer(api_key="sk-secret-123") as srv:
        result = await run_bench(
            cfg(srv.url, ramp=(1,), step_duration_s=0.3, api_key="sk-secret-123")
        )
    v1 = [auth for _, path, auth in srv.seen if path.startswith("/v1/")]
    metrics = [auth for _, path, auth in srv.seen if path == "/metrics"]
    assert v1 and all(a == "Bearer sk-secret-123" for a in v1)
    assert metrics and all(a is None for a in metrics)
    assert result.steps[0].output_tokens_per_s > 0
    assert "sk-secret" not in repr(result) and "sk-secret" not in str(result.to_json())
    assert "sk-secret" not in repr(cfg(srv.url, api_key="sk-secret-123"))


async def test_missing_api_key_is_a_clear_error() -> None:
    async with FakeServer(api_key="k") as srv:
        with pytest.raises(BenchError, match="API key"):
            await run_bench(cfg(srv.url))


async def test_unreachable_server_is_a_clear_error() -> None:
    with pytest.raises(BenchError, match="cannot reach"):
        await run_bench(cfg("http://127.0.0.1:9", warmup_s=0))


async def test_unknown_model_lists_the_served_ones() -> None:
    async with FakeServer() as srv:
        with pytest.raises(BenchError, match="fake/model"):
            await run_bench(cfg(srv.url, model="other"))


async def test_failing_server_stops_the_ramp_with_the_reason() -> None:
    async with FakeServer(fail_status=500) as srv:
        result = await run_bench(cfg(srv.url, warmup_s=0))
    assert len(result.steps) == 1 and result.steps[0].errors > 0
    assert "every request at concurrency 1 failed" in result.stopped_reason
    assert "HTTP 500: boom" in result.stopped_reason
    # Backoff: a server failing at once is not hammered in a tight loop.
    posts = [p for m, p, _ in srv.seen if m == "POST"]
    assert 1 <= len(posts) < 20


async def test_request_budget_caps_the_bench() -> None:
    async with FakeServer(token_s=0.002) as srv:
        result = await run_bench(cfg(srv.url, warmup_s=0, max_requests=5, step_duration_s=5))
    sent = len(srv.bodies)
    assert sent == 5
    assert "5 request cap" in result.stopped_reason


async def test_duration_cap_stops_mid_ramp() -> None:
    async with FakeServer() as srv:
        t0 = time.monotonic()
        result = await run_bench(cfg(srv.url, warmup_s=0, step_duration_s=5, max_duration_s=1.0))
        assert time.monotonic() - t0 < 3.0
    assert "duration cap" in result.stopped_reason
    assert len(result.steps) == 1


async def test_step_request_count_mode() -> None:
    async with FakeServer(slots=8, token_s=0.002) as srv:
        result = await run_bench(
            cfg(srv.url, ramp=(1, 4), step_duration_s=None, step_requests=6, warmup_s=0)
        )
    assert [s.requests for s in result.steps] == [6, 6]
    assert all(s.cut == 0 for s in result.steps)
    assert len(srv.bodies) == 1 + 12  # calibration + two steps of 6


async def test_stop_event_ends_the_bench_early() -> None:
    stop = asyncio.Event()
    async with FakeServer() as srv:
        task = asyncio.create_task(run_bench(cfg(srv.url, step_duration_s=2.0), stop=stop))
        await asyncio.sleep(0.6)
        stop.set()
        result = await asyncio.wait_for(task, 3.0)
    assert result.stopped_reason == "stopped by the user"
    assert len(result.steps) <= 1


async def test_progress_reaches_done_and_rises() -> None:
    seen = []
    async with FakeServer() as srv:
        await run_bench(cfg(srv.url, ramp=(1, 2), step_duration_s=0.4), on_progress=seen.append)
    fractions = [p.fraction for p in seen]
    assert seen[0].phase == "warmup" and seen[-1].phase == "done"
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert any(p.last_step is not None for p in seen)


async def test_clamps_to_the_servers_max_model_len() -> None:
    async with FakeServer(max_model_len=30) as srv:
        result = await run_bench(cfg(srv.url, ramp=(1,), step_duration_s=0.3))
    assert all(b["max_tokens"] <= 30 for b in srv.bodies)
    assert result.workload["distribution"]["clamped_to_tokens"] == 30


def test_credentials_in_the_url_are_never_recorded() -> None:
    from headroom.bench.ramp import public_url

    assert public_url("http://user:pw@gpu1:8000") == "http://gpu1:8000"
    assert public_url("http://gpu1:8000") == "http://gpu1:8000"


async def test_synthetic_prompts_are_calibrated_to_the_servers_tokenizer() -> None:
    # This server counts 3 tokens per word (a small vocabulary splits words), so a
    # 300-token target must be sent as about 100 words.
    srv = FakeServer(tokens_per_word=3)
    dist = Distribution("fixed", "t", mix=Mix("fixed", "t", (300, 300), (5, 5)), fingerprint="f")
    async with srv:
        result = await run_bench(cfg(srv.url, ramp=(1,), step_duration_s=0.5, distribution=dist))
    assert result.workload["tokens_per_word"] == pytest.approx(3.0, rel=0.1)
    assert 270 <= result.steps[0].mean_prompt_tokens <= 330
