"""Stand-in for headroom.probes.vllm_log.LogDigest while that module is absent: keeps the
lines, classifies nothing. The supervisor then judges only from /health and the process."""

from __future__ import annotations


class NullDigest:
    """Feeds are accepted and ignored; facts() says nothing is known."""

    def __init__(self) -> None:
        self.events: list = []

    def feed(self, line: str):
        return None

    def facts(self):
        return None
