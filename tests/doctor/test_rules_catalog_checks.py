"""Start-up configuration checks the source walk (scripts/catalog_coverage.py) listed as unknown
and that users meet (headroom/probes/vllm_catalog/config_checks.py, rules in
rules_catalog_config.py and rules_compat.py): each text is fed verbatim from the catalog (vLLM's
own wording, provenance.py names the releases and files), with the command line that decides
the value, and the knob must turn the way the text and its threads say."""

from __future__ import annotations

import pytest

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.probes.vllm_catalog import SIGNATURES
from headroom.probes.vllm_log import digest_text
from headroom.vllm_cmd import parse_command

BY_ID = {s.id: s for s in SIGNATURES}


def _findings(log: str, argv: list[str] | None = None, gpus: str | None = None):
    inputs = DoctorInputs(
        log=digest_text(log),
        command=parse_command(argv) if argv else None,
        gpu_spec=parse_gpu_spec(gpus) if gpus else None,
    )
    return diagnose(inputs).findings


def _top(log: str, argv=None, gpus=None):
    findings = _findings(log, argv, gpus)
    assert findings, "the doctor found nothing"
    return findings[0]


def _turn(finding) -> tuple[str, str, object] | None:
    act = next((a for a in finding.actions if a.knob), None)
    return (act.knob, act.direction, act.value) if act else None


# --- speculative decoding's draft slots ----------------------------------------------------


def test_spec_decode_without_slots_raises_the_batch_by_what_is_missing():
    """vllm#50708: max_num_scheduled_tokens = batch - slots x seqs = -1792 with a 2048 batch:
    at least 2048 + 1792 + 1 tokens start it (rounded up to 256)."""
    example = BY_ID["spec_decode_no_slots"].examples[0]
    top = _top(example, ["vllm", "serve", "m", "--max-num-batched-tokens", "2048"])
    assert top.id == "spec-decode-batch-too-small"
    assert _turn(top) == ("max_num_batched_tokens", "raise", 4096)
    assert ("max_num_seqs", "lower") in [(a.knob, a.direction) for a in top.actions]


def test_spec_decode_lookahead_check_needs_one_token_more_than_the_lookahead():
    example = BY_ID["spec_decode_no_slots"].examples[1]  # batch 4, lookahead 7
    top = _top(example)
    assert _turn(top) == ("max_num_batched_tokens", "raise", 256)


def test_spec_decode_without_the_batch_size_still_turns_it_up():
    example = BY_ID["spec_decode_no_slots"].examples[0]
    top = _top(example)
    assert top.id == "spec-decode-batch-too-small"
    assert _turn(top)[:2] == ("max_num_batched_tokens", "raise")


# --- the batch against the KV block --------------------------------------------------------


def test_v0_chunk_not_a_block_multiple_rounds_up_to_one():
    top = _top(BY_ID["chunk_not_block_multiple"].examples[0])  # 1000 % 16 = 8
    assert top.id == "batched-tokens-below-block-size"
    assert _turn(top) == ("max_num_batched_tokens", "raise", 1008)


@pytest.mark.parametrize("example", BY_ID["mamba_align_block_above_batch"].examples)
def test_mamba_align_block_raises_the_batch_to_the_block(example):
    """vllm#36734 (through pydantic, as pasted) and the bare assert: one finding, raise."""
    findings = _findings(example)
    assert findings[0].id == "mamba-align-block-above-batch"
    assert _turn(findings[0])[:2] == ("max_num_batched_tokens", "raise")
    raised = [f for f in findings if any(a.knob == "max_num_batched_tokens" for a in f.actions)]
    assert all(
        a.direction == "raise"
        for f in raised
        for a in f.actions
        if a.knob == "max_num_batched_tokens"
    )


# --- TP above the node's GPUs (the multiprocessing executor) ----------------------------------


def test_tp_above_the_local_gpus_lowers_tp_to_what_the_node_has():
    """vllm#5790: "please set tensor_parallel_size (4) to less than max local gpu count (2)"."""
    example = BY_ID["tp_above_local_gpus"].examples[0]
    top = _top(example, ["vllm", "serve", "m", "--tensor-parallel-size", "4"])
    assert top.id == "world-size-too-large"
    assert _turn(top) == ("tensor_parallel_size", "lower", 2)


def test_tp_check_without_numbers_is_still_read():
    event = digest_text(BY_ID["tp_above_local_gpus"].examples[2]).facts().failures[0]
    assert event.kind == "world_size_too_large"


# --- float16 refused, quantization unknown ---------------------------------------------------


@pytest.mark.parametrize(("gpus", "dtype"), [(None, "bfloat16"), ("1xA100-80GB", "bfloat16"),
                                             ("1xV100-32GB", "float32"), ("2xT4", "float32")])  # fmt: skip
def test_float16_refused_for_the_model_sets_bfloat16_or_float32_on_old_gpus(gpus, dtype):
    """Gemma 2/3, GLM-4 refuse float16 (0.9.2+, "Numerical instability"): bf16 where the GPU
    has it, else float32 (vllm#28857; the bf16 refusal itself says pre-Ampere GPUs lack it)."""
    example = BY_ID["float16_unsupported_model"].examples[1]  # as pydantic prints it
    top = _top(example, ["vllm", "serve", "google/gemma-3-4b-it", "--dtype", "half"], gpus)
    assert top.id == "dtype-unsupported"
    assert _turn(top) == ("dtype", "set", dtype)


def test_unknown_quantization_method_is_an_upgrade_and_turns_no_knob():
    top = _top(BY_ID["quantization_method_unknown"].examples[0])
    assert top.id == "quantization-unknown" and not top.actions
    assert "gptq" in top.title and "'awq', 'squeezellm'" in " ".join(top.evidence)


# --- CUDA graphs and model layouts ---------------------------------------------------------------


def test_dual_chunk_attention_turns_eager_on():
    top = _top(BY_ID["dual_chunk_cuda_graph"].examples[0])
    assert top.id == "cuda-graph-unsupported"
    assert _turn(top) == ("enforce_eager", "set", True)


@pytest.mark.parametrize("sig_id", ["fa3_full_graph_capture_size", "partial_sliding_window"])
def test_release_limits_are_named_and_turn_no_knob(sig_id):
    top = _top(BY_ID[sig_id].examples[0])
    assert top.step is None and not top.actions


def test_the_v0_long_context_warning_gives_the_derived_length():
    log = "WARNING 08-02 13:58:45 arg_utils.py:850] " + BY_ID["long_context_warning"].examples[0]
    facts = digest_text(log).facts()
    assert facts.max_model_len == 131072
    assert [w.kind for w in facts.warnings] == ["long_context_warning"]


# --- LoRA ranks ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("version", "value"), [(None, 32), ("0.4.3", 32), ("0.11.0", 32)])
def test_an_adapter_above_max_lora_rank_raises_it_to_its_rank(version, value):
    """modelscope/ms-swift#4221: a rank-32 adapter, --max-lora-rank 16 (the default)."""
    inputs = DoctorInputs(
        log=digest_text(BY_ID["lora_rank_above_max"].examples[0]), vllm_version=version
    )
    top = diagnose(inputs).findings[0]
    assert top.id == "lora-rank-unsupported"
    assert _turn(top) == ("max_lora_rank", "raise", value)


def test_a_rank_the_release_lacks_is_the_next_allowed_one():
    top = _top(BY_ID["max_lora_rank_not_allowed"].examples[0])  # 48 of (8, ..., 320, 512)
    assert _turn(top) == ("max_lora_rank", "set", 64)


def test_a_rank_above_what_an_old_release_allows_says_upgrade():
    log = "ValueError: LoRA rank 128 is greater than max_lora_rank 64."
    inputs = DoctorInputs(log=digest_text(log), vllm_version="0.4.3")  # ranks up to 64
    top = diagnose(inputs).findings[0]
    assert top.id == "lora-rank-unsupported" and _turn(top)[2] is None
    assert "newer release" in " ".join(top.evidence)


# --- a request for a model the server does not serve --------------------------------------------


def test_a_model_the_server_does_not_serve_sets_served_model_name_to_the_name_asked():
    """QwenLM/Qwen#87: the 404 body a client printed; the server was started from a path."""
    log = BY_ID["model_not_served"].examples[0]
    top = _top(log, ["vllm", "serve", "/models/qwen1.5-7b-chat"])
    assert top.id == "model-not-served"
    assert _turn(top) == ("served_model_name", "set", "Qwen/Qwen1.5-7B-Chat")
    assert "/models/qwen1.5-7b-chat" in " ".join(top.evidence)


# --- loading: remote code, weights the class has no place for ---------------------------------


@pytest.mark.parametrize("sig_id", ["config_needs_remote_code", "hf_needs_remote_code"])
def test_model_code_in_the_repository_sets_trust_remote_code(sig_id):
    for example in BY_ID[sig_id].examples:
        top = _top(example)
        assert top.id == "remote-code-required"
        assert _turn(top) == ("trust_remote_code", "set", True)


@pytest.mark.parametrize(("version", "turn"), [("0.8.5", ("task", "set", "embed")),
                                               (None, ("task", "set", "embed")),
                                               ("0.11.0", ("runner", "set", "pooling"))])  # fmt: skip
def test_a_base_model_weight_in_a_causal_lm_serves_it_as_an_embedding_model(version, turn):
    """gpustack/gpustack#2170: Qwen3-Embedding on 0.8.5, answered with --task embed."""
    log = BY_ID["no_module_for_weight"].examples[0]
    inputs = DoctorInputs(log=digest_text(log), vllm_version=version)
    top = diagnose(inputs).findings[0]
    assert top.id == "checkpoint-weights-mismatch"
    assert _turn(top) == turn


def test_another_weight_name_is_a_checkpoint_for_another_class_and_turns_no_knob():
    log = "ValueError: There is no module or parameter named 'vision_tower.blocks.0' in LlamaForCausalLM"
    top = _top(log)
    assert top.id == "checkpoint-weights-mismatch" and not top.actions


# --- the environment ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sig_id", ["device_type_unknown", "no_cuda_gpus", "driver_too_old", "no_kernel_image"]
)
def test_environment_problems_are_named_and_turn_no_knob(sig_id):
    """vllm#13946 (Docker without GPUs: "Failed to infer device type"), vllm#18841 (no kernel
    image in the 0.9.0 FP8 build): not engine settings."""
    for example in BY_ID[sig_id].examples:
        top = _top(example, ["vllm", "serve", "m", "--gpu-memory-utilization", "0.9"])
        assert top.id == "environment-problem", example
        assert top.step is None and not top.actions


def test_a_mistral_tokenizer_asked_of_an_hf_repository_goes_back_to_auto():
    """vllm#17210: --tokenizer-mode mistral on an HF-format GGUF repository."""
    top = _top(
        BY_ID["mistral_tokenizer_missing"].examples[0],
        ["vllm", "serve", "m", "--tokenizer-mode", "mistral"],
    )
    assert top.id == "mistral-format-mismatch"
    assert _turn(top) == ("tokenizer_mode", "set", "auto")
