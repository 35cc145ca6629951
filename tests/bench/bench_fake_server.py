"""A scripted OpenAI-compatible server whose throughput curve is known in advance.

Service model: `slots` requests run at once (like vLLM's max_num_seqs); each running request
gets its first token after `prefill_s` and then one token every `token_s` whatever the batch
size (decode is memory-bound, so a bigger batch costs no extra time per step). Requests
beyond `slots` wait for a free slot. So output throughput is exactly

    T(c) = min(c, slots) / token_s   tokens/s

and the knee of a doubling ramp lands at c = slots. In-process asyncio, 127.0.0.1, free port.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field


@dataclass
class FakeServer:
    slots: int = 4
    token_s: float = 0.01
    prefill_s: float = 0.005
    model: str = "fake/model"
    max_model_len: int | None = 4096
    api_key: str | None = None
    tokens_per_word: int = 1  # how this "tokenizer" counts prompt words
    fail_status: int | None = None  # answer every completion with this status
    seen: list[tuple[str, str, str | None]] = field(default_factory=list)  # method, path, auth
    bodies: list[dict] = field(default_factory=list)
    running: int = 0
    waiting: int = 0
    port: int = 0
    _server: asyncio.base_events.Server | None = None
    _sem: asyncio.Semaphore | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> FakeServer:
        self._sem = asyncio.Semaphore(self.slots)
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc) -> None:
        assert self._server is not None
        self._server.close()
        if hasattr(self._server, "close_clients"):
            self._server.close_clients()
        await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = {}
            for line in lines[1:]:
                if ":" in line:
                    k, v = line.split(":", 1)
                    headers[k.strip().lower()] = v.strip()
            body = b""
            if "content-length" in headers:
                body = await reader.readexactly(int(headers["content-length"]))
            self.seen.append((method, path, headers.get("authorization")))
            await self._route(method, path, headers, body, writer, reader)
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # the client went away or the server is shutting down
        finally:
            try:
                writer.close()
                await writer.wait_closed()
            except (ConnectionError, RuntimeError, asyncio.CancelledError):
                pass

    def _authorised(self, headers: dict) -> bool:
        return self.api_key is None or headers.get("authorization") == f"Bearer {self.api_key}"

    async def _route(self, method, path, headers, body, writer, reader) -> None:
        if path == "/metrics":
            await self._send(writer, 200, self._metrics_text(), "text/plain; version=0.0.4")
        elif path.startswith("/v1/") and not self._authorised(headers):
            await self._send(writer, 401, json.dumps({"error": "Unauthorized"}))
        elif method == "GET" and path == "/v1/models":
            card = {"id": self.model, "object": "model", "max_model_len": self.max_model_len}
            await self._send(writer, 200, json.dumps({"object": "list", "data": [card]}))
        elif method == "POST" and path in ("/v1/completions", "/v1/chat/completions"):
            if self.fail_status is not None:
                await self._send(
                    writer, self.fail_status, json.dumps({"error": {"message": "boom"}})
                )
                return
            await self._stream(
                writer, reader, json.loads(body), chat=path.endswith("chat/completions")
            )
        else:
            await self._send(writer, 404, json.dumps({"error": "not found"}))

    async def _send(self, writer, status: int, text: str, ctype: str = "application/json") -> None:
        data = text.encode()
        writer.write(
            f"HTTP/1.1 {status} X\r\nContent-Type: {ctype}\r\nContent-Length: {len(data)}\r\n"
            "Connection: close\r\n\r\n".encode()
            + data
        )
        await writer.drain()

    async def _stream(self, writer, reader, request: dict, chat: bool) -> None:
        self.bodies.append(request)
        n = int(request["max_tokens"])
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
        )
        await writer.drain()
        assert self._sem is not None
        self.waiting += 1
        async with self._sem:
            self.waiting -= 1
            self.running += 1
            try:
                await asyncio.sleep(self.prefill_s)
                if chat:
                    await self._event(
                        writer, {"choices": [{"delta": {"role": "assistant", "content": ""}}]}
                    )
                for i in range(n):
                    if i:
                        await asyncio.sleep(self.token_s)
                    if writer.is_closing() or reader.at_eof():
                        return  # the client aborted: free the slot, as vLLM does
                    choice = {"delta": {"content": " tok"}} if chat else {"text": " tok"}
                    choice["finish_reason"] = "length" if i == n - 1 else None
                    await self._event(writer, {"choices": [choice]})
                prompt = request.get("prompt") or request["messages"][0]["content"]
                usage = {
                    "prompt_tokens": len(prompt.split()) * self.tokens_per_word,
                    "completion_tokens": n,
                }
                await self._event(writer, {"choices": [], "usage": usage})
                writer.write(b"data: [DONE]\n\n")
                await writer.drain()
            finally:
                self.running -= 1

    async def _event(self, writer, payload: dict) -> None:
        writer.write(b"data: " + json.dumps(payload).encode() + b"\n\n")
        await writer.drain()

    def _metrics_text(self) -> str:
        labels = f'{{engine="0",model_name="{self.model}"}}'
        return (
            "# TYPE vllm:num_requests_running gauge\n"
            f"vllm:num_requests_running{labels} {float(self.running)}\n"
            "# TYPE vllm:num_requests_waiting gauge\n"
            f"vllm:num_requests_waiting{labels} {float(self.waiting)}\n"
            "# TYPE vllm:kv_cache_usage_perc gauge\n"
            f"vllm:kv_cache_usage_perc{labels} {self.running / self.slots}\n"
            "# TYPE vllm:num_preemptions counter\n"
            f"vllm:num_preemptions_total{labels} 0.0\n"
        )
