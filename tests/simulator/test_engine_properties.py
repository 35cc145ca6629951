"""Invariants of the paged-KV scheduler under arbitrary workloads (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.simulator.engine import Engine, SimRequest

workloads = st.lists(
    st.tuples(st.integers(1, 300), st.integers(1, 60), st.booleans()), min_size=1, max_size=25
)


@settings(max_examples=60, deadline=None)
@given(
    workload=workloads,
    num_blocks=st.integers(22, 60),
    block_size=st.sampled_from([4, 16]),
    max_num_seqs=st.integers(1, 16),
    budget=st.integers(16, 512),
    prefix_caching=st.booleans(),
)
def test_every_request_finishes_and_no_block_leaks(
    workload, num_blocks, block_size, max_num_seqs, budget, prefix_caching
) -> None:
    clock = [0.0]
    engine = Engine(
        num_blocks,
        block_size,
        max_num_seqs,
        budget,
        step_time=lambda p, d, c: 0.001 + 1e-5 * (p + d),
        clock=lambda: clock[0],
        prefix_caching=prefix_caching,
    )
    usable_tokens = (num_blocks - 1) * block_size
    reqs = []
    for prompt, out, stops in workload:
        prompt = min(prompt, usable_tokens - out)  # vLLM refuses longer ones at the API
        reqs.append(SimRequest(max(1, prompt), out, eos_at=out // 2 + 1 if stops else None))
    for r in reqs:
        engine.add_request(r)
    steps = 0
    while engine.has_work:
        result = engine.step()
        assert result.emitted, "work remains but nothing could be scheduled"
        clock[0] += result.duration
        engine.complete(result)
        assert 0.0 <= engine.kv_usage <= 1.0
        assert len(engine.running) <= max_num_seqs
        assert engine.used_blocks + engine.pool.free == engine.usable_blocks
        steps += 1
        assert steps < 50_000
    assert all(r.finish_reason in ("stop", "length") for r in reqs)
    assert engine.generation_tokens == sum(r.output_tokens for r in reqs)
    for r in reqs:
        expected = min(r.max_tokens, r.eos_at) if r.eos_at else r.max_tokens
        assert r.output_tokens == expected
        assert r.first_token_at is not None and r.first_token_at >= r.arrival
