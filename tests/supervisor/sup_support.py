"""Helpers shared by the supervisor tests (imported by name: pytest puts this dir on sys.path)."""

from __future__ import annotations

import asyncio
import socket
import sys
import time
from pathlib import Path

FAKE_VLLM = Path(__file__).with_name("fake_vllm.py")
# A launcher template that runs the fake vLLM with this interpreter.
FAKE_TEMPLATE = f"{sys.executable} {FAKE_VLLM} {{model}} {{flags}}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def wait_for(predicate, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        await asyncio.sleep(0.1)
    raise AssertionError("condition not met in time")
