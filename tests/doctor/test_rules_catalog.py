"""headroom/doctor/rules_catalog.py: the catalog kinds that had no rule, fed the catalog's own
real texts (headroom/probes/vllm_catalog; tests/probes/test_vllm_catalog.py runs every
prefix form), with the command lines that decide which way a knob turns."""

from __future__ import annotations

import pytest

from headroom.doctor import DoctorInputs, diagnose
from headroom.probes.vllm_catalog import SIGNATURES
from headroom.probes.vllm_log import digest_text
from headroom.vllm_cmd import parse_command

EXAMPLE = {s.id: s.examples[0] for s in SIGNATURES}
V0_WORKER = "(VllmWorkerProcess pid=236) WARNING 08-23 08:25:25 scheduler.py:1057] "


def _diagnose(log: str, argv: list[str] | None = None):
    command = parse_command(argv) if argv else None
    return diagnose(DoctorInputs(log=digest_text(log), command=command))


def _finding(log: str, finding_id: str, argv: list[str] | None = None):
    found = {f.id: f for f in _diagnose(log, argv).findings}
    assert finding_id in found, list(found)
    return found[finding_id]


def _turns(finding) -> list[tuple[str, str]]:
    return [(a.knob, a.direction) for a in finding.actions]


def test_a_prompt_above_the_whole_kv_cache_raises_the_kv_budget_first():
    f = _finding(
        V0_WORKER + EXAMPLE["v0_prompt_exceeds_blocks"],
        "prompt-exceeds-kv",
        ["vllm", "serve", "m", "--gpu-memory-utilization", "0.8"],
    )
    assert f.step == 4 and "20,000" in f.title
    knob, direction = _turns(f)[0]
    assert (knob, direction) == ("gpu_memory_utilization", "raise")
    assert f.actions[0].value > 0.8
    # a KV shortage never lowers the budget nor raises the batch
    assert ("gpu_memory_utilization", "lower") not in _turns(f)
    assert ("max_num_batched_tokens", "raise") not in _turns(f)


def test_a_prompt_above_the_kv_cache_raises_kv_cache_memory_bytes_when_it_is_set():
    f = _finding(
        EXAMPLE["v0_prompt_exceeds_blocks"],
        "prompt-exceeds-kv",
        ["vllm", "serve", "m", "--kv-cache-memory-bytes", str(8 * 2**30)],
    )
    assert _turns(f)[0] == ("kv_cache_memory_bytes", "raise")
    assert f.actions[0].value > 8 * 2**30


def test_a_prompt_above_the_kv_cache_is_sized_by_the_logs_block_count():
    log = "\n".join(
        [
            "INFO 05-09 00:49:33 gpu_executor.py:117] # GPU blocks: 500, # CPU blocks: 2048",
            V0_WORKER + EXAMPLE["v0_prompt_exceeds_blocks"],
        ]
    )
    f = _finding(log, "prompt-exceeds-kv", ["vllm", "serve", "m"])
    assert any("8,000" in line for line in f.evidence), f.evidence  # 500 blocks x 16 tokens
    assert ("max_model_len", "lower") in _turns(f)
    assert _turns(f)[0] == ("gpu_memory_utilization", "raise")


def test_fp8_e5m2_with_an_fp8_checkpoint_sets_the_e4m3_kv_cache():
    f = _finding(
        EXAMPLE["fp8_e5m2_with_fp8_checkpoint"],
        "fp8-e5m2-with-fp8-checkpoint",
        [
            "vllm",
            "serve",
            "neuralmagic/Meta-Llama-3-8B-Instruct-FP8",
            "--kv-cache-dtype",
            "fp8_e5m2",
        ],
    )
    assert f.step == 5
    assert (f.actions[0].knob, f.actions[0].value) == ("kv_cache_dtype", "fp8")


@pytest.mark.parametrize(
    "argv",
    [
        ["vllm", "serve", "org/Some-31B-it-AWQ-4bit", "--kv-cache-dtype", "fp8_e5m2"],
        ["vllm", "serve", "m", "--quantization", "gptq", "--kv-cache-dtype", "fp8_e5m2"],
    ],
)
def test_fp8_e5m2_refused_for_a_checkpoint_that_is_not_fp8_is_a_bug_without_a_knob(argv):
    d = _diagnose(EXAMPLE["fp8_e5m2_with_fp8_checkpoint"], argv)
    assert d.findings[0].id == "fp8-e5m2-gate-not-fp8-checkpoint"
    assert not any(f.actions for f in d.findings)


def test_quantization_mismatch_sets_the_checkpoints_own_method():
    f = _finding(EXAMPLE["quantization_mismatch"], "quantization-mismatch")
    act = f.actions[0]
    assert (act.knob, act.direction, act.value) == ("quantization", "set", "gptq")
    assert "awq" in act.why


def test_more_sequences_than_batched_tokens_lowers_max_num_seqs_first():
    f = _finding(EXAMPLE["batched_tokens_below_max_seqs"], "batched-tokens-below-max-num-seqs")
    first, alt = f.actions
    assert (first.knob, first.direction, first.value) == ("max_num_seqs", "lower", 128)
    assert (alt.knob, alt.direction, alt.value) == ("max_num_batched_tokens", "raise", 256)
    assert f.step == 4


def test_ray_shm_warning_says_the_size_and_turns_no_engine_knob():
    f = _finding("(raylet) " + EXAMPLE["ray_shm_small"], "shm-small")
    assert "64 MiB" in f.title and f.severity == "warning" and not f.actions


@pytest.mark.parametrize(
    ("sig_id", "finding_id", "said"),
    [
        ("memory_profiling_changed", "memory-profiling-disturbed", "+1.60 GiB"),
        ("architecture_unsupported", "model-unsupported", "Qwen3ForCausalLM"),
        ("pp_layers_not_divisible", "pp-layers-not-divisible", "divides 30: 2, 3, 5, 6, 10, 15"),
        ("graph_capture_nccl", "cuda-graph-capture-failed", "--enforce-eager"),
        ("cuda_illegal_memory", "cuda-illegal-memory", "CUDA_LAUNCH_BLOCKING=1"),
    ],
)
def test_not_configuration_problems_are_named_with_their_numbers_and_no_knob(
    sig_id, finding_id, said
):
    argv = ["vllm", "serve", "m", "--pipeline-parallel-size", "4"]
    d = _diagnose("[rank0]: " + EXAMPLE[sig_id], argv)
    top = d.findings[0]
    assert top.id == finding_id and top.step is None
    assert said in " ".join((top.title, *top.evidence))
    assert not any(f.actions for f in d.findings)


def test_a_not_config_failure_does_not_hide_a_configuration_cause_above_it():
    log = "\n".join([EXAMPLE["bf16_unsupported"], EXAMPLE["cuda_illegal_memory"]])
    d = _diagnose(log)
    assert d.findings[0].id == "dtype-unsupported"
    assert "cuda-illegal-memory" in {f.id for f in d.findings}


def test_a_worker_exception_alone_is_the_engines_death():
    f = _finding(
        V0_WORKER.replace("WARNING", "ERROR").replace("scheduler.py", "multiproc_worker_utils.py")
        + EXAMPLE["v0_worker_exception"],
        "engine-died",
    )
    assert "determine_num_available_blocks" in f.evidence[0]
