"""Issue 14 item 2: lines are events by their structure (vLLM's prefix and the file that
prints the text, from the catalog), never by a phrase a client put in a prompt."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.probes.vllm_log import LogDigest, classify_line, digest_text
from headroom.probes.vllm_log_patterns import split_prefix

ATTACK = "RuntimeError: Engine core initialization failed. See root cause above."
# vLLM's request logger, 0.4-0.11 (entrypoints/logger.py: "Received request %s: prompt: %r, ...")
V0_REQUEST = "INFO 08-23 08:25:25 logger.py:36] Received request cmpl-1: prompt: {!r}, params: SamplingParams(n=1)"
# 0.33 (entrypoints/serve/utils/request_logger.py), DEBUG details and the JSON body
V1_DETAILS = "(APIServer pid=7) DEBUG 11-29 11:24:21 [request_logger.py:56] Request chatcmpl-1 details: prompt: {!r}, prompt_token_ids: [1]"
V1_BODY = '(APIServer pid=7) INFO 11-29 11:24:21 [request_logger.py:85] Request chatcmpl-1 JSON body: {{"prompt":"{}"}}'


def test_prompt_with_engine_failure_phrase_is_no_event():
    lines = [V0_REQUEST.format(ATTACK), V1_DETAILS.format(ATTACK), V1_BODY.format(ATTACK),
             V0_REQUEST.format("x\n" + ATTACK)]  # fmt: skip
    for line in lines:
        assert classify_line(line) is None, line
    facts = digest_text("\n".join(lines)).facts()
    assert not facts.engine_dead and facts.failures == ()


def test_the_same_phrase_printed_by_vllm_is_an_event():
    for line in (ATTACK, "(APIServer pid=7) " + ATTACK, "[rank0]: " + ATTACK,
                 "(APIServer pid=7) ERROR 11-29 11:24:21 [launcher.py:99] " + ATTACK):  # fmt: skip
        event = classify_line(line)
        assert event is not None and event.kind == "engine_core_failed", line


def test_a_logger_text_counts_only_from_the_file_that_prints_it():
    text = "Available KV cache memory: 99.0 GiB"
    real = classify_line("(Worker_TP0 pid=3) INFO 11-29 11:24:21 [gpu_worker.py:232] " + text)
    assert real is not None and real.fields["kv_gib"] == 99.0
    assert (
        classify_line("(APIServer pid=3) INFO 11-29 11:24:21 [serving_chat.py:232] " + text) is None
    )
    # no logger prefix at all (a paste, or a V0 continuation line): the text decides
    assert classify_line(text).kind == "kv_memory_available"


def test_quoted_text_inside_another_message_is_not_the_event():
    line = "(APIServer pid=3) ERROR 11-29 11:24:21 [serving_chat.py:10] Error in request: 'CUDA out of memory'"
    event = classify_line(line)
    assert event is None or event.kind != "cuda_oom"
    # an apostrophe is not a quote
    own = classify_line("ValueError: To serve at least one request with the model's max seq len (8192), "
                        "(2.0 GiB KV cache is needed, which is larger than the available KV cache memory (1.0 GiB).")  # fmt: skip
    assert own.kind == "max_seq_len_exceeds_kv"


def test_tracebacks_and_bare_exceptions_still_count():
    assert classify_line("Traceback (most recent call last):").kind == "traceback"
    assert (
        classify_line(
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
        ).kind
        == "cuda_oom"
    )
    assert (
        classify_line("[rank0]: ValueError: No available memory for the cache blocks.").kind
        == "no_cache_memory"
    )


def test_prefix_forms():
    for line, proc in (
        ("(VllmWorker rank=1 pid=9) INFO 04-30 12:00:00 [gpu_worker.py:58] x", "VllmWorker rank=1"),
        ("(RayWorkerWrapper pid=9, ip=10.0.0.2) INFO 02-11 07:40:45 model_runner.py:1115] x", "RayWorkerWrapper"),
        ("(LLMRayActor pid=31) INFO 02-11 07:40:45 model_runner.py:1115] x", "LLMRayActor"),
        ("(EngineCore_DP0 pid=8) INFO 11-29 11:24:21 [core.py:133] x", "EngineCore_DP0"),
    ):  # fmt: skip
        parts, message = split_prefix(line)
        assert parts["proc"] == proc and message == "x"
    parts, message = split_prefix("[rank0]: torch.OutOfMemoryError: CUDA out of memory.")
    assert parts is not None and message.startswith("torch.OutOfMemoryError")


def test_ray_repeated_suffix():
    line = ("(RayWorkerWrapper pid=9, ip=10.0.0.2) INFO 02-11 07:40:45 model_runner.py:1115] "
            "Loading model weights took 13.9476 GB [repeated 7x across cluster]")  # fmt: skip
    assert classify_line(line).fields["weights_gib"] == 13.9476


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_no_prompt_makes_an_event(prompt):
    digest = LogDigest()
    for template in (V0_REQUEST, V1_DETAILS):
        assert digest.feed(template.format(ATTACK + prompt)) is None
        assert digest.feed(template.format(prompt)) is None


def test_the_doctor_finds_nothing_in_a_prompt():
    """Rules that read raw lines (regexes of their own) never see a client's quoted text."""
    from headroom.doctor import DoctorInputs, diagnose

    phrases = [
        ATTACK,
        "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0.",
        'ValueError("type fp8e4nv not supported in this architecture.")',
        "Input prompt (5556 tokens) is too long and exceeds limit of 2048",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
    ]
    text = "\n".join(V0_REQUEST.format(p) for p in phrases) + "\n" + V1_DETAILS.format(phrases[1])
    assert diagnose(DoctorInputs(log=text)).findings == ()
    assert diagnose(DoctorInputs(log=digest_text(text))).findings == ()
