"""A closed-loop load for the demo and the tests, on stdlib asyncio (no HTTP library).

`python -m headroom.simulator load URL --concurrency 32 --requests 48 --prompt-tokens 200:500
--max-tokens 400 --ignore-eos` sends /v1/completions with token-id prompts, so the server
counts prompt lengths exactly. Works against a real vLLM too (token ids below 500 fit any
vocabulary). Never raises on a refused or broken connection: it counts an error and goes on.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass
class LoadResult:
    sent: int = 0
    ok: int = 0
    errors: int = 0
    completion_tokens: int = 0


async def post_json(
    url: str, payload: dict, api_key: str | None = None, timeout: float = 600.0
) -> tuple[int, dict]:
    """One POST over a fresh connection; returns (status, parsed JSON or {})."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    body = json.dumps(payload).encode()
    head = (
        f"POST {parts.path or '/'} HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n"
    )
    if api_key:
        head += f"Authorization: Bearer {api_key}\r\n"
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    try:
        writer.write(head.encode() + b"\r\n" + body)
        await writer.drain()
        raw = await asyncio.wait_for(reader.read(), timeout)
    finally:
        writer.close()
    header, _, content = raw.partition(b"\r\n\r\n")
    status = int(header.split(b" ", 2)[1]) if header.startswith(b"HTTP/") else 0
    if b"transfer-encoding: chunked" in header.lower():
        content = _dechunk(content)
    try:
        return status, json.loads(content or b"{}")
    except ValueError:
        return status, {}


def _dechunk(data: bytes) -> bytes:
    out, rest = b"", data
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            break
        out, rest = out + rest[:size], rest[size + 2 :]
    return out


async def run_load(
    base_url: str,
    model: str,
    *,
    concurrency: int,
    requests: int,
    prompt_tokens: tuple[int, int],
    max_tokens: tuple[int, int],
    ignore_eos: bool = True,
    seed: int = 0,
    api_key: str | None = None,
    stop: asyncio.Event | None = None,
) -> LoadResult:
    """`concurrency` workers; `requests` = 0 keeps going until `stop` is set."""
    rng = random.Random(seed)
    result = LoadResult()
    url = base_url.rstrip("/") + "/v1/completions"
    lock = asyncio.Lock()

    async def worker() -> None:
        while not (stop and stop.is_set()):
            async with lock:
                if requests and result.sent >= requests:
                    return
                result.sent += 1
                n_prompt = rng.randint(*prompt_tokens)
                n_out = rng.randint(*max_tokens)
                prompt = [rng.randint(5, 499) for _ in range(n_prompt)]
            payload = {
                "model": model,
                "prompt": prompt,
                "max_tokens": n_out,
                "ignore_eos": ignore_eos,
                "temperature": 0,
            }
            try:
                status, data = await post_json(url, payload, api_key)
            except (OSError, TimeoutError, ValueError, IndexError):
                status, data = 0, {}
                await asyncio.sleep(0.5)
            if status == 200:
                result.ok += 1
                result.completion_tokens += int(data.get("usage", {}).get("completion_tokens", 0))
            else:
                result.errors += 1

    await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
    return result


def _range(text: str) -> tuple[int, int]:
    lo, _, hi = text.partition(":")
    return int(lo), int(hi or lo)


def load_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(
        prog="python -m headroom.simulator load",
        description="closed-loop completions load against a server",
    )
    p.add_argument("url", help="server base URL, e.g. http://127.0.0.1:8000")
    p.add_argument("--model", required=True, help="served model name")
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--requests", type=int, default=0, help="0 = until interrupted")
    p.add_argument("--prompt-tokens", type=_range, default=(200, 500), metavar="LO:HI")
    p.add_argument("--max-tokens", type=_range, default=(200, 400), metavar="LO:HI")
    p.add_argument("--ignore-eos", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    try:
        res = asyncio.run(
            run_load(
                a.url,
                a.model,
                concurrency=a.concurrency,
                requests=a.requests,
                prompt_tokens=a.prompt_tokens,
                max_tokens=a.max_tokens,
                ignore_eos=a.ignore_eos,
                seed=a.seed,
            )
        )
    except KeyboardInterrupt:
        return 130
    print(json.dumps(res.__dict__))
    return 0 if res.errors == 0 else 1
