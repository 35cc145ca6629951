"""The memory model follows the release: rules read from vLLM's source (versions.RELEASE_TABLE),
and `plan` names them, raises the free knob before cutting the context, and gives a range."""

from __future__ import annotations

import pytest

from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.doctor.memory_model import Knobs, account
from headroom.doctor.model_bytes import weights_gib_per_gpu
from headroom.doctor.model_table import find_model
from headroom.doctor.planner import plan, plan_to_json
from headroom.doctor.versions import (
    RELEASE_TABLE,
    batch_defaults,
    context_in_budget,
    has_null_block,
    parse_version,
    rules_text,
)

LLAMA_8B = find_model("Llama-3.1-8B")


@pytest.mark.parametrize(
    ("version", "gib", "name", "max_len", "expected"),
    [
        # V0: a whole max_model_len prefill unless chunked prefill (only above 32K)
        ((0, 6, 4), 23.6, "RTX3090", 20000, (20000, 256)),
        ((0, 6, 4), 23.6, "RTX3090", 40000, (512, 256)),
        ((0, 7, 3), 23.6, "RTX3090", 40000, (2048, 256)),
        # V1 0.8.0: by name, H100/H200 only; 1024 sequences
        ((0, 8, 0), 79.1, "H100", 8192, (8192, 1024)),
        ((0, 8, 0), 79.1, "A100", 8192, (2048, 1024)),
        # 0.8.5: by memory, the A100 80GB included; 0.9: the A100 left out
        ((0, 8, 5), 79.1, "A100", 8192, (8192, 1024)),
        ((0, 9, 2), 79.1, "A100", 8192, (2048, 256)),
        ((0, 10, 1), 79.1, "H100", 8192, (8192, 1024)),
        ((0, 33, 0), 178.0, "B200", 32768, (16384, 1024)),
        ((0, 21, 0), 178.0, "B200", 32768, (8192, 1024)),
    ],
)
def test_batch_defaults_by_release(version, gib, name, max_len, expected):
    assert batch_defaults(version, gib, name, max_len) == expected


def test_context_and_null_block_by_release():
    assert context_in_budget((0, 8, 5)) and not context_in_budget((0, 9, 2))
    assert not has_null_block((0, 8, 0)) and has_null_block((0, 8, 5))
    # V0 has no null block: the whole capacity is one request's
    v0 = account(LLAMA_8B, parse_gpu_spec("1xRTX3090"), Knobs(max_model_len=20000), "0.6.4")
    assert v0.usable_tokens == v0.kv_capacity_tokens


def test_release_table_is_ordered_and_sourced():
    versions = [parse_version(v) for v, _, _ in RELEASE_TABLE]
    assert versions == sorted(versions)
    assert all(source.strip() for _, _, source in RELEASE_TABLE)
    assert "0.20.0 rules" not in rules_text(None) and "newest known" in rules_text(None)
    assert "CUDA graphs outside the budget" in rules_text("0.19.0")
    assert "CUDA graphs inside the budget" in rules_text("0.20.0")


def test_compressed_tensors_fp8_counts_one_byte_per_parameter():
    from dataclasses import replace

    config = {"quant_method": "compressed-tensors",
              "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float"}}}}  # fmt: skip
    fp8 = replace(LLAMA_8B, quantization="compressed-tensors", quantization_config=config)
    bf16 = weights_gib_per_gpu(LLAMA_8B, 1, 1)
    assert weights_gib_per_gpu(fp8, 1, 1) < bf16 * 0.6


def test_plan_raises_utilization_before_cutting_and_gives_a_range():
    p = plan(LLAMA_8B, parse_gpu_spec("1xRTX4090"), context=131072)
    assert p.account.utilization == 0.95  # the free knob, before any cut
    assert any("step 4: gpu_memory_utilization 0.95" in n for n in p.notes)
    low, high = p.fit_range
    assert low < p.account.max_model_len_fit < high
    proposed = int(p.command[p.command.index("--max-model-len") + 1])
    assert proposed <= low and proposed > 0.85 * low  # the low end, rounded, not a deep cut
    assert any("release not given" in r for r in p.range_reasons)
    doc = plan_to_json(p)
    assert doc["rules"].startswith("vLLM 0.33.0 rules") and doc["max_model_len_fit_range"]


def test_plan_for_a_given_release_names_it_and_skips_the_release_spread():
    p = plan(LLAMA_8B, parse_gpu_spec("1xRTX4090"), context=131072, version="0.10.2")
    assert p.rules.startswith("vLLM 0.10.2 rules:")
    assert not any("release not given" in r for r in p.range_reasons)


def test_issue_example_qwen72b_on_4_a100_40gb_is_not_silently_cut_to_2304():
    p = plan(find_model("Qwen/Qwen2.5-72B-Instruct"), parse_gpu_spec("4xA100-40GB"))
    assert p.account.utilization == 0.95
    if p.fit_range[0] >= 16:
        proposed = int(p.command[p.command.index("--max-model-len") + 1])
        assert proposed >= p.fit_range[0] // 1024 * 1024 - 1024
    else:  # the KV cache is within the estimate's error: said, not hidden
        assert not p.fits and any("no margin" in n for n in p.notes)


def test_links_unknown_widen_the_range_at_tp_above_one():
    named = plan(find_model("Llama-3.1-70B"), parse_gpu_spec("4xL40S"), version="0.11.0")
    by_memory = plan(find_model("Llama-3.1-70B"), parse_gpu_spec("4xGPU:48"), version="0.11.0")
    assert not any("links not known" in r for r in named.range_reasons)
    assert any("links not known" in r for r in by_memory.range_reasons)


def test_memory_benchmark_meets_its_goal_on_the_real_start_up_logs():
    """benchmarks/memory_model.py's cases (real logs in tests/fixtures): KV error median
    <= 5 % and worst <= 15 %, V0 and V1 each."""
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).parents[2] / "benchmarks" / "memory_model.py"
    spec = importlib.util.spec_from_file_location("memory_benchmark", path)
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench  # dataclasses look their module up there
    try:
        spec.loader.exec_module(bench)
    finally:
        sys.modules.pop(spec.name, None)
    rows = [bench.evaluate(case) for case in bench.CASES]
    totals = bench.summary(rows)
    assert totals["V0"]["cases"] >= 5 and totals["V1"]["cases"] >= 6
    for engine in ("V0", "V1"):
        assert totals[engine]["median"] <= 0.05, totals
        assert totals[engine]["worst"] <= 0.15, totals


def test_a_fit_capped_by_the_context_keeps_the_context_as_its_low_end():
    # 70B on 8 H100: the KV cache holds ~1.37 M tokens, ten times the model's 131,072. The
    # error is taken off the uncapped fit, so the range is not "0 - 131,072".
    p = plan(find_model("meta-llama/Llama-3.1-70B-Instruct"), parse_gpu_spec("8xH100"))
    assert p.account.max_model_len_fit == 131072
    assert p.fit_range == (131072, 131072)
    assert "--max-model-len" not in p.command or "131072" in p.command
