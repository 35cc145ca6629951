"""The doctor's own readers of vLLM/PyTorch message numbers: real lines give the right
numbers, and any text at all gives a dict (never an exception)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from headroom.doctor import log_events as LE

OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 418.00 MiB. GPU 0 has a total "
    "capacity of 23.69 GiB of which 193.25 MiB is free. Process 1254 has 730.00 MiB memory in use. "
    "Process 2167142 has 14.90 GiB memory in use."
)  # QwenLM/Qwen3-VL #1224
SEQ = (
    "ValueError: To serve at least one request with the models's max seq len (262144), (24.0 GiB KV "
    "cache is needed, which is larger than the available KV cache memory (3.18 GiB). Based on the "
    "available memory, the estimated maximum model length is 34736."
)  # vllm #34076


def test_real_lines_give_their_numbers():
    oom = LE.oom_numbers(OOM)
    assert oom["tried_gib"] == 418 / 1024 and oom["total_gib"] == 23.69
    assert oom["process_count"] == 2 and oom["largest_process_gib"] == 14.90
    seq = LE.max_seq_len_numbers(SEQ)
    assert seq == {
        "max_model_len": 262144,
        "needed_gib": 24.0,
        "available_gib": 3.18,
        "estimated_max_len": 34736,
    }
    line = "(APIServer pid=1) INFO [utils.py:286] non-default args: {'model': 'm', 'kv_cache_memory_bytes': 1000000}"
    assert LE.non_default_args(line) == {"model": "m", "kv_cache_memory_bytes": 1000000}
    assert LE.non_default_args("non-default args: {broken") is None


@given(st.text(max_size=400))
def test_any_text_is_read_without_raising(text):
    for reader in (LE.oom_numbers, LE.max_seq_len_numbers, LE.free_memory_numbers):
        assert isinstance(reader(text), dict)
    LE.non_default_args("non-default args: " + text)
    LE.classify(text)
    assert LE.weights_gib(text) is None or LE.weights_gib(text) >= 0


def test_mangled_numbers_are_skipped_not_raised():
    assert "tried_gib" not in LE.oom_numbers(
        "CUDA out of memory. Tried to allocate . GiB. Process 1 has , GiB memory in use"
    )
    assert LE.max_seq_len_numbers(
        "max seq len (8), (. GiB KV cache is needed, available KV cache memory (.. GiB)"
    ) == {"max_model_len": 8}
    bad = "Free memory on device (./0 GiB) on startup is less than desired GPU memory utilization (0.9, 1 GiB)"
    assert LE.free_memory_numbers(bad) == {}
    assert LE.weights_gib("Model loading took . GiB") is None
