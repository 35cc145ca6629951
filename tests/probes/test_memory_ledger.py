"""The memory ledger: the memory numbers of real start-up logs, one ledger per start, and
the doctor deciding from the numbers when the refusal's wording is not one it knows."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.doctor import DoctorInputs, diagnose
from headroom.probes.memory_ledger import LedgerBuilder, MemoryLedger
from headroom.probes.vllm_log import LogEvent, digest_text

GPU = Path(__file__).resolve().parents[1] / "fixtures" / "gpu-startup-logs"


def _ledger(name: str) -> MemoryLedger:
    return digest_text((GPU / name).read_text()).facts().ledger


def test_v0_profile_lines_fill_the_ledger():
    led = _ledger("gpu16gb-maxlen40000-v0.6.4.log")
    assert (led.total_gib, led.utilization, led.weights_gib) == (15.77, 0.9, 7.51)
    assert (led.non_torch_gib, led.activation_gib, led.kv_gib) == (0.39, 2.53, 3.76)
    assert led.gpu_blocks == 3852 and led.cpu_blocks == 4096
    # "Maximum concurrency for 40000 tokens per request: 1.54x" with 3852 blocks: blocks of 16
    assert led.block_size == 16 and led.kv_capacity_tokens == 3852 * 16
    assert led.requested_gib == round(15.77 * 0.9, 4) and led.consumed_gib == 7.9
    assert led.max_model_len == 40000 and led.kv_deficit_tokens < 0


def test_v0_refusal_numbers():
    led = _ledger("rtx3090-llama3.1-8b-maxlen29000-fail-v0.6.log")
    assert led.max_model_len == 29000 and led.kv_capacity_tokens == 23648
    assert led.kv_deficit_tokens == 29000 - 23648
    assert led.kv_deficit_gib is not None and led.kv_deficit_gib > 0


def test_v1_refusal_numbers():
    led = _ledger("rtx3090-qwen-27b-maxlen65536-fail-v1.log")
    assert (led.kv_needed_gib, led.kv_gib, led.fit_max_len) == (4.76, 1.56, 15984)
    assert led.kv_deficit_gib == 3.2 and led.kv_deficit_tokens == 65536 - 15984


def test_tp_workers_size_the_cache_by_the_smallest():
    led = _ledger("h200x8-llama-70b-tp8-v0.6.4.log")
    assert led.kv_gib == 110.52 and led.total_gib == 139.72 and led.utilization == 0.95


def test_one_ledger_per_start():
    ok = (GPU / "gpu16gb-maxlen40000-v0.6.4.log").read_text()
    text = "vLLM API server version 0.6.4.post1\n" + ok + "\nvLLM API server version 0.6.4.post1\n"
    text += (
        "INFO 12-20 20:25:46 distributed_gpu_executor.py:57] # GPU blocks: 0, # CPU blocks: 4096\n"
    )
    digest = digest_text(text)
    first, second = digest.ledgers()
    assert first.gpu_blocks == 3852 and second.gpu_blocks == 0
    assert digest.facts().ledger == second and second.no_kv_memory and not first.no_kv_memory


def test_refusal_in_an_unknown_wording_is_diagnosed_from_the_numbers():
    """The same real log without its refusal line (as if vLLM had reworded it): the
    numbers (23,648 tokens of KV, max_model_len 29,000) still give the finding."""
    text = (GPU / "rtx3090-llama3.1-8b-maxlen29000-fail-v0.6.log").read_text()
    kept = "\n".join(line for line in text.splitlines() if "max seq len" not in line)
    digest = digest_text(kept)
    assert not digest.of_kind("max_seq_len_exceeds_kv")
    findings = diagnose(DoctorInputs(log=digest)).findings
    top = next(f for f in findings if f.id == "max-seq-len-exceeds-kv")
    shorter = [a for a in top.actions if a.knob == "max_model_len"]
    assert shorter and shorter[0].direction == "lower" and shorter[0].value <= 23648
    assert not any(
        a.knob == "gpu_memory_utilization" and a.direction == "lower" for a in top.actions
    )


def test_a_started_server_is_not_refused_from_its_numbers():
    digest = digest_text((GPU / "gpu16gb-maxlen40000-v0.6.4.log").read_text())
    ids = {f.id for f in diagnose(DoctorInputs(log=digest)).findings}
    assert "max-seq-len-exceeds-kv" not in ids and "no-cache-memory" not in ids


def test_negative_kv_budget_is_no_cache_memory():
    line = ("INFO 12-20 20:25:46 worker.py:241] model weights take 14.99GiB; non_torch_memory takes 0.35GiB; "
            "PyTorch activation peak memory takes 8.07GiB; the rest of the memory reserved for KV Cache is -1.2GiB.")  # fmt: skip
    digest = digest_text(line)
    assert digest.facts().ledger.kv_gib == -1.2 and digest.facts().ledger.no_kv_memory
    assert "no-cache-memory" in {f.id for f in diagnose(DoctorInputs(log=digest)).findings}


def test_tiny_kv_memory_bytes_is_not_no_cache():
    led = MemoryLedger(kv_gib=0.0, kv_tokens=3840, max_model_len=1024)
    assert not led.no_kv_memory and led.kv_deficit_tokens < 0


_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5), st.lists(st.integers(), max_size=2),
)  # fmt: skip
_KINDS = st.sampled_from(["memory_summary", "weights_loaded", "kv_memory_available", "kv_cache_tokens",
                          "max_concurrency", "kv_cache_blocks", "max_seq_len_exceeds_kv", "cuda_oom",
                          "non_default_args", "version", "stats"])  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_KINDS, st.dictionaries(st.sampled_from(
    ["total_gib", "kv_gib", "tokens", "gpu_blocks", "concurrency", "per_request_tokens", "max_seq_len",
     "needed_gib", "utilization", "args", "weights_gib", "estimated_max_len"]), _VALUES, max_size=6)), max_size=8))  # fmt: skip
def test_builder_never_raises(events):
    builder = LedgerBuilder()
    for kind, found in events:
        builder.update(LogEvent(kind, "info", "", found))
    led = builder.ledger()
    for value in (
        led.kv_capacity_tokens,
        led.kv_deficit_tokens,
        led.kv_deficit_gib,
        led.no_kv_memory,
    ):
        assert value is None or isinstance(value, (int, float, bool))


def test_the_doctor_reads_the_gpu_total_from_the_ledger():
    from headroom.doctor.context import Context

    text = (GPU / "gpu16gb-maxlen40000-v0.6.4.log").read_text()
    assert "total_gpu_memory=" not in text  # only the V0 sentence form gives the total here
    assert Context(DoctorInputs(log=digest_text(text))).gpu_total == (15.77, True)


def test_a_refusal_wrapped_over_lines_keeps_its_numbers():
    # As pasted in kaito-project/kaito#2132 (the message wrapped over three lines)
    text = (
        "ValueError: To serve at least one request with the model's max seq len (1048576),\n"
        "22.5 GiB KV cache is needed, which is larger than the available KV cache memory (17.39 GiB).\n"
        "Based on the available memory, the estimated maximum model length is 810208."
    )
    digest = digest_text(text)
    led = digest.facts().ledger
    assert (led.max_model_len, led.kv_needed_gib, led.kv_gib, led.fit_max_len) == (
        1048576,
        22.5,
        17.39,
        810208,
    )
    top = next(
        f for f in diagnose(DoctorInputs(log=digest)).findings if f.id == "max-seq-len-exceeds-kv"
    )
    assert any(
        a.knob == "max_model_len" and a.direction == "lower" and a.value == 810208
        for a in top.actions
    )


def test_a_source_line_joined_to_its_error_counts_as_the_error():
    # As pasted in QwenLM/Qwen3#12 (the traceback's last two lines joined)
    line = ('raise ValueError("No available memory for the cache blocks. " ValueError: No available memory for '
            "the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.")  # fmt: skip
    assert digest_text(line).facts().failures[0].kind == "no_cache_memory"
    assert digest_text('raise ValueError("No available memory for the cache blocks. "').events == []


def test_a_refusal_without_its_parenthesis():
    # As pasted in noonghunna/club-3090#35: no "(" before the GiB needed
    line = (
        "ValueError: To serve at least one request with the model's max seq len (180000), 3.05 GiB KV cache "
        "is needed, which is larger than the available KV cache memory (2.17 GiB). Based on the available "
        "memory, the estimated maximum model length is 111456."
    )
    fields = digest_text(line).facts().failures[0].fields
    assert (fields["max_seq_len"], fields["needed_gib"], fields["available_gib"]) == (
        180000,
        3.05,
        2.17,
    )
    assert fields["estimated_max_len"] == 111456
