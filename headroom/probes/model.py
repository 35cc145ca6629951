"""A model's shape from its config.json, found locally or in the Hugging Face cache.

Never downloads: `load_model_shape` accepts a directory, a config.json path, or a repo id
that is already in the HF cache (HF_HUB_CACHE / HUGGINGFACE_HUB_CACHE / HF_HOME/hub /
~/.cache/huggingface/hub). Parameter count and weight bytes come from safetensors headers
(model_weights.py reads only the 8-byte length and the JSON header, never tensors).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from headroom.probes.errors import UnreadableInput
from headroom.probes.model_weights import WeightSummary, summarize_weights
from headroom.probes.safe_text import safe_text
from headroom.probes.untrusted_json import UntrustedJsonError, load_json_file

__all__ = [
    "ModelConfigError",
    "ModelShape",
    "load_model_shape",
    "shape_from_config",
    "kv_bytes_per_token",
    "hf_cache_dirs",
    "model_to_json",
]


class ModelConfigError(UnreadableInput, ValueError):
    """The model's config could not be found or understood; the message says which.
    (In the probes' error tree, headroom.probes.errors; still a ValueError.)"""


@dataclass(frozen=True)
class ModelShape:
    """What sizing needs to know about a model. None = the config does not say."""

    name: str
    architecture: str | None
    num_layers: int
    hidden_size: int
    intermediate_size: int | None
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int | None
    dtype: str | None
    max_position_embeddings: int | None
    quantization: str | None  # quant_method: "awq", "gptq", "fp8", "compressed-tensors", ...
    rope_scaling: Mapping | None
    num_experts: int | None
    param_count: int | None
    weight_bytes: int | None
    source: str  # "local" | "hf-cache" | "config"
    # Added beyond the contract:
    config_path: str | None = None
    num_experts_per_token: int | None = None
    kv_lora_rank: int | None = None  # MLA models (DeepSeek V2/V3) cache a compressed latent
    qk_rope_head_dim: int | None = None
    sliding_window: int | None = None
    quantization_config: Mapping | None = None
    weight_files: int = 0
    weights_complete: bool | None = None  # False when index.json names shards not on disk
    # Filled by the doctor's built-in model table (the config reader leaves them None):
    moe_intermediate_size: int | None = None  # MoE: one expert's MLP width
    tie_word_embeddings: bool | None = None  # lm_head shares the embedding matrix


def _first(config: Mapping, *keys: str) -> Any:
    for key in keys:
        value = config.get(key)
        if value is not None:
            return value
    return None


# A size past 2**40 (layers, heads, widths, vocab, positions) is no model's: reading it as
# unknown keeps later arithmetic from overflowing a float (a config.json is untrusted input).
MAX_DIMENSION = 2**40
MAX_CONFIG_BYTES = 16 << 20  # real config.json files are a few KB


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and 0 <= value <= MAX_DIMENSION:
        return value
    return None


def _str(value: Any) -> str | None:
    """A config string, escaped for terminals (a config.json is anyone's text)."""
    return safe_text(value) if isinstance(value, str) else None


def _text_config(config: Mapping) -> Mapping:
    """Multimodal configs keep the language model under text_config (or llm_config)."""
    for key in ("text_config", "llm_config", "language_config"):
        nested = config.get(key)
        if isinstance(nested, Mapping) and "num_hidden_layers" not in config:
            return {**{k: v for k, v in config.items() if k != key}, **nested}
    return config


def shape_from_config(config: Mapping, name: str) -> ModelShape:
    """ModelShape from a parsed config.json. Raises ModelConfigError if the basics are missing."""
    if not isinstance(config, Mapping):
        raise ModelConfigError(f"{name}: config.json is not a JSON object")
    outer = config
    config = _text_config(config)
    layers = _int(_first(config, "num_hidden_layers", "n_layer", "num_layers", "n_layers"))
    hidden = _int(_first(config, "hidden_size", "n_embd", "d_model"))
    heads = _int(_first(config, "num_attention_heads", "n_head", "num_heads"))
    missing = [
        k for k, v in (("layers", layers), ("hidden size", hidden), ("heads", heads)) if not v
    ]
    if missing:
        raise ModelConfigError(f"{name}: config.json does not give the {', '.join(missing)}")
    assert layers and hidden and heads  # for type checkers; checked just above
    kv = _int(
        _first(config, "num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num")
    )
    if kv is None and config.get("multi_query") is True:
        kv = 1  # Falcon-style multi-query attention
    head_dim = _int(config.get("head_dim")) or hidden // heads
    architectures = outer.get("architectures")
    quant = outer.get("quantization_config") or config.get("quantization_config")
    quant = quant if isinstance(quant, Mapping) else None
    rope = config.get("rope_scaling")
    dtype = _first(outer, "torch_dtype", "dtype") or _first(config, "torch_dtype", "dtype")
    return ModelShape(
        name=safe_text(name),
        architecture=_str(architectures[0]) if isinstance(architectures, list) and architectures else None,
        num_layers=layers,
        hidden_size=hidden,
        intermediate_size=_int(_first(config, "intermediate_size", "ffn_hidden_size", "n_inner")),
        num_attention_heads=heads,
        num_kv_heads=kv or heads,
        head_dim=head_dim,
        vocab_size=_int(config.get("vocab_size")),
        dtype=_str(dtype),
        max_position_embeddings=_int(
            _first(config, "max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")
        ),
        quantization=_str(quant.get("quant_method")) if quant else None,
        rope_scaling=rope if isinstance(rope, Mapping) else None,
        num_experts=_int(_first(config, "num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")),
        param_count=None,
        weight_bytes=None,
        source="config",
        num_experts_per_token=_int(_first(config, "num_experts_per_tok", "moe_top_k", "top_k")),
        kv_lora_rank=_int(config.get("kv_lora_rank")),
        qk_rope_head_dim=_int(config.get("qk_rope_head_dim")),
        sliding_window=_int(config.get("sliding_window")),
        quantization_config=quant,
    )  # fmt: skip


def hf_cache_dirs(env: Mapping[str, str] | None = None) -> list[Path]:
    """Where the HF hub cache may be, in the order huggingface_hub looks."""
    env = os.environ if env is None else env
    dirs = []
    for key in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if env.get(key):
            dirs.append(Path(env[key]).expanduser())
    if env.get("HF_HOME"):
        dirs.append(Path(env["HF_HOME"]).expanduser() / "hub")
    dirs.append(Path(env.get("HOME") or "~").expanduser() / ".cache" / "huggingface" / "hub")
    return list(dict.fromkeys(dirs))


def _cached_snapshot(repo_id: str, env: Mapping[str, str] | None) -> tuple[Path | None, list[Path]]:
    """The snapshot dir of `org/name` (refs/main first, else the newest), and where we looked."""
    looked = []
    for cache in hf_cache_dirs(env):
        repo = cache / ("models--" + repo_id.replace("/", "--"))
        looked.append(repo)
        snapshots = repo / "snapshots"
        if not snapshots.is_dir():
            continue
        ref = repo / "refs" / "main"
        if ref.is_file():
            candidate = snapshots / ref.read_text(encoding="utf-8").strip()
            if (candidate / "config.json").is_file():
                return candidate, looked
        found = [s for s in snapshots.iterdir() if (s / "config.json").is_file()]
        if found:
            return max(found, key=lambda s: s.stat().st_mtime), looked
    return None, looked


def _read_config(path: Path) -> Mapping:
    try:
        data = load_json_file(path, max_bytes=MAX_CONFIG_BYTES)
    except OSError as exc:
        raise ModelConfigError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except UntrustedJsonError as exc:  # not JSON, too big, too deep
        raise ModelConfigError(str(exc)) from exc
    if not isinstance(data, Mapping):
        raise ModelConfigError(f"{path} is not a JSON object")
    return data


def load_model_shape(path_or_name: str, env: Mapping[str, str] | None = None) -> ModelShape:
    """Shape of a local model dir, a config.json, or an HF repo id already in the cache.

    Raises ModelConfigError with what was tried when nothing is found; never downloads.
    """
    given = Path(path_or_name).expanduser()
    if given.is_file():
        config_path, source, name = given, "local", given.parent.name or str(given)
    elif given.is_dir():
        config_path, source, name = given / "config.json", "local", given.name
        if not config_path.is_file():
            raise ModelConfigError(f"{given} has no config.json")
    else:
        snapshot, looked = _cached_snapshot(path_or_name.strip("/"), env)
        if snapshot is None:
            places = ", ".join(str(p) for p in looked)
            raise ModelConfigError(
                f"model {path_or_name!r} is not a local path and is not in the Hugging Face "
                f"cache (looked in {places}); Headroom never downloads models"
            )
        config_path, source, name = snapshot / "config.json", "hf-cache", path_or_name
    shape = shape_from_config(_read_config(config_path), name)
    weights: WeightSummary = summarize_weights(config_path.parent)
    return _with(shape, weights, source, str(config_path))


def _with(shape: ModelShape, weights: WeightSummary, source: str, config_path: str) -> ModelShape:
    from dataclasses import replace

    return replace(
        shape,
        source=source,
        config_path=config_path,
        param_count=weights.param_count,
        weight_bytes=weights.weight_bytes,
        weight_files=weights.files,
        weights_complete=weights.complete,
    )


def kv_bytes_per_token(shape: ModelShape, cache_dtype_bytes: int = 2) -> int:
    """KV-cache bytes one token needs across all layers (K and V; MLA caches one latent)."""
    if shape.kv_lora_rank:
        return (
            shape.num_layers
            * (shape.kv_lora_rank + (shape.qk_rope_head_dim or 0))
            * cache_dtype_bytes
        )
    return 2 * shape.num_layers * shape.num_kv_heads * shape.head_dim * cache_dtype_bytes


def model_to_json(shape: ModelShape) -> dict[str, Any]:
    """`headroom model --json`: every ModelShape field plus KV bytes per token at 2 bytes."""
    from dataclasses import asdict

    data = asdict(shape)
    data["kv_bytes_per_token_16bit"] = kv_bytes_per_token(shape)
    return data
