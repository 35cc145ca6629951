"""Parameter count and weight bytes from safetensors headers, without reading tensors.

A .safetensors file starts with an 8-byte little-endian header length N, then N bytes of
JSON: {"tensor.name": {"dtype": "BF16", "shape": [4096, 4096], "data_offsets": [a, b]}, ...,
"__metadata__": {...}}. Sharded checkpoints list their shards in
model.safetensors.index.json ("weight_map"), with "metadata": {"total_size": bytes}.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from pathlib import Path

MAX_HEADER_BYTES = 100 * 1024 * 1024  # real headers are KBs to a few MB; refuse absurd lengths


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
        header = json.loads(blob.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return header if isinstance(header, dict) else None


def count_header(header: dict) -> tuple[int, int]:
    """(parameters, bytes) described by one header."""
    params = size = 0
    for name, info in header.items():
        if name == "__metadata__" or not isinstance(info, dict):
            continue
        shape = info.get("shape")
        if isinstance(shape, list) and all(isinstance(d, int) and d >= 0 for d in shape):
            params += math.prod(shape)
        offsets = info.get("data_offsets")
        if (
            isinstance(offsets, list)
            and len(offsets) == 2
            and all(isinstance(o, int) for o in offsets)
            and offsets[1] >= offsets[0]
        ):
            size += offsets[1] - offsets[0]
    return params, size


def _index_shards(directory: Path) -> tuple[list[str] | None, int | None]:
    index = directory / "model.safetensors.index.json"
    if not index.is_file():
        return None, None
    try:
        data = json.loads(index.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
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
        files = [directory / s for s in shards if isinstance(s, str)]
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
