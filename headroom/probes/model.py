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
from headroom.probes.model_config import read_config
from headroom.probes.model_weights import WeightSummary, summarize_weights
from headroom.probes.safe_text import safe_text
from headroom.probes.untrusted_json import UntrustedJsonError, load_json_file

__all__ = [
    "ModelConfigError",
    "ModelShape",
    "load_model_shape",
    "shape_from_config",
    "describe_unread",
    "kv_bytes_per_token",
    "hf_cache_dirs",
    "model_to_json",
]


# A config.json is untrusted input: see model_config.MAX_DIMENSION for the size bound.
MAX_CONFIG_BYTES = 16 << 20  # real config.json files are a few KB


class ModelConfigError(UnreadableInput, ValueError):
    """The model's config could not be found or understood; the message says which.
    (In the probes' error tree, headroom.probes.errors; still a ValueError.)"""


@dataclass(frozen=True)
class ModelShape:
    """What sizing needs to know about a model. None = the config does not say (see `unread`)."""

    name: str
    architecture: str | None
    num_layers: int | None
    hidden_size: int | None
    intermediate_size: int | None
    num_attention_heads: int | None
    num_kv_heads: int | None
    head_dim: int | None
    vocab_size: int | None
    dtype: str | None
    # the length vLLM derives from the config when --max-model-len is not given (the smallest
    # length key, times a yarn/linear/dynamic rope factor): probes.model_config.derived_max_len
    max_position_embeddings: int | None
    quantization: str | None  # quant_method: "awq", "gptq", "fp8", "compressed-tensors", ...
    rope_scaling: Mapping | None
    num_experts: int | None
    param_count: int | None
    weight_bytes: int | None
    source: str  # "local" | "hf-cache" | "hub" | "config" | "built-in table"
    # Added beyond the contract:
    config_path: str | None = None
    num_experts_per_token: int | None = None
    kv_lora_rank: int | None = None  # MLA models (DeepSeek V2/V3) cache a compressed latent
    qk_rope_head_dim: int | None = None
    sliding_window: int | None = None
    quantization_config: Mapping | None = None
    weight_files: int = 0
    weights_complete: bool | None = None  # False when index.json names shards not on disk
    moe_intermediate_size: int | None = None  # MoE: one expert's MLP width
    tie_word_embeddings: bool | None = None  # lm_head shares the embedding matrix
    quantization_bits: int | None = None  # the checkpoint's weight bits (4 for AWQ/GPTQ int4)
    num_shared_experts: int | None = None  # DeepSeek/Qwen-MoE experts every token passes
    shared_expert_intermediate_size: int | None = None
    unread: tuple[str, ...] = ()  # core facts the config did not give (sizing needs them)
    assumed: tuple[str, ...] = ()  # facts taken from transformers' defaults for the model type
    modality_keys: tuple[str, ...] = ()  # vision_config / audio_config / is_encoder_decoder
    # Hybrid models (linear attention or Mamba between attention layers): the layers that
    # cache K/V per token; None = every layer does.
    kv_layers: int | None = None

    @property
    def sizable(self) -> bool:
        """Whether memory and head-divisibility arithmetic can run on this shape."""
        return None not in (
            self.num_layers,
            self.hidden_size,
            self.num_attention_heads,
            self.num_kv_heads,
            self.head_dim,
        )


def shape_from_config(config: Mapping, name: str) -> ModelShape:
    """ModelShape from a parsed config.json, in any dialect read_config knows. A fact it
    cannot find is None and named in `unread`; raises ModelConfigError only when `config` is
    not a JSON object at all."""
    if not isinstance(config, Mapping):
        raise ModelConfigError(f"{name}: config.json is not a JSON object")
    facts = read_config(config)
    v = facts.values
    quant = facts.quantization
    return ModelShape(
        name=safe_text(name),
        architecture=facts.architecture,
        num_layers=v["num_layers"] or None,
        hidden_size=v["hidden_size"] or None,
        intermediate_size=v["intermediate_size"] or None,
        num_attention_heads=v["num_attention_heads"] or None,
        num_kv_heads=v["num_kv_heads"] or None,
        head_dim=v["head_dim"] or None,
        vocab_size=v["vocab_size"] or None,
        dtype=facts.dtype,
        max_position_embeddings=v["max_position_embeddings"] or None,
        quantization=quant.method if quant else None,
        rope_scaling=facts.rope_scaling,
        num_experts=v["num_experts"] or None,
        param_count=None,
        weight_bytes=None,
        source="config",
        num_experts_per_token=v["num_experts_per_token"] or None,
        kv_lora_rank=v["kv_lora_rank"] or None,
        qk_rope_head_dim=v["qk_rope_head_dim"],
        sliding_window=v["sliding_window"] or None,
        quantization_config=facts.quantization_config,
        moe_intermediate_size=v["moe_intermediate_size"] or None,
        tie_word_embeddings=facts.tie_word_embeddings,
        quantization_bits=quant.bits if quant else None,
        num_shared_experts=v["num_shared_experts"],
        shared_expert_intermediate_size=v["shared_expert_intermediate_size"] or None,
        unread=facts.unread,
        assumed=facts.assumed,
        modality_keys=facts.modality_keys,
        kv_layers=v["kv_layers"],
    )


def describe_unread(shape: ModelShape) -> str | None:
    """One sentence naming what the config did not give, or None when it gave everything."""
    if not shape.unread:
        return None
    names = {
        "num_layers": "the layer count",
        "hidden_size": "the hidden size",
        "num_attention_heads": "the attention heads",
        "num_kv_heads": "a usable KV head count",
        "head_dim": "a usable head size",
    }
    missing = ", ".join(names.get(n, n) for n in shape.unread)
    return f"model config of {shape.name} does not give {missing}: sizing skipped"


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
        # a model's own config.json is named by its directory; a config saved under another
        # name (qwen3-8b.json in a folder of configs) by that name
        named = given.parent.name if given.name == "config.json" else given.stem
        config_path, source, name = given, "local", named or str(given)
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


def kv_bytes_per_token(shape: ModelShape, cache_dtype_bytes: int = 2) -> int | None:
    """KV-cache bytes one token needs across all layers (K and V; MLA caches one latent).
    None when the config did not give the layer count or the heads."""
    if not shape.num_layers:
        return None
    if shape.kv_lora_rank:
        return (
            (shape.kv_layers or shape.num_layers)
            * (shape.kv_lora_rank + (shape.qk_rope_head_dim or 0))
            * cache_dtype_bytes
        )
    if not shape.num_kv_heads or not shape.head_dim:
        return None
    layers = shape.kv_layers or shape.num_layers
    return 2 * layers * shape.num_kv_heads * shape.head_dim * cache_dtype_bytes


def model_to_json(shape: ModelShape) -> dict[str, Any]:
    """`headroom model --json`: every ModelShape field plus KV bytes per token at 2 bytes."""
    from dataclasses import asdict

    data = asdict(shape)
    data["kv_bytes_per_token_16bit"] = kv_bytes_per_token(shape)
    return data
