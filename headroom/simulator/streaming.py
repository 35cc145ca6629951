"""Streaming responses (`"stream": true`) in vLLM's OpenAI-compatible SSE shapes."""

from __future__ import annotations

import json

from headroom.simulator.serving import Runtime

WORDS = (
    "the",
    " cache",
    " holds",
    " every",
    " token",
    " of",
    " context",
    " and",
    " grows",
    " with",
    " each",
    " step",
    ".",
    " Blocks",
    " are",
    " sixteen",
    " tokens",
    " long",
    ",",
)


async def stream_sse(
    runtime: Runtime,
    chat,
    rid,
    created,
    model,
    sim_req,
    queue,
    writer,
    include_usage,
    prompt_tokens,
) -> int:
    """Server-sent events with chunked transfer encoding, like vLLM's streaming responses:
    one chunk per token, the finish reason on the last, an optional usage chunk, [DONE]."""
    head = (
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
        "transfer-encoding: chunked\r\nserver: uvicorn\r\n\r\n"
    )
    writer.write(head.encode())
    obj = "chat.completion.chunk" if chat else "text_completion"

    async def send(payload: str) -> None:
        data = f"data: {payload}\n\n".encode()
        writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        await writer.drain()

    def chunk(text: str | None, reason: str | None, first: bool = False) -> str:
        if chat:
            delta = (
                {"role": "assistant", "content": ""}
                if first
                else ({"content": text} if text is not None else {})
            )
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": reason}
        else:
            choice = {
                "index": 0,
                "text": text or "",
                "logprobs": None,
                "finish_reason": reason,
                "stop_reason": None,
            }
        return json.dumps(
            {"id": rid, "object": obj, "created": created, "model": model, "choices": [choice]}
        )

    if chat:
        await send(chunk(None, None, first=True))
    produced = 0
    try:
        while True:
            n, done = await queue.get()
            if n is None:  # the engine died mid-stream: the connection drops, as in vLLM
                raise ConnectionError("engine dead")
            for _ in range(n):
                word = WORDS[produced % len(WORDS)]
                produced += 1
                last = done and _ == n - 1
                await send(chunk(word, (sim_req.finish_reason or "length") if last else None))
            if done:
                if n == 0:
                    await send(chunk("", sim_req.finish_reason or "length"))
                break
        if include_usage:
            await send(
                json.dumps(
                    {
                        "id": rid,
                        "object": obj,
                        "created": created,
                        "model": model,
                        "choices": [],
                        "usage": {
                            "prompt_tokens": prompt_tokens,
                            "total_tokens": prompt_tokens + produced,
                            "completion_tokens": produced,
                        },
                    }
                )
            )
        await send("[DONE]")
        writer.write(b"0\r\n\r\n")
        await writer.drain()
    except ConnectionError:
        runtime.abort(sim_req)
        return -1
    return 200
