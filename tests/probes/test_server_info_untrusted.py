"""What a server says about itself (/v1/models, /version) as untrusted input (issue 14).

Old: a 1000-deep /version answer raised RecursionError out of read_server_info (documented
never to raise), and model ids and the version reached the terminal with their escape
sequences.
"""

from __future__ import annotations

import asyncio
import time

from hypothesis import given, settings
from hypothesis import strategies as st
from support.hostile_json import deep_nesting, hostile_values
from support.hostile_server import HostileServer, fixed, trickle

from headroom.probes.safe_text import is_safe
from headroom.probes.server_info import info_from_answers, read_server_info


@settings(max_examples=150, deadline=None)
@given(models=hostile_values, version=hostile_values,
       card=st.dictionaries(st.sampled_from(["id", "root", "max_model_len"]), hostile_values))  # fmt: skip
def test_any_answers_give_a_typed_info(models, version, card) -> None:
    for answer in (models, {"data": [card, models]}, {"data": models}):
        info = info_from_answers("http://x", answer, version, None)
        assert all(isinstance(i, str) and is_safe(i) for i in info.model_ids)
        assert info.model_root is None or (
            isinstance(info.model_root, str) and is_safe(info.model_root)
        )
        assert info.version is None or (isinstance(info.version, str) and is_safe(info.version))
        assert info.max_model_len is None or (
            isinstance(info.max_model_len, int) and info.max_model_len > 0
        )


def _read(routes: dict):
    async def go():
        server = HostileServer()
        for path, behaviour in routes.items():
            server.route(path, behaviour)
        with server:
            return await read_server_info(server.url, timeout_s=1.0)

    return asyncio.run(go())


def test_deep_and_endless_answers_never_raise_and_end_at_the_deadline() -> None:
    started = time.monotonic()
    info = _read({"/version": fixed(deep_nesting(5000)),
                    "/v1/models": trickle(b"[", every_s=0.05)})  # fmt: skip
    assert time.monotonic() - started < 3.0
    assert info.version is None and info.model_ids == ()
    assert info.message  # says why


def test_escapes_in_model_ids_are_shown_escaped() -> None:
    body = '{"data": [{"id": "m\\u001b]0;pwned\\u0007", "root": "/x\\u009b2J", "max_model_len": 4096}]}'
    info = _read({"/v1/models": fixed(body), "/version": fixed('{"version": "0.33.0"}')})
    assert info.model_ids == ("m\\x1b]0;pwned\\x07",)
    assert (
        info.model_root == "/x\\x9b2J" and info.max_model_len == 4096 and info.version == "0.33.0"
    )
