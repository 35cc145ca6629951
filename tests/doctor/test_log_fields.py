"""The numbers the doctor's rules read from vLLM/PyTorch messages, as the log reader
(headroom.probes.vllm_log) hands them over in LogEvent.fields: real lines give the right
numbers, and any text at all is read without an exception."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from headroom.probes.vllm_log import classify_line

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
SEQ_V0 = (
    "ValueError: The model's max seq len (20000) is larger than the maximum number of tokens that "
    "can be stored in KV cache (16464). Try increasing `gpu_memory_utilization` or decreasing "
    "`max_model_len` when initializing the engine."
)


def _fields(line: str) -> dict:
    event = classify_line(line)
    assert event is not None, line
    return dict(event.fields)


def test_real_lines_give_their_numbers():
    oom = _fields(OOM)
    assert oom["tried_gib"] == round(418 / 1024, 6) and oom["total_gib"] == 23.69
    assert oom["process_count"] == 2 and oom["largest_process_gib"] == 14.90
    seq = _fields(SEQ)
    assert {k: seq[k] for k in ("needed_gib", "available_gib")} == {
        "needed_gib": 24.0,
        "available_gib": 3.18,
    }
    assert seq["max_seq_len"] == 262144 and seq["estimated_max_len"] == 34736
    assert "kv_tokens" not in seq
    v0 = _fields(SEQ_V0)
    assert v0["max_seq_len"] == 20000 and v0["kv_tokens"] == 16464
    assert "needed_gib" not in v0
    line = "(APIServer pid=1) INFO 11-29 11:11:11 [utils.py:286] non-default args: {'model': 'm', 'kv_cache_memory_bytes': 1000000}"
    assert _fields(line)["args"] == {"model": "m", "kv_cache_memory_bytes": 1000000}
    assert "args" not in _fields("non-default args: {broken")


def test_graph_pools_are_read():
    line = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
        "capacity of 79.19 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this "
        "process has 78.12 GiB memory in use. Of the allocated memory 70.10 GiB is allocated by "
        "PyTorch, with 3.50 GiB allocated in private pools (e.g., CUDA Graphs)"
    )
    assert _fields(line)["graph_pools_gib"] == 3.5


@given(st.text(max_size=400))
def test_any_text_is_read_without_raising(text):
    for line in (text, "CUDA out of memory. " + text, "max seq len (" + text):
        event = classify_line(line)
        if event is not None and "tried_gib" in event.fields:
            assert event.fields["tried_gib"] >= 0
    classify_line("non-default args: " + text)


def test_mangled_numbers_are_skipped_not_raised():
    oom = classify_line(
        "CUDA out of memory. Tried to allocate . GiB. Process 1 has , GiB memory in use"
    )
    assert oom is not None and "tried_gib" not in oom.fields
    seq = classify_line(
        "max seq len (8), (. GiB KV cache is needed, available KV cache memory (.. GiB)"
    )
    assert seq is None or "needed_gib" not in seq.fields
    bad = "Free memory on device (./0 GiB) on startup is less than desired GPU memory utilization (0.9, 1 GiB)"
    free = classify_line(bad)
    assert free is None or "free_gib" not in free.fields
    loaded = classify_line("Model loading took . GiB")
    assert loaded is None or "weights_gib" not in loaded.fields
