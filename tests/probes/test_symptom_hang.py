"""The communication-hang reader: where a multi-GPU start's log stops, and hangs said in words.

The logs are tests/fixtures/hangs (see its SOURCES.md): real starts, cut after one of their
lines where a test stands for a start that stopped there. The sentences are issue titles of
public threads (named beside each)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.probes.symptom_hang import comm_stall, hang_words, words_of_line
from headroom.probes.vllm_log import digest_text

HANGS = Path(__file__).resolve().parents[1] / "fixtures" / "hangs"


def _lines(name: str) -> list[str]:
    return (HANGS / name).read_text().splitlines()


def _cut_after(lines: list[str], text: str) -> list[str]:
    """The log up to and including the first line holding `text` (a start that stopped there)."""
    index = next(i for i, line in enumerate(lines) if text in line)
    return lines[: index + 1]


def test_a_log_that_stops_in_nccls_bootstrap_is_a_stall_of_two_ranks():
    stall = comm_stall(_lines("vllm-5484-nccl-init-hang-pp2.log"))
    assert stall is not None and stall.stage == "nccl" and stall.ranks == 2
    assert "NCCL INFO" in stall.lines[-1]
    assert not stall.custom_allreduce_off


def test_a_start_that_went_on_to_load_weights_is_no_stall():
    assert comm_stall(_lines("blog-0.6-tp2-start-past-weights.log")) is None
    assert comm_stall(_lines("report-v1-tp2-rtx3090-start.log")) is None


@pytest.mark.parametrize(
    ("name", "cut", "stage", "ranks"),
    [
        # V0 0.6: stopped in the custom all-reduce's P2P test (#6895, #8735 say "stuck at")
        ("blog-0.6-tp2-start-past-weights.log", "reading GPU P2P access cache", "p2p_check", 2),
        # V0 0.6: stopped right after the worker processes said they were ready
        ("blog-0.6-tp2-start-past-weights.log", "Worker ready; awaiting tasks", "workers", 2),
        # V0 0.6: in ncclCommInitRank, after pynccl named its NCCL
        ("blog-0.6-tp2-start-past-weights.log", "vLLM is using nccl==2.20.5", "nccl", 2),
        # V1: after the all-reduce backends were chosen, before the groups were ready
        ("report-v1-tp2-rtx3090-start.log", "for group 'ep:0'", "nccl", 2),
    ],
)
def test_a_start_cut_in_its_communication_set_up_is_a_stall(name, cut, stage, ranks):
    stall = comm_stall(_cut_after(_lines(name), cut))
    assert stall is not None and stall.stage == stage and stall.ranks == ranks


def test_the_parallel_groups_ready_line_ends_the_set_up():
    """After "rank R in world size N is assigned as ..." communication is up: a start that
    stops there hangs in model loading, not in NCCL."""
    lines = _cut_after(_lines("report-v1-tp2-rtx3090-start.log"), "is assigned as DP rank")
    assert comm_stall(lines) is None


def test_v1s_broadcast_wait_is_the_hangs_symptom_not_a_stage():
    # the wait line of vllm-facts.md (shm_broadcast.py), as a stuck V1 start prints it
    wait = (
        "(EngineCore_DP0 pid=8884) WARNING 11-29 11:24:21 [shm_broadcast.py:466] No available "
        "shared memory broadcast block found in 60 seconds. This typically happens when some "
        "processes are hanging or doing some time-consuming work (e.g. compilation, weight/kv "
        "cache quantization)."
    )
    lines = _cut_after(_lines("report-v1-tp2-rtx3090-start.log"), "for group 'tp:0'")
    stall = comm_stall([*lines, wait, wait])
    assert stall is not None and stall.stage == "nccl"


def test_an_error_after_the_set_up_lines_is_no_stall():
    lines = _lines("vllm-5484-nccl-init-hang-pp2.log")
    error = (
        "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)"
    )
    assert comm_stall([*lines, error]) is None


def test_ncclss_debug_lines_alone_are_not_a_vllm_start():
    """A paste of NCCL_DEBUG=INFO output without any vLLM line (shared fixtures/nccl) says
    nothing of where vLLM stopped."""
    nccl_only = [line for line in _lines("vllm-5484-nccl-init-hang-pp2.log") if "NCCL" in line]
    nccl_only = [line for line in nccl_only if "utils.py" not in line and "pynccl.py" not in line]
    assert nccl_only and comm_stall(nccl_only) is None


def test_the_catalog_reads_the_set_up_lines_as_distributed_init_events():
    digest = digest_text((HANGS / "blog-0.6-tp2-start-past-weights.log").read_text())
    kinds = [e.signature for e in digest.events if e.kind == "distributed_init"]
    assert kinds[:4] == [
        "mp_worker_ready",
        "nccl_library_found",
        "nccl_library_found",
        "pynccl_version",
    ]
    assert "p2p_access_cache" in kinds and "message_queue_handle" in kinds


# --- words ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("title", "tp", "custom", "gpus"),
    [
        ("vLLM Distributed Inference stuck when using multi -GPU", None, False, ()),  # vllm #2466
        ("[Bug]: when tensor-parallel-size>1，Stuck", 1, False, ()),  # vllm #8087
        ("[Bug]: NCCL hangs and causes timeout", None, False, ()),  # vllm #5484
        ("[Usage]: tensor-parallel-size=2，The program just kept hanging", 2, False, ()),  # #13273
        (
            "[Bug]: Engine startup deadlocks on V100 (SM70, TP=2): custom_all_reduce kernel spins "
            "forever (workaround: --disable-custom-all-reduce)",  # 1Cat-vLLM #652
            2,
            True,
            ("V100",),
        ),
        ("[Bug]: vLLM 0.5.1 tensor parallel 2 hang", 2, False, ()),  # vllm #6370
        ("[Bug]: 2 nodes serving hanging", None, False, ()),  # vllm #8447
    ],
)
def test_a_multi_gpu_hang_said_in_a_title(title, tp, custom, gpus):
    words = words_of_line(title)
    assert words is not None and words.multi_gpu and not words.other_stage
    assert words.tp == tp and words.custom_allreduce is custom and words.gpu_tokens == gpus


@pytest.mark.parametrize(
    "text",
    [
        "Something is blocked where tensor_parallel_size > 1",  # vllm #1320: no hang word
        "[Bugfix] Fix hang when tensor_parallel_size > 1",  # a patch, not a report
        "set NCCL_P2P_DISABLE=1 to avoid hangs with TP=2",  # advice
        "Started a local Ray instance.",  # a log line, no symptom
        "torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for clients.",
    ],
)
def test_no_hang_report(text):
    found = words_of_line(text)
    assert found is None or not found.multi_gpu


def test_a_hang_while_loading_is_another_stage():
    # vllm #6893-style wording of a hang in weight loading (the blog's own title)
    words = words_of_line("tensor-parallel-size >= 2: stuck loading the weights forever")
    assert words is not None and words.other_stage


def test_words_yield_to_a_real_error_line():
    from headroom.probes.vllm_log import classify_line

    error = classify_line("RuntimeError: NCCL error: unhandled system error")
    assert error is not None
    assert hang_words(["[Bug]: NCCL hangs and causes timeout"], [error]) is None
    assert hang_words(["[Bug]: NCCL hangs and causes timeout"]) is not None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=300), st.none(), st.integers()), max_size=30))
def test_the_readers_never_raise_on_any_input(lines):
    stall = comm_stall(lines)
    assert stall is None or (
        stall.stage in ("workers", "nccl", "p2p_check", "graph_capture") and stall.ranks >= 0
    )
    words = hang_words(lines)
    assert words is None or isinstance(words.text, str)
    for line in lines:
        found = words_of_line(line)
        assert found is None or isinstance(found.multi_gpu, bool)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="NCL INFOWARN[]0123456789 stuckhang:=>-_/", max_size=200))
def test_the_readers_never_raise_on_log_like_noise(text):
    lines = text.split(" ")
    comm_stall(lines)
    hang_words(lines)


def test_a_start_whose_last_lines_are_graph_capture_is_a_capture_stall():
    stall = comm_stall(_lines("lmcache-503-v0-graph-capture-lines.log"))
    assert stall is not None and stall.stage == "graph_capture" and stall.ranks == 2
