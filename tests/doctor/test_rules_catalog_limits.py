"""headroom/doctor/rules_catalog_limits.py and the Ray local_world_size bug: vLLM texts found by
walking its sources (scripts/catalog_coverage.py), fed verbatim from the catalog
(headroom/probes/vllm_catalog/limits.py; provenance.py says which releases print them), with
the command lines that decide which way a knob turns. Before these entries the doctor said
nothing for any of these texts (or, for the Ray bug, turned TP down)."""

from __future__ import annotations

import pytest

from headroom.doctor import DoctorInputs, diagnose
from headroom.probes.vllm_catalog import SIGNATURES
from headroom.probes.vllm_log import digest_text
from headroom.vllm_cmd import parse_command

BY_ID = {s.id: s for s in SIGNATURES}
V0 = "INFO 05-09 00:49:33 config.py:316] "
V0_WARN = V0.replace("INFO", "WARNING")


def _diagnose(log: str, argv: list[str] | None = None, version: str | None = None):
    command = parse_command(argv) if argv else None
    inputs = DoctorInputs(log=digest_text(log), command=command, vllm_version=version)
    return diagnose(inputs).findings


def _finding(log: str, finding_id: str, argv=None, version=None):
    found = {f.id: f for f in _diagnose(log, argv, version)}
    assert finding_id in found, list(found)
    return found[finding_id]


def _turns(finding) -> list[tuple[str, str]]:
    return [(a.knob, a.direction) for a in finding.actions]


# --- swap space ----------------------------------------------------------------------------


def test_too_large_swap_space_lowers_it_under_the_warning_share_of_ram():
    # 80 GiB = 4 GPUs x 20 GiB of a 62.79 GiB host: 0.4 x 62.79 / 4 = 6.28 -> 6 GiB per GPU
    log = "ValueError: Too large swap space. 80.00 GiB out of the 62.79 GiB total CPU memory is " \
          "allocated for the swap space."  # fmt: skip
    argv = ["vllm", "serve", "m", "--swap-space", "20", "--tensor-parallel-size", "4"]
    f = _finding(log, "swap-space-too-large", argv)
    assert f.severity == "error" and f.step is None
    assert _turns(f) == [("swap_space", "lower")]
    assert f.actions[0].value == 6
    assert any("127%" in e for e in f.evidence), f.evidence
    # the top finding: nothing else in the log
    assert _diagnose(log, argv)[0].id == "swap-space-too-large"


def test_the_possibly_too_large_warning_lowers_swap_with_the_default_per_gpu():
    log = V0_WARN + BY_ID["possibly_too_large_swap_space"].examples[0]  # 32 GiB of 62.79
    f = _finding(log, "swap-space-too-large", ["vllm", "serve", "m", "-tp", "8"])
    assert f.severity == "warning"
    # no --swap-space: vLLM's 4 GiB per GPU, so 8 GPUs; 0.4 x 62.79 / 8 = 3.1 -> 3
    assert f.actions[0].value == 3 and _turns(f) == [("swap_space", "lower")]


def test_a_swap_that_ran_out_raises_swap_space_never_lowers_it():
    log = BY_ID["lack_of_cpu_swap_space"].examples[0]
    f = _finding(log, "swap-space-exhausted", ["vllm", "serve", "m", "--swap-space", "4"])
    assert _turns(f) == [("swap_space", "raise")] and f.actions[0].value == 8
    all_turns = [t for g in _diagnose(log) for t in _turns(g)]
    assert ("swap_space", "lower") not in all_turns


# --- Ray driver without a GPU -----------------------------------------------------------------


def test_ray_driver_without_gpu_offers_engine_use_ray_on_the_releases_that_have_it():
    old = BY_ID["ray_driver_no_gpu"].examples[0]  # the 0.2.7-0.7.3 wording
    for version in ("0.4.3", "0.5.5", "0.6.1"):  # arg_utils.py has the flag up to 0.6.1
        f = _finding(old, "ray-driver-without-gpu", version=version)
        assert _turns(f) == [("engine_use_ray", "set")] and f.actions[0].value is True


@pytest.mark.parametrize(
    ("example", "version"),
    [(0, None), (0, "0.6.2"), (0, "0.6.4.post1"), (1, None), (2, None), (2, "0.5.5")],
)
def test_ray_driver_without_gpu_names_no_flag_the_release_may_lack(example, version):
    """The same text from 0.2.7 to 0.7.3: without the release, --engine-use-ray (0.2-0.5) is not
    offered; the fix is where vLLM (or the library's Ray actor that drives it) starts."""
    text = BY_ID["ray_driver_no_gpu"].examples[example]
    f = _finding(text, "ray-driver-without-gpu", version=version)
    assert f.actions == ()
    assert any("GPU" in e and "node" in e for e in f.evidence[1:])
    if example == 1:  # 0.8+ names the driver's IP
        assert any("10.0.0.5" in e and "VLLM_HOST_IP" in e for e in f.evidence)


# --- quantized weights a TP cannot split ------------------------------------------------------------


# (the quantized TP splits: tests/doctor/test_rules_quant_tp.py)


def test_a_prequantized_bitsandbytes_checkpoint_moves_tp_into_pp():
    text = BY_ID["bnb_prequant_tp"].examples[0]
    f = _finding(text, "quantized-tp-unsupported", ["vllm", "serve", "m-bnb-4bit", "-tp", "2"])
    assert _turns(f) == [("tensor_parallel_size", "lower"), ("pipeline_parallel_size", "raise")]
    assert f.actions[0].value == 1 and f.actions[1].value == 2


# --- old releases and vLLM's own bugs -------------------------------------------------------------


@pytest.mark.parametrize("sig_id", ["pp_not_supported_yet", "pp_architectures"])
def test_pipeline_parallelism_an_old_release_lacks_is_an_upgrade_not_a_knob(sig_id):
    text = BY_ID[sig_id].examples[0]
    argv = ["vllm", "serve", "m", "-tp", "2", "-pp", "2"]
    findings = _diagnose(text, argv)
    assert findings[0].id == "pp-unsupported-release" and findings[0].actions == ()
    assert "upgrade" in findings[0].title
    # the pipeline-parallel size is never raised for it
    assert ("pipeline_parallel_size", "raise") not in [t for f in findings for t in _turns(f)]


def test_vllms_self_reported_bug_turns_no_knob_and_does_not_hide_a_cause():
    bug = BY_ID["vllm_says_bug"].examples[1]
    f = _finding(bug, "vllm-reported-bug")
    assert f.actions == () and "upgrade" in f.title
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB."
    top = _diagnose(oom + "\n" + bug)[0]
    assert top.id.startswith("cuda-oom")


@pytest.mark.parametrize("sig_id", ["engine_process_failed", "v0_engine_dead"])
def test_engine_death_notices_are_echoes(sig_id):
    for text in BY_ID[sig_id].examples:
        ids = {f.id for f in _diagnose(text)}
        assert "engine-died" in ids, (text, ids)
        # with a cause above it, the echo is not a finding of its own
        cause = BY_ID["too_large_swap_space"].examples[0]
        assert "engine-died" not in {f.id for f in _diagnose(cause + "\n" + text)}


# --- Ray's local_world_size check (vLLM PR #28873) ------------------------------------------------

_LWS = (
    "(EngineCore_DP0 pid=570282) AssertionError: local_world_size (16) must be less than or equal "
    "to the number of visible devices (8)."
)


def test_local_world_size_under_ray_is_a_vllm_bug_without_a_knob():
    argv = ["vllm", "serve", "m", "-tp", "16", "--distributed-executor-backend", "ray"]
    findings = _diagnose(_LWS, argv)
    assert findings[0].id == "local-world-size-ray-bug" and findings[0].actions == ()
    assert any("TP 8 x PP 2" in e for e in findings[0].evidence)


def test_local_world_size_without_ray_still_puts_tp_inside_a_node():
    f = _finding(_LWS, "tp-across-nodes", ["vllm", "serve", "m", "-tp", "16"])
    assert _turns(f)[0] == ("tensor_parallel_size", "lower") and f.actions[0].value == 8


# --- a sequence the KV cache cannot hold; clients' requests over max_model_len -----------------


def test_a_swapped_sequence_the_kv_cache_cannot_hold_raises_the_kv_budget():
    log = (
        "WARNING 05-09 00:49:33 scheduler.py:859] " + BY_ID["v0_swapped_exceeds_blocks"].examples[0]
    )
    f = _finding(
        log, "prompt-exceeds-kv", ["vllm", "serve", "m", "--gpu-memory-utilization", "0.8"]
    )
    assert _turns(f)[0] == ("gpu_memory_utilization", "raise")


@pytest.mark.parametrize(
    "sig_id", ["v1_prompt_length_of", "v1_prompt_plus_output", "input_length_over_context",
               "mm_prompt_too_long"],
)  # fmt: skip
def test_a_clients_request_over_max_model_len_is_read_and_turns_no_knob(sig_id):
    from headroom.probes.vllm_log import classify_line

    text = BY_ID[sig_id].examples[0]
    event = classify_line(text, 1)
    assert event is not None and event.signature == sig_id
    assert event.fields["prompt_tokens"] > 0 and event.fields["limit"] > 0
    assert not any(f.actions for f in _diagnose(text))


# --- all-reduce paths a flag turns off ----------------------------------------------------------


@pytest.mark.parametrize("example", [0, 1])
def test_a_failed_custom_all_reduce_kernel_disables_it(example):
    text = BY_ID["custom_allreduce_cudacheck"].examples[example]
    argv = ["vllm", "serve", "m", "-tp", "8", "-pp", "2"]
    top = _diagnose(text, argv)[0]
    assert top.id == "custom-allreduce-failed"
    assert _turns(top) == [("disable_custom_all_reduce", "set")] and top.actions[0].value is True
    assert ("invalid argument" in top.actions[0].why) == (example == 0)


def test_cupys_tcp_store_on_an_old_release_turns_cuda_graphs_off():
    text = BY_ID["cupy_tcpstore"].examples[0]
    f = _finding(text, "cupy-nccl-failed")
    assert _turns(f) == [("enforce_eager", "set")]
    f = _finding(BY_ID["cupy_barrier"].examples[0], "cupy-nccl-failed", version="0.3.3")
    assert _turns(f) == [("enforce_eager", "set")]


def test_cupy_under_rays_compiled_graphs_or_a_new_release_turns_no_knob():
    text = BY_ID["cupy_tcpstore"].examples[0]
    assert _finding(text, "cupy-nccl-failed", version="0.6.6.post1").actions == ()
    # a traceback through Ray's compiled graph (0.8.5 executor/ray_distributed_executor.py:451)
    log = "    self.forward_dag = self._compiled_ray_dag(enable_asyncio=False)\n" + text
    assert _finding(log, "cupy-nccl-failed").actions == ()


# --- refusals rules_compat also reads from raw lines; fp8 KV scales; CUDA before the fork --------


@pytest.mark.parametrize(
    ("sig_id", "finding_id", "turn"),
    [
        ("quant_dtype_unsupported", "dtype-unsupported", ("dtype", "set")),
        ("quant_scheme_capability", "quantization-unsupported-gpu", ("quantization", "set")),
        ("mamba_blocks_below_max_num_seqs", "mamba-blocks-below-max-num-seqs", ("max_num_seqs", "lower")),
    ],
)  # fmt: skip
def test_refusals_read_as_catalog_events_keep_their_rules_answer(sig_id, finding_id, turn):
    from headroom.probes.vllm_log import classify_line

    text = BY_ID[sig_id].examples[0]
    assert classify_line(text, 1).signature == sig_id  # an event now, not a bare exception
    f = _finding(text, finding_id)
    assert _turns(f)[0] == turn


def test_fp8_kv_scales_vllm_cannot_load_turn_no_knob():
    text = "[rank0]: " + BY_ID["fp8_kv_scale_per_tensor"].examples[0]
    argv = ["vllm", "serve", "neuralmagic/Qwen2-0.5B-Instruct-FP8", "--kv-cache-dtype=fp8"]
    top = _diagnose(text, argv)[0]
    assert top.id == "fp8-kv-scale-unsupported" and top.actions == ()
    assert "upgrade" in top.title


def test_cuda_before_the_fork_sets_the_spawn_start_method_where_vllm_forks():
    """VLLM_WORKER_MULTIPROC_METHOD defaults to fork from 0.5.1 (envs.py of the wheels):
    spawn is the fix there and for an unknown release (fastchat #3507)."""
    text = BY_ID["cuda_forked_subprocess"].examples[0]
    for version in (None, "0.5.5", "0.6.2", "0.8.5"):
        top = _diagnose(text, ["vllm", "serve", "m", "-tp", "2"], version=version)[0]
        assert top.id == "cuda-forked-subprocess"
        assert [(a.knob, a.direction, a.value) for a in top.actions] == [
            ("VLLM_WORKER_MULTIPROC_METHOD", "set", "spawn")
        ]


def test_cuda_before_the_fork_turns_no_knob_where_vllm_spawns_already():
    """0.4.2-0.5.0.post1 spawn by default (vllm #6152 on 0.5.0.post1: the fork is the
    program's own), and before 0.4.2 vLLM reads no such variable."""
    text = BY_ID["cuda_forked_subprocess"].examples[0]
    for version in ("0.4.3", "0.5.0.post1", "0.3.3"):
        top = _diagnose(text, ["vllm", "serve", "m", "-tp", "2"], version=version)[0]
        assert top.id == "cuda-forked-subprocess" and top.actions == ()
        assert any("spawn already" in e for e in top.evidence)


# --- the memory gate's other wordings; a utilization above 1; features a release cannot combine ---


@pytest.mark.parametrize(
    "sig_id", ["free_memory_below_engine_budget", "cpu_memory_below_utilization"]
)
def test_the_memory_gates_other_wordings_lower_utilization_to_what_is_free(sig_id):
    text = BY_ID[sig_id].examples[0]
    f = _finding(text, "free-memory-below-utilization", ["vllm", "serve", "m"])
    assert _turns(f)[0] == ("gpu_memory_utilization", "lower")
    asked = 0.9 if sig_id.startswith("free") else 0.7  # the utilization in the text
    assert f.actions[0].value < asked
    assert any("held by other processes" in e for e in f.evidence)


@pytest.mark.parametrize(("given", "value"), [("90.0", 0.9), ("95", 0.95), ("1.2", 0.9)])
def test_a_utilization_above_one_is_read_as_a_percentage_or_the_default(given, value):
    text = f"ValueError: GPU memory utilization must be less than 1.0. Got {given}."
    f = _finding(text, "utilization-out-of-range", ["vllm", "serve", "m"])
    assert _turns(f) == [("gpu_memory_utilization", "lower")] and f.actions[0].value == value


@pytest.mark.parametrize("example", range(5))
def test_two_features_a_release_cannot_combine_turn_no_knob(example):
    text = BY_ID["feature_combination"].examples[example]
    top = _diagnose(text, ["vllm", "serve", "m", "--enable-chunked-prefill"])[0]
    assert top.id == "feature-combination-unsupported" and top.actions == ()


def test_source_lines_a_traceback_quotes_are_not_refusals():
    """A traceback through linear.py quotes `self.input_size_per_partition = divide(...)` (0.10.2
    model_executor/layers/linear.py:1214) and a build log names custom_all_reduce.cuh: neither is
    the refusal, so neither turns TP down nor the custom all-reduce off."""
    from headroom.probes.vllm_log import classify_line

    for line in (
        "    self.input_size_per_partition = divide(input_size, self.tp_size)",
        "/workspace/csrc/custom_all_reduce.cuh:23: warning: unused variable",
    ):
        event = classify_line(line, 1)
        assert event is None or event.kind not in ("quantized_tp_split", "custom_allreduce_failed")
    log = "    self.input_size_per_partition = divide(input_size, self.tp_size)\n" + (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB."
    )
    assert "quantized-tp-split" not in {
        f.id for f in _diagnose(log, ["vllm", "serve", "m", "-tp", "8"])
    }


# --- fp8 KV caches a model or kernel refuses; CUDA-graph modes a model or backend lacks ------------


@pytest.mark.parametrize("sig_id", ["fp8_key_cache_head_size", "trtllm_fp8_sinks"])
def test_an_fp8_kv_cache_the_model_or_kernel_refuses_goes_back_to_auto(sig_id):
    text = BY_ID[sig_id].examples[0]
    f = _finding(text, "kv-cache-dtype-refused", ["vllm", "serve", "m", "--kv-cache-dtype", "fp8"])
    assert f.step == 5 and _turns(f) == [("kv_cache_dtype", "set")] and f.actions[0].value == "auto"
    if sig_id == "fp8_key_cache_head_size":
        assert "head_size 120" in f.actions[0].why


def test_mamba_layers_without_cuda_graphs_turn_eager_on_and_full_graphs_turn_nothing():
    f = _finding(BY_ID["mamba_cuda_graph"].examples[0], "cuda-graph-unsupported")
    assert _turns(f) == [("enforce_eager", "set")]
    for text in BY_ID["full_cudagraph_backend"].examples:
        f = _finding(text, "cuda-graph-unsupported")
        assert f.actions == () and any("PIECEWISE" in e for e in f.evidence)
