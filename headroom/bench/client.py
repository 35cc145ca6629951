"""Streaming requests to an OpenAI-compatible server, timed token by token.

Only the URL the user gave is contacted. The API key goes in an `Authorization: Bearer`
header on /v1 requests only (vLLM protects /v1 with `--api-key`, never /metrics) and is never
part of any message, result or repr.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field

import httpx

from headroom.bench.stats import RequestResult
from headroom.bench.workload import RequestShape, synth_prompt
from headroom.probes.bounded_http import BoundedReadError, bounded_get
from headroom.probes.untrusted_json import loads_bounded

MAX_MODELS_BYTES = 4 << 20  # /v1/models of a server with many adapters is a few KB
MAX_CHUNK_BYTES = 1 << 20  # one SSE chunk or error body


class BenchError(RuntimeError):
    """The bench cannot run at all (server unreachable, model unknown); the message says why."""


@dataclass(frozen=True)
class ServedModel:
    """A model as /v1/models lists it; max_model_len is a vLLM extension (None elsewhere)."""

    id: str
    max_model_len: int | None = None


@dataclass
class OpenAIClient:
    """Sends the bench's requests; one instance per bench run."""

    base_url: str
    client: httpx.AsyncClient
    endpoint: str = "completions"  # "completions" | "chat"
    api_key: str | None = field(default=None, repr=False)
    request_timeout_s: float = 300.0
    seed: int = 0
    tokens_per_word: float = 1.0  # of synthetic prompts on this server's tokenizer
    _serial: int = 0

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    async def list_models(self) -> list[ServedModel]:
        url = f"{self.base_url}/v1/models"
        chunks: list[str] = []
        try:
            # Bounded: a huge, endless or redirecting answer is an error, not a hang.
            answer = await bounded_get(
                self.client,
                url,
                deadline_s=10.0,
                max_bytes=MAX_MODELS_BYTES,
                sink=chunks.append,
                headers=self._headers(),
            )
        except BoundedReadError as exc:
            raise BenchError(str(exc)) from None
        except httpx.HTTPError as exc:
            raise BenchError(f"cannot reach {url}: {_describe(exc)}") from None
        if answer.status in (401, 403):
            raise BenchError(
                f"{url} answered HTTP {answer.status}: the server wants an API key "
                "(give --api-key or set VLLM_API_KEY)"
            )
        if answer.status != 200:
            raise BenchError(f"{url} answered HTTP {answer.status}")
        try:
            listing = loads_bounded("".join(chunks), max_bytes=MAX_MODELS_BYTES, what=url)
            data = listing.get("data") or []  # type: ignore[attr-defined]
        except (ValueError, AttributeError):
            raise BenchError(f"{url} did not answer with an OpenAI model list") from None
        if not isinstance(data, list):
            raise BenchError(f"{url} did not answer with an OpenAI model list")
        models = []
        for item in data:
            if isinstance(item, dict) and isinstance(item.get("id"), str):
                mml = item.get("max_model_len")
                models.append(ServedModel(item["id"], mml if isinstance(mml, int) else None))
        if not models:
            raise BenchError(f"{url} lists no models")
        return models

    def _payload(self, model: str, shape: RequestShape, rng: random.Random) -> dict:
        self._serial += 1
        if shape.prompt is not None:
            text = shape.prompt
        else:
            words = max(1, round(shape.prompt_tokens / self.tokens_per_word))
            text = synth_prompt(words, rng, self._serial)
        body: dict[str, object] = {
            "model": model,
            "max_tokens": shape.output_tokens,
            # vLLM extension: generate exactly max_tokens so output lengths follow the mix.
            "ignore_eos": True,
            "temperature": 0.0,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if self.endpoint == "chat":
            body["messages"] = [{"role": "user", "content": text}]
        else:
            body["prompt"] = text
        return body

    async def calibrate(self, model: str, rng: random.Random, words: int = 64) -> float:
        """Tokens per synthetic word on this server, from the `usage` of one tiny request, so
        synthetic prompts hit their target token counts on any tokenizer (a small vocabulary
        splits words into several tokens). 1.0 when the server reports no usage."""
        result = RequestResult(started_at=time.monotonic())
        await self.send(model, RequestShape(words, 1), result, rng)
        # Only `usage` matters here: a one-token answer may decode to empty text, which
        # send() reports as "no token", yet the prompt count is exact.
        if result.prompt_tokens:
            self.tokens_per_word = min(8.0, max(0.25, result.prompt_tokens / words))
        return self.tokens_per_word

    async def send(
        self, model: str, shape: RequestShape, result: RequestResult, rng: random.Random
    ) -> None:
        """Stream one request, filling `result` as tokens arrive; never raises except on
        cancellation (the step ended), which marks the request cut."""
        path = "/v1/chat/completions" if self.endpoint == "chat" else "/v1/completions"
        body = self._payload(model, shape, rng)
        try:
            async with self.client.stream(
                "POST",
                self.base_url + path,
                json=body,
                headers=self._headers(),
                timeout=httpx.Timeout(self.request_timeout_s, connect=10.0),
            ) as response:
                if response.status_code != 200:
                    detail = (await response.aread()).decode("utf-8", "replace")
                    result.error = f"HTTP {response.status_code}: {_short(detail)}"
                    return
                async for line in response.aiter_lines():
                    if not self._take_line(line, result):
                        break
            if result.error is None and result.first_token_at is None:
                result.error = "the server finished the stream without a token"
        except asyncio.CancelledError:
            result.cut = True
            raise
        except httpx.HTTPError as exc:
            result.error = _describe(exc)
        finally:
            result.finished_at = time.monotonic()
            if not result.output_tokens:
                result.output_tokens = len(result.token_times)

    def _take_line(self, line: str, result: RequestResult) -> bool:
        """Handle one SSE line; False at the end of the stream."""
        if not line.startswith("data:"):
            return True
        data = line[5:].strip()
        if data == "[DONE]":
            return False
        try:
            chunk = loads_bounded(data, max_bytes=MAX_CHUNK_BYTES, what="a stream chunk")
        except ValueError:  # not JSON, too deep, too big: not a chunk this bench can use
            return True
        if not isinstance(chunk, dict):
            return True
        if chunk.get("error"):
            err = chunk["error"]
            message = err.get("message") if isinstance(err, dict) else err
            result.error = f"stream error: {_short(str(message))}"
            return False
        now = time.monotonic()
        choices = chunk.get("choices")
        for choice in choices if isinstance(choices, list) else ():
            if isinstance(choice, dict) and self._is_token(choice):
                if result.first_token_at is None:
                    result.first_token_at = now
                result.token_times.append(now)
                break
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            if _count(usage.get("completion_tokens")) is not None:
                result.output_tokens = usage["completion_tokens"]
            if _count(usage.get("prompt_tokens")) is not None:
                result.prompt_tokens = usage["prompt_tokens"]
        return True

    def _is_token(self, choice: dict) -> bool:
        if self.endpoint == "chat":
            delta = choice.get("delta")
            if not isinstance(delta, dict):
                return False
            # The first chat chunk carries only the role; it is not a token.
            return bool(delta.get("content")) or (
                "role" not in delta and delta.get("content") is not None
            )
        text = choice.get("text")
        # A closing chunk with empty text and a finish_reason carries no token.
        return text is not None and (text != "" or choice.get("finish_reason") is None)


def _count(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    try:
        parsed = loads_bounded(text, max_bytes=MAX_CHUNK_BYTES)
        if isinstance(parsed, dict):
            err = parsed.get("error", parsed)
            text = str(err.get("message", err) if isinstance(err, dict) else err)
    except ValueError:
        pass
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _describe(exc: httpx.HTTPError) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return "timed out"
    if isinstance(exc, httpx.ConnectError):
        return "connection refused or host unreachable"
    if isinstance(exc, httpx.RemoteProtocolError):
        return "the server closed the connection mid-stream"
    return f"{type(exc).__name__}: {exc}"
