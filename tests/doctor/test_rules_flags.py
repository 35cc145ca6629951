"""headroom/doctor/rules_flags.py: argparse's "unrecognized arguments" (the catalog's
unrecognized_arguments event; vLLM's wording is argparse's) says which flag and what instead."""

from __future__ import annotations

from headroom.doctor import DoctorInputs, diagnose
from headroom.probes.vllm_log import digest_text


def _top(log: str):
    findings = diagnose(DoctorInputs(log=digest_text(log))).findings
    assert findings and findings[0].id == "unrecognized-arguments", [f.id for f in findings]
    return findings[0]


def test_vllm_bench_s_max_concurrency_is_the_engine_s_max_num_seqs():
    """vllm-project/vllm#15609: "api_server.py: error: unrecognized arguments: --max-concurrency
    20", answered with --max-num-seqs 20 (below every release's default of 256 or more)."""
    top = _top("api_server.py: error: unrecognized arguments: --max-concurrency 20")
    assert [(a.knob, a.direction, a.value) for a in top.actions] == [("max_num_seqs", "lower", 20)]


def test_a_removed_flag_is_named_with_the_release_that_dropped_it():
    top = _top("vllm serve: error: unrecognized arguments: --swap-space 4")
    assert not top.actions
    assert "gone by 0.20.2" in " ".join(top.evidence)
    # argparse's abbreviation of a removed flag (datawhalechina/self-llm#459: --enable-reason)
    top = _top("vllm: error: unrecognized arguments: --enable-reason")
    assert "--reasoning-parser" in " ".join(top.evidence)


def test_an_unknown_flag_is_a_typo_or_another_release_s():
    top = _top("vllm: error: unrecognized arguments: --kv-cache-memory-gib 20")
    assert [(a.knob, a.direction, a.value) for a in top.actions] == [
        ("kv_cache_memory_bytes", "set", None)
    ]
    top = _top("vllm: error: unrecognized arguments: --frobnicate")
    assert not top.actions and "typo" in " ".join(top.evidence)
