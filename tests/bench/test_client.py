"""The streaming reader meets whatever a server sends: it never raises, and it counts tokens
the way vLLM streams them (one content chunk per token, a closing usage chunk)."""

from __future__ import annotations

import json

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.bench.client import OpenAIClient
from headroom.bench.stats import RequestResult


def _client(endpoint: str = "completions") -> OpenAIClient:
    return OpenAIClient("http://127.0.0.1:1", httpx.AsyncClient(), endpoint=endpoint)


def _feed(client: OpenAIClient, lines: list[str]) -> RequestResult:
    result = RequestResult(started_at=0.0)
    for line in lines:
        if not client._take_line(line, result):
            break
    return result


def test_completion_stream_like_vllm() -> None:
    chunks = [{"choices": [{"text": t, "finish_reason": None}]} for t in ("a", "b", "")]
    chunks.append({"choices": [{"text": "", "finish_reason": "length"}]})
    chunks.append({"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3}})
    lines = [f"data: {json.dumps(c)}" for c in chunks] + ["data: [DONE]", "data: ignored"]
    result = _feed(_client(), lines)
    # An empty text chunk mid-stream is still a token (a partial UTF-8 sequence held back);
    # the closing empty chunk with a finish_reason is not.
    assert len(result.token_times) == 3
    assert result.output_tokens == 3 and result.prompt_tokens == 7
    assert result.first_token_at is not None and result.error is None


def test_chat_stream_skips_the_role_chunk() -> None:
    chunks = [
        {"choices": [{"delta": {"role": "assistant", "content": ""}}]},
        {"choices": [{"delta": {"content": "hi"}}]},
        {"choices": [{"delta": {"content": " there"}, "finish_reason": "length"}]},
    ]
    result = _feed(_client("chat"), [f"data: {json.dumps(c)}" for c in chunks])
    assert len(result.token_times) == 2


def test_error_event_ends_the_stream_with_its_message() -> None:
    result = _feed(_client(), ['data: {"error": {"message": "engine dead"}}', "data: {}"])
    assert result.error == "stream error: engine dead"


def test_request_body_asks_for_exact_lengths_and_no_key_in_it() -> None:
    import random

    from headroom.bench.workload import RequestShape

    client = _client()
    client.api_key = "sk-x"
    body = client._payload("m", RequestShape(50, 20), random.Random(0))
    assert body["max_tokens"] == 20 and body["ignore_eos"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert "sk-x" not in json.dumps(body)
    assert client._headers() == {"Authorization": "Bearer sk-x"}
    assert "sk-x" not in repr(client)


@settings(deadline=None, max_examples=60)  # a shared 2-core machine: timing says nothing here
@given(
    st.lists(
        st.one_of(
            st.text(max_size=80),
            st.builds(lambda s: "data: " + s, st.text(max_size=80)),
            st.builds(
                lambda v: "data: " + json.dumps(v),
                st.recursive(
                    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
                    lambda inner: (
                        st.lists(inner, max_size=3)
                        | st.dictionaries(
                            st.sampled_from(
                                [
                                    "choices",
                                    "usage",
                                    "text",
                                    "delta",
                                    "content",
                                    "error",
                                    "completion_tokens",
                                    "prompt_tokens",
                                    "finish_reason",
                                    "role",
                                ]
                            ),
                            inner,
                            max_size=4,
                        )
                    ),
                    max_leaves=12,
                ),
            ),
        ),
        max_size=10,
    ),
    st.sampled_from(["completions", "chat"]),
)
def test_any_stream_never_raises(lines: list[str], endpoint: str) -> None:
    result = _feed(_client(endpoint), lines)
    assert result.output_tokens >= 0
    assert result.prompt_tokens is None or result.prompt_tokens >= 0
    assert len(result.token_times) <= len(lines)


async def test_calibration_uses_usage_even_when_the_one_token_is_empty() -> None:
    import random

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        words = len(body["prompt"].split())
        lines = [
            {"choices": [{"text": "", "finish_reason": "length"}]},
            {"choices": [], "usage": {"prompt_tokens": 3 * words, "completion_tokens": 1}},
        ]
        text = "".join(f"data: {json.dumps(c)}\n\n" for c in lines) + "data: [DONE]\n\n"
        return httpx.Response(200, text=text, headers={"content-type": "text/event-stream"})

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        client = OpenAIClient("http://test", http)
        ratio = await client.calibrate("m", random.Random(0))
    assert ratio == pytest.approx(3.0, rel=0.05)
