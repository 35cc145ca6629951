"""Bounded HTTP GETs of servers Headroom does not trust: a byte cap, one deadline, no off-host hops.

    answer = await bounded_get(client, url, deadline_s=5, max_bytes=32 << 20, sink=chunks.append)

A server can answer with a body of any size at any speed. httpx's timeout bounds each read,
not the request, and `response.content` holds the whole body, so a 1 GiB page once cost
2.4 GB of memory and an endless slow page never ended. Here the body is streamed to `sink`
as decoded text chunks, counted (after any gzip decoding, so a compressed bomb counts at
its real size), and the whole exchange (connect, redirects, headers, body) runs under one
deadline. Redirects are followed by hand and only to the same scheme, host and port:
following a /metrics redirect to another host silently would scrape someone else's server.
"""

from __future__ import annotations

import asyncio
import codecs
from collections.abc import Callable
from dataclasses import dataclass

import httpx

MAX_REDIRECTS = 5
_REDIRECT_CODES = (301, 302, 303, 307, 308)


class BoundedReadError(Exception):
    """A read Headroom stopped on purpose; `str()` is the message for the user."""


class BodyTooLarge(BoundedReadError):
    def __init__(self, url: str, max_bytes: int, bytes_read: int) -> None:
        super().__init__(
            f"{url} answered more than {_size(max_bytes)} (stopped reading after "
            f"{_size(bytes_read)}); a vLLM page is about 100 KB"
        )


class DeadlineExceeded(BoundedReadError):
    def __init__(self, url: str, deadline_s: float, bytes_read: int, headers_seen: bool) -> None:
        self.headers_seen = headers_seen
        if headers_seen:
            text = (
                f"{url} started answering but did not finish within {deadline_s:g} s "
                f"({_size(bytes_read)} read); stopped reading"
            )
        else:
            text = f"{url} did not answer within {deadline_s:g} s"
        super().__init__(text)


class OffHostRedirect(BoundedReadError):
    def __init__(self, url: str, target: str) -> None:
        super().__init__(
            f"{url} redirects to {target}, another host or port: not followed "
            "(give that address itself if it is the server)"
        )


class TooManyRedirects(BoundedReadError):
    def __init__(self, url: str) -> None:
        super().__init__(f"{url} redirected more than {MAX_REDIRECTS} times: not followed")


@dataclass(frozen=True)
class BoundedAnswer:
    status: int
    url: str  # after same-host redirects
    bytes_read: int


async def bounded_get(
    client: httpx.AsyncClient,
    url: str,
    *,
    deadline_s: float,
    max_bytes: int,
    sink: Callable[[str], None] | None = None,
    headers: dict[str, str] | None = None,
) -> BoundedAnswer:
    """GET `url`, feed its body to `sink` as UTF-8 text chunks, within `deadline_s` overall.

    The body of a non-200 answer is not read. `headers` (an API key) go to the same origin
    only, since redirects elsewhere are refused. Raises the
    BoundedReadError subclasses above, or httpx's errors (connect refused, reset...).
    """
    progress = _Progress()
    try:
        async with asyncio.timeout(deadline_s):
            return await _get(client, url, deadline_s, max_bytes, sink, headers, progress)
    except TimeoutError:
        raise DeadlineExceeded(
            url, deadline_s, progress.bytes_read, progress.headers_seen
        ) from None


@dataclass
class _Progress:
    bytes_read: int = 0
    headers_seen: bool = False


async def _get(client, url, deadline_s, max_bytes, sink, headers, progress):
    current = httpx.URL(url)
    for _ in range(MAX_REDIRECTS + 1):
        request = client.build_request("GET", current, timeout=deadline_s, headers=headers)
        response = await client.send(request, stream=True, follow_redirects=False)
        try:
            progress.headers_seen = True
            location = response.headers.get("location")
            if response.status_code in _REDIRECT_CODES and location:
                target = current.join(location)
                if not _same_origin(current, target):
                    raise OffHostRedirect(str(current), str(target))
                current = target
                continue
            if response.status_code == 200:
                await _read_body(response, str(current), max_bytes, sink, progress)
            return BoundedAnswer(response.status_code, str(current), progress.bytes_read)
        finally:
            await response.aclose()
    raise TooManyRedirects(url)


async def _read_body(response, url, max_bytes, sink, progress) -> None:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise BodyTooLarge(url, max_bytes, 0)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    async for chunk in response.aiter_bytes():
        progress.bytes_read += len(chunk)
        if progress.bytes_read > max_bytes:
            raise BodyTooLarge(url, max_bytes, progress.bytes_read)
        if sink is not None:
            sink(decoder.decode(chunk))
    if sink is not None:
        sink(decoder.decode(b"", final=True))


def _same_origin(a: httpx.URL, b: httpx.URL) -> bool:
    return (a.scheme, a.host, a.port) == (b.scheme, b.host, b.port)


def _size(count: int) -> str:
    if count >= 1 << 20:
        return f"{count / (1 << 20):.0f} MiB"
    if count >= 1 << 10:
        return f"{count / (1 << 10):.0f} KiB"
    return f"{count} bytes"


class LineFeeder:
    """Splits streamed text into lines for a line consumer, holding at most one line.

    A line longer than `max_line` (no newline for megabytes) is dropped and counted in
    `long_lines` rather than grown without end. The first `head_chars` characters are kept
    in `head` for classification (HTML? JSON? empty?).
    """

    def __init__(
        self, consume: Callable[[list[str]], None], *, max_line: int, head_chars: int
    ) -> None:
        self._consume = consume
        self._max_line = max_line
        self._head_chars = head_chars
        self._head: list[str] = []
        self._head_len = 0
        self._partial: list[str] = []
        self._partial_len = 0
        self._dropping = False
        self.long_lines = 0

    @property
    def head(self) -> str:
        return "".join(self._head)

    def feed(self, text: str) -> None:
        if not text:
            return
        if self._head_len < self._head_chars:
            piece = text[: self._head_chars - self._head_len]
            self._head.append(piece)
            self._head_len += len(piece)
        lines = text.split("\n")
        if len(lines) == 1:
            self._grow(text)
            return
        first = lines[0]
        if self._dropping:
            lines[0] = ""  # the tail of a dropped line
            self._dropping = False
        elif self._partial:
            lines[0] = "".join(self._partial) + first
        self._partial, self._partial_len = [], 0
        self._grow(lines.pop())
        self._consume(lines)

    def finish(self) -> None:
        if self._partial and not self._dropping:
            self._consume(["".join(self._partial)])
        self._partial, self._partial_len = [], 0

    def _grow(self, text: str) -> None:
        if self._dropping or not text:
            return
        self._partial.append(text)
        self._partial_len += len(text)
        if self._partial_len > self._max_line:
            self._partial, self._partial_len = [], 0
            self._dropping = True
            self.long_lines += 1
