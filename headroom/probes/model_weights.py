"""Parameter count and weight bytes from safetensors headers, without reading tensors.

A .safetensors file starts with an 8-byte little-endian header length N, then N bytes of
JSON: {"tensor.name": {"dtype": "BF16", "shape": [4096, 4096], "data_offsets": [a, b]}, ...,
"__metadata__": {...}}. Sharded checkpoints list their shards in
model.safetensors.index.json ("weight_map"), with "metadata": {"total_size": bytes}.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from headroom.probes.untrusted_json import UntrustedJsonError, load_json_file, loads_bounded

MAX_HEADER_BYTES = 100 * 1024 * 1024  # real headers are KBs to a few MB; refuse absurd lengths
MAX_TENSORS = 1_000_000  # the largest real checkpoints have ~100k tensors in all
MAX_SHARDS = 10_000  # the largest real checkpoints have a few hundred shards
MAX_RANK = 8  # real tensors have 1-5 dimensions
MAX_ELEMENTS = 2**48  # one tensor; ~280 T elements is far past any real one


@dataclass(frozen=True)
class WeightSummary:
    param_count: int | None
    weight_bytes: int | None
    files: int  # safetensors files whose headers were read
    complete: bool | None  # None: no safetensors at all; False: shards missing or unreadable


def read_header(path: Path) -> dict | None:
    """The JSON header of one safetensors file, or None if it is not a valid one."""
    try:
        with path.open("rb") as fh:
            raw = fh.read(8)
            if len(raw) != 8:
                return None
            (length,) = struct.unpack("<Q", raw)
            if length == 0 or length > MAX_HEADER_BYTES:
                return None
            blob = fh.read(length)
    except OSError:
        return None
    if len(blob) != length:
        return None
    try:
        header = loads_bounded(blob, max_bytes=MAX_HEADER_BYTES, max_depth=8, what=str(path))
    except UntrustedJsonError:
        return None
    return header if isinstance(header, dict) else None


def count_header(header: dict) -> tuple[int, int]:
    """(parameters, bytes) described by one header."""
    params = size = 0
    for count, (name, info) in enumerate(header.items()):
        if count >= MAX_TENSORS:
            break
        if name == "__metadata__" or not isinstance(info, dict):
            continue
        params += _elements(info.get("shape"))
        offsets = info.get("data_offsets")
        if (
            isinstance(offsets, list)
            and len(offsets) == 2
            and all(isinstance(o, int) for o in offsets)
            and offsets[1] >= offsets[0]
        ):
            size += offsets[1] - offsets[0]
    return params, size


def _elements(shape: object) -> int:
    """Elements of one tensor; 0 for a shape no real tensor has.

    Capped rank and per-dimension size keep this linear: multiplying thousands of huge
    dimensions grows the integers and made a crafted 6 MB header take 252 s.
    """
    if not isinstance(shape, list) or len(shape) > MAX_RANK:
        return 0
    total = 1
    for dim in shape:
        if not isinstance(dim, int) or isinstance(dim, bool) or not 0 <= dim <= MAX_ELEMENTS:
            return 0
        total *= dim
        if total > MAX_ELEMENTS:
            return 0
    return total


def _index_shards(directory: Path) -> tuple[list[str] | None, int | None]:
    index = directory / "model.safetensors.index.json"
    if not index.is_file():
        return None, None
    try:
        data = load_json_file(index, max_bytes=MAX_HEADER_BYTES)
    except (OSError, UntrustedJsonError):
        return None, None
    if not isinstance(data, dict):
        return None, None
    weight_map = data.get("weight_map")
    shards = sorted(set(weight_map.values())) if isinstance(weight_map, dict) else None
    metadata = data.get("metadata")
    total = metadata.get("total_size") if isinstance(metadata, dict) else None
    return shards, total if isinstance(total, int) else None


def summarize_weights(directory: Path) -> WeightSummary:
    """Sum every safetensors header in a model directory. Never raises."""
    shards, index_total = _index_shards(directory)
    if shards is not None:
        # Plain file names only (an index is untrusted: no "../" reads), and a bounded count.
        names = [s for s in shards if isinstance(s, str) and "/" not in s and s not in ("..", ".")]
        files = [directory / s for s in names[:MAX_SHARDS]]
    else:
        files = sorted(directory.glob("*.safetensors"))
    if not files:
        return WeightSummary(None, None, 0, None)
    params = size = read = 0
    for path in files:
        header = read_header(path) if path.is_file() else None
        if header is None:
            continue
        p, s = count_header(header)
        params, size, read = params + p, size + s, read + 1
    complete = read == len(files)
    if not complete:
        # Partial download: the index still knows the total size; the count would be wrong.
        return WeightSummary(None, index_total, read, False)
    return WeightSummary(params, size, read, True)
