"""The signature catalog: every entry's real text, with every prefix vLLM prints it with,
goes through the log reader (and, for failures, the doctor) and comes out as its kind."""

from __future__ import annotations

import re

import pytest

from headroom.doctor import DoctorInputs, diagnose
from headroom.probes.vllm_catalog import NOT_CONFIG, PREFIX_FORMS, RELEASES, SIGNATURES
from headroom.probes.vllm_log import KINDS, classify_line, digest_text
from headroom.probes.vllm_log_patterns import RULES

VLLM_ORIGINS = ("log", "raise", "assert", "source")
# The releases issue 12 asks for, by minor version, and the newest two read.
REQUIRED = ("0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "0.10", "0.11", "0.32", "0.33")


def _minor(release: str) -> tuple[int, int]:
    major, minor = release.split(".")[:2]
    return int(major), int(minor)


def _prefixes(sig) -> list[tuple[str, str]]:
    """(form name, prefix) pairs a real log prints this text with."""
    if sig.origin == "log":
        file = sig.printed_by[0]
        minors = {_minor(r) for r in sig.releases}
        names = ["bare"]
        if any(m < (0, 8) for m in minors):
            names += ["v0_plain", "v0_worker", "ray_worker", "ray_actor"]
        if any((0, 8) <= m < (0, 10) for m in minors):
            names += ["v1_plain", "v1_worker_rank", "ray_worker"]
        if any(m >= (0, 10) for m in minors):
            names += ["engine_core", "api_server", "worker_tp"]
        return [(n, PREFIX_FORMS[n].format(file=file)) for n in dict.fromkeys(names)]
    names = ["bare", "rank", "proc_only"]
    relayed = [  # a logger that relays a traceback repeats its own prefix on every line
        ("relayed_v1", PREFIX_FORMS["engine_core"].format(file="core.py").replace("INFO", "ERROR")),
        ("relayed_v0", PREFIX_FORMS["v0_worker"].format(file="multiproc_worker_utils.py")),
    ]
    out = [(n, PREFIX_FORMS[n]) for n in names]
    return out + relayed if sig.origin in ("raise", "assert", "source", "python", "torch") else out


CASES = [
    pytest.param(sig, example, prefix, id=f"{sig.id}-{i}-{form}")
    for sig in SIGNATURES
    for i, example in enumerate(sig.examples)
    for form, prefix in _prefixes(sig)
]


def test_catalog_is_complete_data():
    ids = [s.id for s in SIGNATURES]
    assert len(ids) == len(set(ids)), "duplicate ids"
    assert len(SIGNATURES) >= 60
    for sig in SIGNATURES:
        assert sig.examples and sig.feeds and sig.needles, sig.id
        assert sig.kind is None or sig.kind in KINDS, sig.id
        assert set(sig.releases) <= set(RELEASES), sig.id
        if sig.origin in VLLM_ORIGINS:
            assert sig.releases and sig.sources, f"{sig.id}: no release holds its probe"
        else:
            assert sig.library, f"{sig.id}: which library prints it?"
        if sig.origin == "log":
            assert sig.printed_by, f"{sig.id}: which files print it?"
        if sig.fields:  # the named numbers are the regex's or the extractor's
            assert sig.pattern or sig.extract, sig.id
        for example in sig.examples:  # needles are exact substrings of the real text
            assert any(n in example for n in sig.needles), (sig.id, example)
    for release in RELEASES.values():
        assert re.fullmatch(r"[0-9a-f]{64}", release["sha256"])


def test_every_regex_compiles():
    """The reader compiles a rule's regex only when a line first holds its needle (start-up
    cost), so a broken regex would surface late, in the middle of a log: compile them all here."""
    assert len(RULES) == len(SIGNATURES)
    for rule, sig in zip(RULES, SIGNATURES, strict=True):
        assert rule.id == sig.id
        if sig.pattern:
            assert isinstance(rule.pattern, re.Pattern) and rule.pattern.pattern == sig.pattern
        else:
            assert rule.pattern is None, sig.id


def test_catalog_covers_the_releases_asked_for():
    covered = {".".join(map(str, _minor(r))) for s in SIGNATURES for r in s.releases}
    assert set(REQUIRED) <= covered
    # the V0 texts of issue 12 exist in the old releases and not in the newest
    by_id = {s.id: s for s in SIGNATURES}
    for sig_id in ("v0_gpu_blocks", "v0_preemption", "v0_max_seq_len_exceeds_kv", "v0_profile_breakdown",
                   "v0_prompt_exceeds_limit"):  # fmt: skip
        assert "0.4.3" in by_id[sig_id].releases or "0.6.6.post1" in by_id[sig_id].releases
        assert "0.33.0" not in by_id[sig_id].releases


@pytest.mark.parametrize(("sig", "example", "prefix"), CASES)
def test_entry_through_the_reader(sig, example, prefix):
    event = classify_line(prefix + example, 3)
    if sig.kind is None:  # client text: never an event
        assert event is None
        return
    assert event is not None, prefix + example
    assert event.kind == sig.kind
    same_kind = [s.id for s in SIGNATURES if s.kind == sig.kind]
    assert event.signature in same_kind
    extracted = set(event.fields)
    if sig.fields and event.signature == sig.id and sig.require_match:
        assert extracted & set(sig.fields), (sig.id, event.fields)


# What the doctor names for each failure kind it has a rule for; other kinds are facts or
# not configuration problems, and must at least reach the digest's failures.
FINDING_FOR_KIND = {
    "max_seq_len_exceeds_kv": {"max-seq-len-exceeds-kv"},
    "no_cache_memory": {"no-cache-memory"},
    "free_memory_below_utilization": {"free-memory-below-utilization"},
    "cuda_oom": {
        "cuda-oom-weights",
        "cuda-oom-sampler",
        "cuda-oom-foreign-process",
        "cuda-oom",
        "cuda-oom-unknown",
        # torch 2.1's wording dates a V0 release: a whole-prompt-sized tensor is its profile
        "cuda-oom-activation",
    },
    "heads_not_divisible": {"tp-heads-not-divisible"},
    "kv_heads_not_divisible": {"tp-heads-not-divisible"},
    "world_size_too_large": {"world-size-too-large"},
    "pp_unsupported": {"pp-unsupported", "pp-unsupported-upgrade"},
    "unrecognized_arguments": {"unrecognized-arguments"},
    "shm_full": {"shm-full"},
    "watchdog_timeout": {"nccl-watchdog-timeout"},
    "nccl_error": {"nccl-error"},
    "engine_core_failed": {"engine-died"},
    "engine_dead": {"engine-died"},
    "worker_died": {"engine-died"},
    "ray_infeasible_request": {"ray-placement-ip-mismatch", "ray-placement-failed"},
    "ray_placement_failed": {"ray-placement-failed"},
    "ray_node_without_gpu": {"ray-node-without-gpu"},
    "nccl_no_socket_interface": {"nccl-no-socket-interface"},
    "ray_node_dead": {"ray-node-dead"},
    "local_world_size_exceeds": {"tp-across-nodes"},
    "engine_start_timeout": {"engine-start-timeout"},
    "gloo_error": {"gloo-wrong-interface"},
    # rules_compat (configuration changes) and rules_catalog
    "dtype_unsupported": {"dtype-unsupported"},
    "kv_cache_dtype_unsupported": {"fp8-e4m3-unsupported", "fp8-e5m2-with-fp8-checkpoint"},
    "quantization_unsupported": {"quantization-unsupported-gpu"},
    "quantization_mismatch": {"quantization-mismatch"},
    "batched_tokens_too_small": {
        "batched-tokens-below-max-model-len",
        "multimodal-item-above-batch",
        "batched-tokens-below-max-num-seqs",
    },
    "prompt_exceeds_kv": {"prompt-exceeds-kv"},
    "ray_shm_small": {"shm-small"},
    "worker_exception": {"engine-died"},
    # rules_catalog_limits (texts found by scripts/catalog_coverage.py)
    "swap_space_too_large": {"swap-space-too-large"},
    "swap_space_large": {"swap-space-too-large"},
    "swap_space_exhausted": {"swap-space-exhausted"},
    "ray_driver_without_gpu": {"ray-driver-without-gpu"},
    "quantized_tp_split": {"quantized-tp-split"},
    "quantized_tp_unsupported": {"quantized-tp-unsupported"},
    "custom_allreduce_failed": {"custom-allreduce-failed"},
    "cupy_nccl_failed": {"cupy-nccl-failed"},
    "mamba_blocks_too_few": {"mamba-blocks-below-max-num-seqs"},
    "cuda_forked_subprocess": {"cuda-forked-subprocess"},
    "kv_scale_unsupported": {"fp8-kv-scale-unsupported"},
    "utilization_out_of_range": {"utilization-out-of-range"},
    "feature_combination_unsupported": {"feature-combination-unsupported"},
    "kv_cache_dtype_refused": {"kv-cache-dtype-refused"},
    "cuda_graph_unsupported": {"cuda-graph-unsupported"},
    # rules_catalog_config (start-up checks added from the source walk, catalog/config_checks.py)
    "batched_tokens_block_size": {
        "batched-tokens-below-block-size",
        "mamba-align-block-above-batch",
    },
    "spec_decode_batch_too_small": {"spec-decode-batch-too-small"},
    "quantization_unknown": {"quantization-unknown"},
    "release_lacks_feature": {"release-lacks-feature"},
    "lora_rank_unsupported": {"lora-rank-unsupported"},
    "model_not_served": {"model-not-served"},
    # rules_catalog_loading
    "remote_code_required": {"remote-code-required"},
    "checkpoint_weights_mismatch": {"checkpoint-weights-mismatch"},
    "environment_problem": {"environment-problem"},
    "mistral_format_mismatch": {"mistral-format-mismatch"},
    # NOT_CONFIG: named, and no knob turned (checked below)
    "vllm_bug": {"vllm-reported-bug"},
    "pp_unsupported_release": {"pp-unsupported-release"},
    "memory_profiling_error": {"memory-profiling-disturbed"},
    "model_unsupported": {"model-unsupported"},
    "pp_layers_not_divisible": {"pp-layers-not-divisible"},
    "graph_capture_failed": {"cuda-graph-capture-failed"},
    "cuda_illegal_memory": {"cuda-illegal-memory"},
    "host_oom": {"host-oom"},
}

DOCTOR_CASES = [
    pytest.param(sig, example, id=f"{sig.id}-{i}")
    for sig in SIGNATURES
    if sig.kind is not None and sig.severity == "error"
    for i, example in enumerate(sig.examples)
]


@pytest.mark.parametrize(("sig", "example"), DOCTOR_CASES)
def test_entry_through_the_doctor(sig, example):
    digest = digest_text(example)
    assert sig.kind in {e.kind for e in digest.facts().failures}
    findings = diagnose(DoctorInputs(log=digest)).findings
    expected = FINDING_FOR_KIND.get(sig.kind)
    if expected is not None:
        assert {f.id for f in findings} & expected, (sig.id, [f.id for f in findings])
    if sig.feeds.startswith(NOT_CONFIG):
        # not a configuration problem: the doctor must not turn a knob for it
        assert not any(f.actions for f in findings), sig.id


# Kinds whose rules read the event (rules_catalog, rules_compat): every real text, with
# every prefix vLLM prints it with, reaches the same finding (warnings too).
EVENT_RULE_KINDS = (
    "dtype_unsupported", "kv_cache_dtype_unsupported", "quantization_unsupported",
    "quantization_mismatch", "batched_tokens_too_small", "prompt_exceeds_kv", "ray_shm_small",
    "worker_exception", "memory_profiling_error", "model_unsupported", "pp_layers_not_divisible",
    "graph_capture_failed", "cuda_illegal_memory", "swap_space_too_large", "swap_space_large",
    "swap_space_exhausted", "ray_driver_without_gpu", "quantized_tp_split", "quantized_tp_unsupported",
    "vllm_bug", "pp_unsupported_release", "custom_allreduce_failed", "cupy_nccl_failed",
    "mamba_blocks_too_few", "cuda_forked_subprocess", "kv_scale_unsupported", "utilization_out_of_range",
    "feature_combination_unsupported", "kv_cache_dtype_refused", "cuda_graph_unsupported",
    "batched_tokens_block_size", "spec_decode_batch_too_small", "quantization_unknown", "release_lacks_feature",
    "lora_rank_unsupported", "model_not_served", "remote_code_required", "checkpoint_weights_mismatch",
    "environment_problem", "mistral_format_mismatch",
)  # fmt: skip
PREFIXED_DOCTOR_CASES = [case for case in CASES if case.values[0].kind in EVENT_RULE_KINDS]


@pytest.mark.parametrize(("sig", "example", "prefix"), PREFIXED_DOCTOR_CASES)
def test_event_rule_kinds_with_every_prefix(sig, example, prefix):
    findings = diagnose(DoctorInputs(log=digest_text(prefix + example))).findings
    assert {f.id for f in findings} & FINDING_FOR_KIND[sig.kind], (sig.id, prefix)
    if sig.feeds.startswith(NOT_CONFIG):
        assert not any(f.actions for f in findings), sig.id


def test_batched_token_refusals_reach_the_doctor():
    """batched_tokens_too_small: each of its three texts has its own rule (rules_compat for
    the first two, rules_catalog for max_num_seqs above the batch)."""
    by_id = {s.id: s for s in SIGNATURES}
    for sig_id, finding in (("batched_tokens_below_max_len", "batched-tokens-below-max-model-len"),
                            ("mm_item_over_batched_tokens", "multimodal-item-above-batch"),
                            ("batched_tokens_below_max_seqs", "batched-tokens-below-max-num-seqs")):  # fmt: skip
        digest = digest_text(by_id[sig_id].examples[0])
        assert finding in {f.id for f in diagnose(DoctorInputs(log=digest)).findings}
