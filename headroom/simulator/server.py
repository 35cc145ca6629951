"""A small HTTP/1.1 server on stdlib asyncio with vLLM's OpenAI-compatible routes.

Routes: GET /health, /metrics, /dcgm-metrics (the simulated GPUs as dcgm-exporter shows
them), /version, /v1/models, /load, /ping; POST /v1/completions and
/v1/chat/completions (with `stream`, `stream_options.include_usage`, `max_tokens`,
`ignore_eos`). `--api-key` protects /v1 only, as in vLLM; /metrics and /health stay open.
Prompts given as token-id lists are counted exactly; text is counted at ~4 bytes per token.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import time
import uuid

from headroom.simulator import runtime_death
from headroom.simulator.dcgm import DcgmRenderer
from headroom.simulator.runtime_death import EngineDeath
from headroom.simulator.serving import Runtime
from headroom.simulator.streaming import WORDS, stream_sse

REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    500: "Internal Server Error",
}


def count_text_tokens(text: str) -> int:
    return max(1, math.ceil(len(text.encode("utf-8")) / 4))


def count_prompt(prompt) -> int:
    if isinstance(prompt, list) and prompt and isinstance(prompt[0], int):
        return len(prompt)
    if isinstance(prompt, list) and prompt and isinstance(prompt[0], list):
        return len(prompt[0])
    if isinstance(prompt, list):
        return count_text_tokens(str(prompt[0]) if prompt else "")
    return count_text_tokens(str(prompt or ""))


def natural_length(seed_text: str, cap: int) -> int:
    """Where the 'model' would emit EOS: a stable pseudo-random length, 16..256."""
    digest = hashlib.sha256(seed_text.encode()).digest()
    return max(1, min(cap, 16 + digest[0] % 241))


# With --disable-log-stats vLLM registers no vllm: metrics; /metrics keeps Python's own.
PROCESS_ONLY = (
    "# HELP python_info Python platform information\n# TYPE python_info gauge\n"
    'python_info{implementation="CPython",major="3",minor="11",patchlevel="0",'
    'version="3.11.0"} 1.0\n'
)


class SimServer:
    """Serves one Runtime; `start()` binds, `close()` stops."""

    def __init__(
        self,
        runtime: Runtime,
        served_names: list[str],
        max_model_len: int,
        api_keys: list[str] | None = None,
        access_log: bool = True,
        version: str = "0.33.0",
        root: str = "",
        dcgm: DcgmRenderer | None = None,
        death: EngineDeath | None = None,
    ) -> None:
        self.runtime = runtime
        self.names = served_names
        self.max_model_len = max_model_len
        self.api_keys = [k for k in (api_keys or []) if k]
        self.access_log = access_log
        self.version = version
        self.root = root or served_names[0]
        self.dcgm = dcgm or DcgmRenderer()
        self.server: asyncio.base_events.Server | None = None
        self.in_flight = 0
        self.death = death
        self._waiting: set[asyncio.Queue] = set()  # in-flight requests, told of a death
        if death is not None:
            death.on_death(self._engine_died)

    async def start(self, host: str, port: int) -> None:
        self.server = await asyncio.start_server(self._handle, host or "0.0.0.0", port)

    async def close(self) -> None:
        if self.server:
            self.server.close()
            await self.server.wait_closed()

    # --- HTTP plumbing ------------------------------------------------------------------

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername") or ("127.0.0.1", 0)
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                try:
                    method, target, _ = line.decode("latin-1").split(" ", 2)
                except ValueError:
                    await self._send(writer, 400, {"error": "bad request line"}, keep=False)
                    break
                headers: dict[str, str] = {}
                while True:
                    h = await reader.readline()
                    if h in (b"\r\n", b"\n", b""):
                        break
                    k, _, v = h.decode("latin-1").partition(":")
                    headers[k.strip().lower()] = v.strip()
                body = b""
                length = int(headers.get("content-length", "0") or 0)
                if length:
                    body = await reader.readexactly(length)
                keep = headers.get("connection", "").lower() != "close"
                path = target.split("?", 1)[0]
                status = await self._route(method, path, headers, body, writer, keep)
                if self.access_log:  # uvicorn logs /metrics polls too
                    print(
                        f'INFO:     {peer[0]}:{peer[1]} - "{method} {path} HTTP/1.1" '
                        f"{status} {REASONS.get(status, '')}",
                        flush=True,
                    )
                if not keep or status < 0:
                    break
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            try:
                writer.close()
            except RuntimeError:
                pass

    async def _send(
        self,
        writer,
        status: int,
        payload,
        keep: bool = True,
        content_type: str = "application/json",
    ) -> int:
        data = (
            payload
            if isinstance(payload, bytes)
            else (payload.encode() if isinstance(payload, str) else json.dumps(payload).encode())
        )
        head = (
            f"HTTP/1.1 {status} {REASONS.get(status, '')}\r\ncontent-type: {content_type}\r\n"
            f"content-length: {len(data)}\r\nserver: uvicorn\r\n"
            f"connection: {'keep-alive' if keep else 'close'}\r\n\r\n"
        )
        writer.write(head.encode() + data)
        await writer.drain()
        return status

    @staticmethod
    def _error(message: str, kind: str, code: int, param: str | None = None) -> dict:
        return {"error": {"message": message, "type": kind, "param": param, "code": code}}

    async def _route(self, method, path, headers, body, writer, keep) -> int:
        if path in ("/health", "/ping"):
            # vLLM's /health is 503 once the engine is dead (EngineDeadError).
            status = 503 if self.death is not None and self.death.dead else 200
            return await self._send(writer, status, b"", keep)
        if path == "/metrics":
            return await self._send(
                writer,
                200,
                self.runtime.metrics.render() if self.runtime.log_stats else PROCESS_ONLY,
                keep,
                "text/plain; version=0.0.4; charset=utf-8",
            )
        if path == "/dcgm-metrics":  # what dcgm-exporter would serve on this "host"
            state = self.runtime.last_state or self.runtime.current_state()
            return await self._send(
                writer, 200, self.dcgm.render(state), keep, "text/plain; version=0.0.4"
            )
        if path == "/version":
            return await self._send(writer, 200, {"version": self.version}, keep)
        if path == "/load":
            return await self._send(writer, 200, {"server_load": self.in_flight}, keep)
        if path.startswith("/v1"):
            auth = headers.get("authorization", "")
            if self.api_keys and auth not in {f"Bearer {k}" for k in self.api_keys}:
                return await self._send(writer, 401, {"error": "Unauthorized"}, keep)
        if path == "/v1/models" and method == "GET":
            return await self._send(writer, 200, self._models(), keep)
        if path in ("/v1/completions", "/v1/chat/completions"):
            if method != "POST":
                return await self._send(writer, 405, {"detail": "Method Not Allowed"}, keep)
            try:
                req = json.loads(body or b"{}")
                if not isinstance(req, dict):
                    raise ValueError("body must be a JSON object")
            except ValueError as exc:
                return await self._send(
                    writer,
                    400,
                    self._error(f"Invalid JSON body: {exc}", "BadRequestError", 400),
                    keep,
                )
            if self.death is not None and self.death.request_arrived():
                return await self._dead(writer, keep)
            return await self._generate(path.endswith("chat/completions"), req, writer, keep)
        return await self._send(writer, 404, {"detail": "Not Found"}, keep)

    async def _dead(self, writer, keep: bool) -> int:
        error = self._error(runtime_death.CLIENT_MESSAGE, "InternalServerError", 500)
        return await self._send(writer, 500, error, keep)

    def _engine_died(self) -> None:
        self.runtime.stop()  # no more steps: the engine process is gone
        for queue in self._waiting:
            queue.put_nowait((None, True))  # each waiting request answers 500 (or hangs up)

    def _models(self) -> dict:
        created = int(time.time())
        return {
            "object": "list",
            "data": [
                {
                    "id": name,
                    "object": "model",
                    "created": created,
                    "owned_by": "vllm",
                    "root": self.root,
                    "parent": None,
                    "max_model_len": self.max_model_len,
                    "permission": [
                        {
                            "id": f"modelperm-{uuid.uuid4().hex[:16]}",
                            "object": "model_permission",
                            "created": created,
                            "allow_create_engine": False,
                            "allow_sampling": True,
                            "allow_logprobs": True,
                            "allow_search_indices": False,
                            "allow_view": True,
                            "allow_fine_tuning": False,
                            "organization": "*",
                            "group": None,
                            "is_blocking": False,
                        }
                    ],
                }
                for name in self.names
            ],
        }

    # --- generation ---------------------------------------------------------------------

    async def _generate(self, chat: bool, req: dict, writer, keep: bool) -> int:
        model = req.get("model") or self.names[0]
        if model not in self.names:
            return await self._send(
                writer,
                404,
                self._error(f"The model `{model}` does not exist.", "NotFoundError", 404, "model"),
                keep,
            )
        if chat:
            messages = req.get("messages") or []
            text = "".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))
            prompt_tokens = count_text_tokens(text) + 4 * max(1, len(messages))
        else:
            prompt_tokens = count_prompt(req.get("prompt", ""))
            text = json.dumps(req.get("prompt", ""))[:2000]
        max_tokens = req.get("max_tokens") or req.get("max_completion_tokens")
        room = self.max_model_len - prompt_tokens
        if max_tokens is None:
            max_tokens = room
        if not isinstance(max_tokens, int) or max_tokens < 1 or room < max_tokens:
            return await self._send(
                writer,
                400,
                self._error(
                    f"This model's maximum context length is {self.max_model_len} tokens. However, "
                    f"you requested {prompt_tokens + (max_tokens or 0)} tokens ({prompt_tokens} in "
                    f"the messages, {max_tokens} in the completion). Please reduce the length of "
                    "the messages or completion.",
                    "BadRequestError",
                    400,
                ),
                keep,
            )
        eos_at = None if req.get("ignore_eos") else natural_length(text, max_tokens)
        stream = bool(req.get("stream"))
        include_usage = bool((req.get("stream_options") or {}).get("include_usage"))
        queue: asyncio.Queue = asyncio.Queue()
        loop = asyncio.get_running_loop()

        def listener(sim_req, n, done) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, (n, done))

        self.in_flight += 1
        self._waiting.add(queue)
        sim_req = self.runtime.submit(prompt_tokens, max_tokens, eos_at, listener)
        rid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex
        created = int(time.time())
        try:
            if stream:
                return await stream_sse(
                    self.runtime,
                    chat,
                    rid,
                    created,
                    model,
                    sim_req,
                    queue,
                    writer,
                    include_usage,
                    prompt_tokens,
                )
            pieces: list[str] = []
            while True:
                n, done = await queue.get()
                if n is None:  # the engine died while this request waited
                    return await self._dead(writer, keep)
                pieces.extend(WORDS[(len(pieces) + i) % len(WORDS)] for i in range(n))
                if done:
                    break
            usage = {
                "prompt_tokens": prompt_tokens,
                "total_tokens": prompt_tokens + len(pieces),
                "completion_tokens": len(pieces),
                "prompt_tokens_details": None,
            }
            reason = sim_req.finish_reason or "length"
            if chat:
                choice = {
                    "index": 0,
                    "message": {"role": "assistant", "content": "".join(pieces), "tool_calls": []},
                    "logprobs": None,
                    "finish_reason": reason,
                    "stop_reason": None,
                }
                obj = "chat.completion"
            else:
                choice = {
                    "index": 0,
                    "text": "".join(pieces),
                    "logprobs": None,
                    "finish_reason": reason,
                    "stop_reason": None,
                }
                obj = "text_completion"
            return await self._send(
                writer,
                200,
                {
                    "id": rid,
                    "object": obj,
                    "created": created,
                    "model": model,
                    "choices": [choice],
                    "usage": usage,
                },
                keep,
            )
        except (ConnectionError, asyncio.CancelledError):
            self.runtime.abort(sim_req)
            raise
        finally:
            self.in_flight -= 1
            self._waiting.discard(queue)
