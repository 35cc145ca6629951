"""What a vLLM server says about itself: `/v1/models` and `/version`.

    info = await read_server_info("http://127.0.0.1:8000")   # ServerInfo, never raises

`/v1/models` lists each served name with `root` (the model path or hub id it was loaded
from) and `max_model_len` (vLLM's ModelCard, vllm/entrypoints/openai/protocol.py).
`/version` answers `{"version": "0.32.0"}`. With `--api-key`, `/v1` needs the key while
`/version` stays open, so an API key may be passed; it is sent, never stored or shown.
The cache settings are not here: they come from `vllm:cache_config_info` on /metrics.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from headroom.probes.bounded_http import BoundedReadError, bounded_get
from headroom.probes.metrics import normalize_base_url
from headroom.probes.safe_text import safe_text
from headroom.probes.tls import tls_context_for
from headroom.probes.untrusted_json import loads_bounded

MAX_ANSWER_BYTES = 1 << 20  # /v1/models of a server with many LoRA adapters is a few KB
MAX_MODELS = 1000


@dataclass(frozen=True)
class ServerInfo:
    taken_at: float
    url: str
    model_ids: tuple[str, ...]  # served model names
    model_root: str | None  # the first model's root (path or hub id)
    max_model_len: int | None  # the first model's
    version: str | None
    message: str | None = None  # why something is missing (401, not vLLM...)


def info_from_answers(url: str, models: Any, version: Any, message: str | None) -> ServerInfo:
    """Pure: the two JSON answers (either may be None) -> ServerInfo."""
    ids: list[str] = []
    root = max_len = None
    data = models.get("data") if isinstance(models, dict) else None
    for card in data[:MAX_MODELS] if isinstance(data, list) else ():
        if not isinstance(card, dict) or not isinstance(card.get("id"), str):
            continue
        # The server's own text: escaped for terminals, cut to a sane length.
        ids.append(safe_text(card["id"][:512]))
        if len(ids) == 1:
            root = safe_text(card["root"][:1024]) if isinstance(card.get("root"), str) else None
            raw = card.get("max_model_len")
            max_len = (
                raw if isinstance(raw, int) and not isinstance(raw, bool) and raw > 0 else None
            )
    text = version.get("version") if isinstance(version, dict) else None
    text = safe_text(text.strip()[:64]) if isinstance(text, str) else None
    return ServerInfo(
        time.monotonic(),
        url,
        tuple(ids),
        root,
        max_len,
        text if isinstance(text, str) and text else None,
        message,
    )


async def read_server_info(
    url: str,
    *,
    client: httpx.AsyncClient | None = None,
    timeout_s: float = 3.0,
    api_key: str | None = None,
) -> ServerInfo:
    base = normalize_base_url(url)
    own = client is None
    if client is None:
        local = (urlsplit(base).hostname or "") in ("127.0.0.1", "localhost", "::1")
        client = httpx.AsyncClient(
            timeout=timeout_s,
            trust_env=not local,
            verify=tls_context_for(base, trust_env=not local),
        )
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        (models, m_msg), (version, v_msg) = await asyncio.gather(
            _get_json(client, base + "/v1/models", headers, timeout_s),
            _get_json(client, base + "/version", {}, timeout_s),
        )
    finally:
        if own:
            await client.aclose()
    return info_from_answers(base, models, version, m_msg or v_msg)


async def _get_json(
    client: httpx.AsyncClient, url: str, headers: dict[str, str], timeout_s: float
) -> tuple[Any, str | None]:
    # Bounded like the /metrics scrape: one deadline, a byte cap, same-host redirects only,
    # and JSON with a nesting limit (a 1000-deep answer raised RecursionError here before).
    chunks: list[str] = []
    try:
        answer = await bounded_get(
            client,
            url,
            deadline_s=timeout_s,
            max_bytes=MAX_ANSWER_BYTES,
            sink=chunks.append,
            headers=headers,
        )
    except BoundedReadError as error:
        return None, str(error)
    except httpx.HTTPError as error:
        return None, f"{url}: {str(error).strip() or type(error).__name__}"
    if answer.status == 401:
        return None, f"{url} needs an API key (401)"
    if answer.status != 200:
        return None, f"{url} answered HTTP {answer.status}"
    try:
        return loads_bounded("".join(chunks), max_bytes=MAX_ANSWER_BYTES, what=url), None
    except ValueError:
        return None, f"{url} did not answer JSON Headroom can read"
