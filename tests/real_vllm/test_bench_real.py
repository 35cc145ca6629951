"""A short ramp against the real CPU vLLM (tiny model): the bench reads real streams, real
`usage`, real /metrics; every figure that the CPU build can give is present.

Uses the shared real server of tests/real_vllm/conftest.py (it only watches, so the server
is not restarted for this test). Budget: about 30 s of load.
"""

from __future__ import annotations

import pytest

from headroom.bench.ramp import BenchConfig, run_bench
from headroom.bench.workload import Distribution, Mix

pytestmark = pytest.mark.real_vllm

# Short requests: the tiny model on 2 CPU cores makes a few hundred tokens/s in all.
SHORT = Distribution(
    "short", "real-vLLM smoke", mix=Mix("short", "t", (32, 96), (16, 32)), fingerprint="real-short"
)


async def test_short_ramp_against_real_vllm(real_vllm_server) -> None:
    url = real_vllm_server.url
    config = BenchConfig(
        url,
        ramp=(1, 2, 4),
        step_duration_s=6.0,
        warmup_s=2.0,
        distribution=SHORT,
        max_duration_s=60.0,
        read_gpus=False,
        request_timeout_s=60.0,
    )
    result = await run_bench(config)
    assert result.stopped_reason is None, result.stopped_reason
    assert [s.concurrency for s in result.steps] == [1, 2, 4]
    for step in result.steps:
        assert step.errors == 0, step.error_examples
        assert step.requests >= 1
        assert step.output_tokens_per_s and step.output_tokens_per_s > 0
        assert step.ttft_p50 is not None and step.itl_p50 is not None
        # Real usage came back: vLLM honoured max_tokens with ignore_eos.
        assert step.mean_output_tokens is not None and 16 <= step.mean_output_tokens <= 32
        # Synthetic prompts were calibrated to the tiny tokenizer (targets 32-96 tokens).
        assert step.mean_prompt_tokens is not None and 20 <= step.mean_prompt_tokens <= 160
        # Server-side figures from the real /metrics.
        assert step.kv_usage_peak is not None and 0 <= step.kv_usage_peak <= 1
        assert step.waiting_peak is not None and step.preemptions is not None
    # More concurrency must not make the server slower overall (batching works on CPU too).
    assert result.steps[1].output_tokens_per_s > 0.8 * result.steps[0].output_tokens_per_s
    assert result.workload["model"] == real_vllm_server.model_name
    assert result.workload["tokens_per_word"] > 0
    print(
        f"tokens/word {result.workload['tokens_per_word']}; prompt means "
        f"{[round(s.mean_prompt_tokens) for s in result.steps]}"
    )
    assert result.knee.reason
