"""A Hub model's config.json and weight size, read with huggingface_hub when it is not on disk.

Only two small files are fetched: config.json and model.safetensors.index.json (whose
metadata.total_size is the checkpoint's byte count; a single-file checkpoint's size comes
from a HEAD of model.safetensors). Never a weight file. The files land in the ordinary HF
cache (HF_HUB_CACHE / HF_HOME), so the next run, and `load_model_shape`, find them offline.

Honours HF_TOKEN (gated and private models), HF_ENDPOINT (mirrors; the tests' loopback
stand-in) and HF_HUB_OFFLINE (cache only), read from the `env` given, not from what
huggingface_hub captured at import. Never raises: a hub that cannot answer gives a HubRead
with `shape=None` and a sentence for the doctor's `lacking`.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace

from headroom.probes.model import (
    MAX_CONFIG_BYTES,
    ModelConfigError,
    ModelShape,
    hf_cache_dirs,
    shape_from_config,
)
from headroom.probes.untrusted_json import load_json_file

REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[\w.-]{1,96}$")
_TRUE = {"1", "true", "yes", "on"}
_cache: dict[tuple[str, str], HubRead] = {}
_lock = threading.Lock()
_io_lock = threading.Lock()


@dataclass(frozen=True)
class HubRead:
    shape: ModelShape | None
    problem: str | None  # why there is no shape (or no weight size), in words


def looks_like_repo_id(name: str) -> bool:
    """`org/name` as the Hub spells it, and not a path that merely does not exist."""
    return bool(REPO_ID.match(name)) and not name.startswith((".", "/", "~"))


def _download(repo_id: str, filename: str, env: Mapping[str, str], timeout_s: float) -> str:
    """A file of the repo: from the HF cache when it is there, else from the hub. One HEAD
    without retries goes first, so a hub that does not answer costs one timeout rather than
    huggingface_hub's minute of back-off."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_download, hf_hub_url

    endpoint = env.get("HF_ENDPOINT") or None
    token: str | bool = env.get("HF_TOKEN") or env.get("HUGGING_FACE_HUB_TOKEN") or False
    cache_dir = str(hf_cache_dirs(env)[0])

    def fetch(local_only: bool) -> str:
        path = hf_hub_download(
            repo_id,
            filename,
            cache_dir=cache_dir,
            endpoint=endpoint,
            token=token,
            local_files_only=local_only,
            etag_timeout=timeout_s,
        )
        return str(path)  # a path (DryRunFileInfo only comes back for dry_run=True)

    try:
        return fetch(local_only=True)
    except Exception:  # not cached yet (LocalEntryNotFoundError): ask the hub, unless offline
        if _offline(env):
            raise
    get_hf_file_metadata(
        hf_hub_url(repo_id, filename, endpoint=endpoint),
        token=token,
        timeout=timeout_s,
        endpoint=endpoint,
        retry_on_errors=False,
    )
    return fetch(local_only=False)


def _offline(env: Mapping[str, str]) -> bool:
    return any(
        str(env.get(k, "")).lower() in _TRUE for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def _why(exc: BaseException, repo_id: str, env: Mapping[str, str]) -> str:
    """A sentence for an error huggingface_hub raised (its classes, by name: the module's
    error tree moves between releases)."""
    kind = type(exc).__name__
    if _offline(env) or kind in ("LocalEntryNotFoundError", "OfflineModeIsEnabled"):
        return (
            f"model {repo_id} is not on disk and HF_HUB_OFFLINE is set (or the Hub did not "
            "answer): its config.json could not be read"
        )
    if kind in ("RepositoryNotFoundError", "RemoteEntryNotFoundError", "EntryNotFoundError"):
        return f"the Hub has no config.json for {repo_id} (or it is private: set HF_TOKEN)"
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if kind == "GatedRepoError" or status in (401, 403):
        return f"the Hub refused config.json of {repo_id} (gated or private: set HF_TOKEN)"
    return f"the Hub did not give config.json of {repo_id} ({kind}: {str(exc)[:200]})"


def _weight_bytes(repo_id: str, env: Mapping[str, str], timeout_s: float) -> int | None:
    """metadata.total_size of the safetensors index, else the size of model.safetensors."""
    try:
        index = load_json_file(
            _download(repo_id, "model.safetensors.index.json", env, timeout_s),
            max_bytes=MAX_CONFIG_BYTES,
        )
        total = index.get("metadata", {}).get("total_size") if isinstance(index, dict) else None
        if isinstance(total, int) and total > 0:
            return total
    except Exception:  # no index: a single-file checkpoint, or the hub went away
        pass
    if _offline(env):
        return None
    try:
        from huggingface_hub import get_hf_file_metadata, hf_hub_url

        endpoint = env.get("HF_ENDPOINT") or None
        url = hf_hub_url(repo_id, "model.safetensors", endpoint=endpoint)
        meta = get_hf_file_metadata(
            url, token=env.get("HF_TOKEN") or False, timeout=timeout_s, endpoint=endpoint
        )
        return meta.size if meta.size and meta.size > 0 else None
    except Exception:  # no safetensors at all (a .bin checkpoint): size unknown
        return None


def read_hub_shape(
    repo_id: str, env: Mapping[str, str] | None = None, *, timeout_s: float = 10.0
) -> HubRead:
    """The shape of a Hub model from its config.json (+ weight size). Cached per process;
    blocking (the TUI calls it through ModelShapeProbe, in a thread)."""
    env = os.environ if env is None else env
    key = (repo_id, str(env.get("HF_ENDPOINT") or ""))
    with _lock:
        if key in _cache:
            return _cache[key]
    with _io_lock:  # one hub read at a time: the library's offline switch is process-wide
        result = _read(repo_id, env, timeout_s)
    if result.shape is not None or _offline(env):
        with _lock:  # a transient network failure is not cached: the next call tries again
            _cache[key] = result
    return result


def _read(repo_id: str, env: Mapping[str, str], timeout_s: float) -> HubRead:
    if not looks_like_repo_id(repo_id):
        return HubRead(None, f"{repo_id!r} is neither a local path nor a Hub model id (org/name)")
    try:
        from huggingface_hub import constants
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()  # a headless doctor prints JSON on stdout; no bars on stderr
        # huggingface_hub read HF_HUB_OFFLINE once, at import; the `env` given decides instead
        constants.HF_HUB_OFFLINE = _offline(env)
        path = _download(repo_id, "config.json", env, timeout_s)
    except ImportError:
        return HubRead(None, "huggingface_hub is not installed: Hub models cannot be read")
    except Exception as exc:  # every hub failure is a `lacking` line, never a crash
        return HubRead(None, _why(exc, repo_id, env))
    try:
        # A downloaded file is anyone's text: bounded (size, nesting, numbers) like a local one.
        config = load_json_file(path, max_bytes=MAX_CONFIG_BYTES)
        if not isinstance(config, Mapping):
            raise ModelConfigError(f"{path} is not a JSON object")
        shape = shape_from_config(config, repo_id)
    except (OSError, ValueError, ModelConfigError) as exc:
        return HubRead(None, f"config.json of {repo_id} from the Hub is not readable JSON: {exc}")
    size = _weight_bytes(repo_id, env, timeout_s)
    shape = replace(shape, source="hub", config_path=path, weight_bytes=size)
    problem = None if size else f"weight size of {repo_id} unknown (no safetensors index)"
    return HubRead(shape, problem)


def clear_cache() -> None:
    with _lock:
        _cache.clear()
