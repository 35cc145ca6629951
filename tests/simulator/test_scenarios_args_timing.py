"""Scenarios tell their stories; the flag parser reads vLLM's flags; the timing model follows
the physics it claims (bandwidth-bound decode, link-dependent TP cost, PP bubbles)."""

from __future__ import annotations

import argparse

import pytest
from hypothesis import given
from hypothesis import strategies as st

from headroom.simulator.accounting import EngineSettings, plan_startup
from headroom.simulator.args import human_readable_int, non_default_args, parse_serve_args
from headroom.simulator.hardware import Machine, gpu_model
from headroom.simulator.models import known_models, load_model
from headroom.simulator.scenario import DEFAULT_SCENARIO, list_scenarios, load_scenario
from headroom.simulator.timing import StepTimer


def _plan_for(scenario, with_fix: bool):
    argv = scenario.serve_argv(with_fix=with_fix)
    ns = parse_serve_args(argv[1:])
    settings = EngineSettings(
        tp=ns.tensor_parallel_size or 1,
        pp=ns.pipeline_parallel_size or 1,
        gpu_memory_utilization=ns.gpu_memory_utilization or 0.92,
        max_model_len=ns.max_model_len,
        max_num_seqs=ns.max_num_seqs,
        kv_cache_memory_bytes=ns.kv_cache_memory_bytes,
        nnodes=ns.nnodes or 1,
    )
    return plan_startup(load_model(ns.model), settings, scenario.machine)


def test_every_packaged_scenario_loads_and_its_model_exists() -> None:
    scenarios = list_scenarios()
    assert scenarios[0].name == DEFAULT_SCENARIO
    assert len(scenarios) >= 5
    for sc in scenarios:
        assert load_model(sc.model)
        assert sc.env("/tmp/x.json")["HEADROOM_SIM_STATE"] == "/tmp/x.json"
        assert _plan_for(sc, with_fix=True).ok, sc.name  # every story can end well


def test_default_story_fails_then_starts_with_the_fix() -> None:
    story = load_scenario(DEFAULT_SCENARIO)
    first = _plan_for(story, with_fix=False)
    assert first.failure and first.failure.kind == "max_seq_len_exceeds_kv"
    fixed = _plan_for(story, with_fix=True)
    assert fixed.ok
    # the built-in load asks for more KV than exists, so preemptions must follow
    load = story.load
    demand = load.concurrency * (load.prompt_tokens[0] + load.max_tokens[0])
    assert demand > fixed.kv_tokens


@pytest.mark.parametrize("name", ["heads-tp8", "busy-gpu", "graph-oom-legacy"])
def test_failure_scenarios_are_fixed_by_their_fix(name: str) -> None:
    sc = load_scenario(name)
    if name != "graph-oom-legacy":  # that one needs the legacy log format's accounting
        assert not _plan_for(sc, with_fix=False).ok
    assert _plan_for(sc, with_fix=True).ok


def test_unknown_scenario_names_the_choices() -> None:
    with pytest.raises(ValueError, match="kv-story"):
        load_scenario("no-such-scenario")


def test_model_names_and_local_config(tmp_path) -> None:
    assert "meta-llama/Llama-3.1-8B-Instruct" in known_models()
    assert load_model("meta-llama/Llama-3.1-8B").num_layers == 32
    (tmp_path / "config.json").write_text(
        '{"hidden_size": 512, "num_attention_heads": 8, '
        '"num_hidden_layers": 3, "num_key_value_heads": 2}'
    )
    local = load_model(str(tmp_path))
    assert (local.head_dim, local.num_kv_heads) == (64, 2)
    with pytest.raises(ValueError, match="unknown model"):
        load_model("nobody/nothing")


def test_flags_and_non_default_args() -> None:
    ns = parse_serve_args(
        [
            "m",
            "-tp",
            "2",
            "--gpu-memory-utilization",
            "0.8",
            "--enable-prefix-caching",
            "--max-model-len",
            "auto",
            "--kv-cache-memory",
            "2G",
        ]
    )  # argparse accepts the unambiguous prefix
    assert (ns.tensor_parallel_size, ns.max_model_len, ns.kv_cache_memory_bytes) == (2, -1, 2**31)
    assert non_default_args(ns)["enable_prefix_caching"] is True
    with pytest.raises(SystemExit) as info:
        parse_serve_args(["m", "--tensor-parallel", "2", "--no-such-flag"])
    assert info.value.code == 2


@given(
    st.integers(min_value=0, max_value=10**6), st.sampled_from(["", "k", "K", "m", "M", "g", "G"])
)
def test_human_readable_int_property(n: int, unit: str) -> None:
    scale = {"": 1, "k": 10**3, "K": 2**10, "m": 10**6, "M": 2**20, "g": 10**9, "G": 2**30}[unit]
    assert human_readable_int(f"{n}{unit}") == n * scale


@given(st.text(max_size=12))
def test_human_readable_int_never_crashes_oddly(text: str) -> None:
    try:
        human_readable_int(text)
    except ValueError:
        pass  # argparse turns this into "invalid human_readable_int value"


def test_argparse_rejects_bad_values_with_status_2() -> None:
    with pytest.raises(SystemExit) as info:
        parse_serve_args(["m", "--max-num-seqs", "many"])
    assert info.value.code == 2
    assert isinstance(parse_serve_args(["m"]), argparse.Namespace)


def _timer(gpu: str, count: int, interconnect: str, tp: int, pp: int = 1) -> StepTimer:
    machine = Machine(gpu_model(gpu), gpus_per_node=count, interconnect=interconnect)
    plan = plan_startup(
        load_model("meta-llama/Llama-3.1-70B-Instruct"),
        EngineSettings(tp=tp, pp=pp, max_model_len=8192),
        machine,
    )
    assert plan.ok, plan.failure
    return StepTimer.for_plan(plan, machine)


def test_decode_is_bandwidth_bound_and_prefill_compute_bound() -> None:
    t = _timer("H100-SXM", 8, "nvswitch", 4)
    one, many = t.step_s(0, 1, 1000), t.step_s(0, 64, 64_000)
    assert many < 4 * one  # 64 decodes cost little more than 1: weights are read once
    weights_time = t.weights_bytes / t.bandwidth_bps
    assert one == pytest.approx(weights_time, rel=0.5)
    assert t.step_s(8192, 0, 0) > 2 * t.step_s(512, 0, 0)  # prefill grows with tokens


def test_tp_over_pcie_costs_more_than_over_nvlink() -> None:
    nvlink = _timer("H100-SXM", 4, "nvswitch", 4)
    pcie = _timer("H100-PCIe", 4, "pcie", 4)
    assert pcie.allreduce_s(64) > 3 * nvlink.allreduce_s(64)
    assert nvlink.tp_link_code == "NV18" and pcie.tp_link_code in ("NODE", "SYS", "PHB")


def test_pp_bubble_at_low_concurrency() -> None:
    t = _timer("H100-SXM", 8, "nvswitch", 2, pp=2)
    per_seq_one = t.step_s(0, 1, 1000)
    per_seq_many = t.step_s(0, 8, 8000) / 8
    assert per_seq_one > 4 * per_seq_many


def test_tp_across_nodes_needs_nnodes_and_is_slow() -> None:
    sc = load_scenario("tp-across-nodes")
    model = load_model(sc.model)
    alone = plan_startup(model, EngineSettings(tp=8, max_model_len=8192), sc.machine)
    assert alone.failure.kind == "world_size_too_large"  # no --nnodes, no ray
    slow = _plan_for(sc, with_fix=False)
    fast = _plan_for(sc, with_fix=True)
    assert slow.ok and fast.ok
    t_slow, t_fast = StepTimer.for_plan(slow, sc.machine), StepTimer.for_plan(fast, sc.machine)
    assert t_slow.tp_link_code == "NET" and t_fast.tp_link_code.startswith("NV")
    assert t_slow.step_s(0, 32, 32_000) > 2 * t_fast.step_s(0, 32, 32_000)
