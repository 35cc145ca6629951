"""Which lines are vLLM's own messages (probes.vllm_hint_lines).

Texts: vLLM's own (the release and file beside each), lines of the public threads the
incidents come from (named), and vLLM's logger and request-logger formats (vllm/logger.py,
entrypoints/logger.py: "Received request %s: prompt: %r, ...").
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.probes.vllm_hint_lines import VllmMessage, vllm_messages

# 0.11.0 vllm/platforms/cuda.py:245
MLA_V1 = "MLA attention backends require the V1 engine. Set VLLM_USE_V1=1 to enable them."


def _texts(lines: list[str]) -> list[tuple[str, str]]:
    return [(m.severity, m.text) for m in vllm_messages(lines)]


def test_an_exception_line_behind_a_process_tag_or_bare_is_vllms_error():
    lines = [
        f"(EngineCore_DP0 pid=8884) RuntimeError: {MLA_V1}",
        f"[rank0]: RuntimeError: {MLA_V1}",
        f"RuntimeError: {MLA_V1}",
    ]
    assert _texts(lines) == [("error", MLA_V1)] * 3


def test_a_logger_record_at_warning_or_error_is_read_and_info_is_not():
    # 0.6.3 engine/arg_utils.py:904 (a warning), 0.11.0 platforms/cuda.py (relayed by core.py)
    warning = ("WARNING 10-21 08:10:03 arg_utils.py:904] --enable-prefix-caching is currently not "
               "supported for multimodal models and has been disabled.")  # fmt: skip
    error = f"(EngineCore_DP0 pid=12) ERROR 11-29 11:24:21 [core.py:708] RuntimeError: {MLA_V1}"
    info = "INFO 11-29 11:24:21 [core.py:58] Setting VLLM_WORKER_MULTIPROC_METHOD to 'spawn'."
    found = vllm_messages([warning, error, info])
    assert [(m.severity, m.lineno) for m in found] == [("warning", 1), ("error", 2)]
    assert found[1].text == MLA_V1


def test_a_thread_title_quoting_the_exception_reads_from_the_exception_on():
    # vllm-project/vllm#9531's text as the reporter pasted it (lower-cased), transformers' words
    title = ("[Usage]: valueerror: loading internvl2-8b/ requires you to execute the configuration "
             "file in that repo on your local machine. make sure you have read the code there to "
             "avoid malicious use, then set the option 'trust_remote_code=true' to remove this error.")  # fmt: skip
    (message,) = vllm_messages([title])
    assert message.text.startswith("loading internvl2-8b/ requires you to execute")


def test_the_servers_json_error_body_is_vllms_text():
    # QwenLM/Qwen#87: the 404 body a client printed (entrypoints/openai/serving_engine.py)
    body = ('{"object":"error","message":"The model `Qwen/Qwen1.5-7B-Chat` does not exist.",'
            '"type":"NotFoundError","param":null,"code":404}')  # fmt: skip
    assert _texts([body]) == [("error", "The model `Qwen/Qwen1.5-7B-Chat` does not exist.")]


def test_a_source_line_a_request_logger_line_and_a_persons_words_are_not():
    lines = [
        # the traceback's source line of 0.11.0 platforms/cuda.py:244-246, as Python prints it
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/platforms/cuda.py", line 244, in get_attn_backend_cls',
        "    raise RuntimeError(",
        # vLLM's request logger quoting a client's prompt that holds vLLM's own words
        f"INFO 11-29 11:24:21 [logger.py:41] Received request cmpl-6a3f: prompt: 'RuntimeError: {MLA_V1}', "
        "params: SamplingParams(n=1, temperature=0.7, max_tokens=16), lora_request: None.",
        # a person's words (vllm-project/vllm#1298, batsresearch/bonito#22 titles)
        "[Bug]OOM occurs after setting gpu_memory_utilization to 1.0",
        "How can I set the gpu_memory_utilization?",
    ]  # fmt: skip
    assert vllm_messages(lines) == []


def test_a_message_a_terminal_wrapped_is_read_whole():
    # vllm-project/vllm#7526: the 0.5.4 KV-cache text wrapped by the reporter's terminal
    lines = [
        "ValueError: The model's max seq len (30000) is larger than the maximum number of tokens that can be stored in KV cache (",
        "3984). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
        "Traceback (most recent call last):",
    ]  # fmt: skip
    (message,) = vllm_messages(lines)
    assert message.text.endswith("decreasing `max_model_len` when initializing the engine.")
    assert "stored in KV cache ( 3984). Try increasing" in message.text


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=400), st.none(), st.integers()), max_size=40))
def test_never_raises_and_is_bounded(lines):
    found = vllm_messages(lines)
    assert len(found) <= 64
    assert all(isinstance(m, VllmMessage) and m.severity in ("error", "warning") for m in found)
    assert all(1 <= m.lineno <= len(lines) for m in found)


def test_the_last_messages_of_a_long_log_are_kept():
    """A failure comes at the end, after a running server's warnings (real lines: the 0.6.3
    arg_utils.py warning, repeated, then the 0.11.0 error)."""
    warning = ("WARNING 10-21 08:10:03 arg_utils.py:904] --enable-prefix-caching is currently not "
               "supported for multimodal models and has been disabled.")  # fmt: skip
    found = vllm_messages([warning] * 200 + [f"RuntimeError: {MLA_V1}"])
    assert len(found) == 64 and found[-1] == VllmMessage(
        201, "error", MLA_V1, f"RuntimeError: {MLA_V1}"
    )
