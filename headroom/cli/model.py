"""`headroom model PATH [--json]`: a local model's shape and weight size (never downloads).

PATH is a model directory, a config.json, or a Hugging Face repo id already in the cache.
Exit status: 0 printed, 1 model not found or config unreadable, 2 usage error.
"""

from __future__ import annotations

import argparse
import json
import sys

from headroom.probes.model import (
    ModelConfigError,
    kv_bytes_per_token,
    load_model_shape,
    model_to_json,
)
from headroom.probes.safe_text import safe_text


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="headroom model",
        description="Print a local model's shape and weight size (read from disk, never downloaded).",
    )
    parser.add_argument("path", help="model directory, config.json, or org/name in the HF cache")
    parser.add_argument("--json", action="store_true", help="print JSON")
    return parser


def _size(n: int | None) -> str:
    if n is None:
        return "?"
    return f"{n / 1024**3:.2f} GiB" if n >= 1024**3 else f"{n / 1024**2:.1f} MiB"


def _count(n: int | None) -> str:
    if n is None:
        return "?"
    return f"{n / 1e9:.2f} B" if n >= 1e9 else f"{n / 1e6:.1f} M"


def _weights_line(shape) -> str:
    if shape.weights_complete is None:
        return "no safetensors files (parameter count unknown)"
    line = f"{_size(shape.weight_bytes)} in {shape.weight_files} safetensors file(s)"
    return line + (" (some shards missing)" if shape.weights_complete is False else "")


def _quant_line(shape) -> str:
    if not shape.quantization:
        return "none"
    bits = f", {shape.quantization_bits}-bit" if shape.quantization_bits else ""
    return f"{shape.quantization}{bits}"


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    try:
        shape = load_model_shape(args.path)
    except ModelConfigError as exc:
        print(f"headroom model: {safe_text(exc)}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(model_to_json(shape), indent=2, default=str))
        return 0
    kv = kv_bytes_per_token(shape)
    rows = [
        ("model", f"{shape.name}  ({shape.source}: {shape.config_path})"),
        ("architecture", shape.architecture or "?"),
        ("layers", shape.num_layers or "?"),
        ("hidden size", shape.hidden_size or "?"),
        ("intermediate size", shape.intermediate_size or "?"),
        ("attention heads", f"{shape.num_attention_heads or '?'} (KV heads {shape.num_kv_heads or '?'}, head_dim {shape.head_dim or '?'})"),
        ("vocab", shape.vocab_size or "?"),
        ("dtype", shape.dtype or "?"),
        ("max position embeddings", shape.max_position_embeddings or "?"),
        ("rope scaling", json.dumps(dict(shape.rope_scaling)) if shape.rope_scaling else "none"),
        ("quantization", _quant_line(shape)),
        ("experts", f"{shape.num_experts} ({shape.num_experts_per_token or '?'} per token)" if shape.num_experts else "dense"),
        ("parameters", _count(shape.param_count)),
        ("weights", _weights_line(shape)),
        ("KV cache per token", f"{kv / 1024:.1f} KiB at 16-bit ({kv} bytes)" if kv else "?"),
    ]  # fmt: skip
    if shape.unread:
        rows.append(("not in config.json", ", ".join(shape.unread)))
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        print(f"{label.ljust(width)}  {safe_text(value)}")  # config strings are untrusted
    return 0
