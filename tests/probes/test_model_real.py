"""The safetensors header reader against the real tiny model the real-vLLM harness builds
(scripts/make_tiny_model.py writes it with transformers' own safetensors writer)."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from headroom.probes.model import load_model_shape

pytestmark = pytest.mark.real_vllm


def tiny_model() -> Path:
    explicit = os.environ.get("HEADROOM_REAL_VLLM_MODEL")
    home = os.environ.get("HEADROOM_REAL_VLLM_HOME") or str(Path.home() / ".cache" / "headroom")
    path = Path(explicit) if explicit else Path(home) / "tiny-llama"
    if not (path / "config.json").is_file():
        pytest.skip(f"no tiny model at {path}: run scripts/setup-real-vllm.sh")
    return path


def test_real_safetensors_counts_match_the_file() -> None:
    path = tiny_model()
    shape = load_model_shape(str(path))
    weights = path / "model.safetensors"
    (header_len,) = struct.unpack("<Q", weights.read_bytes()[:8])
    # The file is exactly: 8-byte length, the JSON header, then every tensor's bytes.
    assert shape.weight_bytes == weights.stat().st_size - 8 - header_len
    assert shape.dtype == "bfloat16" and shape.param_count * 2 == shape.weight_bytes
    assert shape.weights_complete is True and shape.num_layers >= 1
