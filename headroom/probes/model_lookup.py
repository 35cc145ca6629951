"""Find a model's shape by the name vLLM was given: a local directory or config.json, the HF
cache, or (when allowed) the Hub. The input-loading step of the doctor and `plan` calls this
before the pure doctor runs; the TUI calls it through ModelShapeProbe so a slow hub never
blocks a frame.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from headroom.probes.model import ModelConfigError, ModelShape, load_model_shape
from headroom.probes.model_hub import looks_like_repo_id, read_hub_shape


@dataclass(frozen=True)
class ModelLookup:
    """What was found for a name: a shape, and/or a sentence saying what could not be read.
    `unreadable` is True when a file was found but is not a usable config (bad JSON)."""

    shape: ModelShape | None
    problem: str | None = None
    unreadable: bool = False


def lookup_model(
    name: str, env: Mapping[str, str] | None = None, *, hub: bool = True, timeout_s: float = 10.0
) -> ModelLookup:
    """Local path, then the HF cache, then the Hub (when `hub`). Never raises."""
    env = os.environ if env is None else env
    path = Path(name).expanduser()
    if path.exists():
        try:
            return ModelLookup(load_model_shape(str(path), env))
        except ModelConfigError as exc:
            return ModelLookup(None, str(exc), unreadable=True)
    try:
        return ModelLookup(load_model_shape(name, env))  # the HF cache; never downloads
    except ModelConfigError as exc:
        not_cached = str(exc)
    if not hub or not looks_like_repo_id(name):
        return ModelLookup(None, not_cached)
    found = read_hub_shape(name, env, timeout_s=timeout_s)
    return ModelLookup(found.shape, found.problem)


class ModelShapeProbe:
    """Async, cached lookups for the TUI: the blocking file and hub reads run in a thread."""

    def __init__(self, env: Mapping[str, str] | None = None, *, hub: bool = True) -> None:
        self._env = dict(os.environ if env is None else env)
        self._hub = hub
        self._found: dict[str, ModelLookup] = {}
        self._pending: dict[str, asyncio.Task] = {}

    async def read(self, name: str) -> ModelLookup:
        if name not in self._found:
            self._found[name] = await asyncio.to_thread(
                lookup_model, name, self._env, hub=self._hub
            )
        return self._found[name]

    def cached(self, name: str | None) -> ModelLookup | None:
        """The result of an earlier read, without waiting (None when not read yet)."""
        return self._found.get(name) if name else None

    def peek(self, name: str | None) -> ModelLookup | None:
        """For code on the event loop that must not wait (a TUI frame): the result when it
        is there, else None while a background read is started (once per name)."""
        if not name:
            return None
        if name in self._found:
            return self._found[name]
        if name not in self._pending:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # no loop: nothing to run the read on; the caller goes on
                return None
            self._pending[name] = loop.create_task(self.read(name))
        return None
