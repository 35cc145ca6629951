"""Simulated models, described by their real Hugging Face `config.json` fields.

The JSON files next to this module hold the shapes (`owner__name.json` for `owner/name`).
`headroom-sim/Wide-52H` is synthetic: a 52-head model that makes TP=8 fail the head check.
`tiny-llama` is the model the real vLLM-CPU captures were made with
(../shared/reference/real-vllm-on-cpu.md). Parameter counts follow from the shapes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

_HERE = Path(__file__).parent

DTYPE_BYTES = {
    "float32": 4,
    "float": 4,
    "bfloat16": 2,
    "float16": 2,
    "half": 2,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "fp8_inc": 1,
}


@dataclass(frozen=True)
class SimModel:
    """A model shape, enough for vLLM's memory accounting and the timing model."""

    name: str
    architecture: str
    num_layers: int
    hidden_size: int
    intermediate_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    max_position_embeddings: int
    dtype: str
    tie_word_embeddings: bool
    qkv_bias: bool

    @property
    def dtype_bytes(self) -> int:
        return DTYPE_BYTES.get(self.dtype, 2)

    def layer_params(self) -> int:
        """Weights of one decoder layer: attention projections, gated MLP, two norms."""
        q = self.hidden_size * self.num_heads * self.head_dim
        kv = 2 * self.hidden_size * self.num_kv_heads * self.head_dim
        o = self.num_heads * self.head_dim * self.hidden_size
        bias = (self.num_heads + 2 * self.num_kv_heads) * self.head_dim if self.qkv_bias else 0
        mlp = 3 * self.hidden_size * self.intermediate_size
        return q + kv + o + bias + mlp + 2 * self.hidden_size

    def embedding_params(self) -> int:
        return self.vocab_size * self.hidden_size

    def lm_head_params(self) -> int:
        return 0 if self.tie_word_embeddings else self.vocab_size * self.hidden_size

    @property
    def param_count(self) -> int:
        return (
            self.num_layers * self.layer_params()
            + self.embedding_params()
            + self.lm_head_params()
            + self.hidden_size  # final norm
        )

    @property
    def weight_bytes(self) -> int:
        return self.param_count * self.dtype_bytes


def model_from_config(config: dict, name: str) -> SimModel:
    """Build a SimModel from a config.json mapping; missing essentials raise ValueError."""
    try:
        hidden = int(config["hidden_size"])
        heads = int(config["num_attention_heads"])
        layers = int(config["num_hidden_layers"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{name}: config.json lacks a usable {exc} field") from exc
    kv_heads = int(config.get("num_key_value_heads") or heads)
    head_dim = int(config.get("head_dim") or hidden // heads)
    archs = config.get("architectures") or ["LlamaForCausalLM"]
    dtype = str(config.get("torch_dtype") or config.get("dtype") or "bfloat16")
    model_type = str(config.get("model_type", ""))
    return SimModel(
        name=name,
        architecture=str(archs[0]),
        num_layers=layers,
        hidden_size=hidden,
        intermediate_size=int(config.get("intermediate_size") or 4 * hidden),
        num_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        vocab_size=int(config.get("vocab_size") or 32000),
        max_position_embeddings=int(config.get("max_position_embeddings") or 2048),
        dtype=dtype,
        tie_word_embeddings=bool(config.get("tie_word_embeddings", False)),
        qkv_bias=bool(config.get("attention_bias", model_type == "qwen2")),
    )


def known_models() -> list[str]:
    """Names MODEL may take without a local directory."""
    return sorted(p.stem.replace("__", "/") for p in _HERE.glob("*.json"))


def load_model(name_or_path: str) -> SimModel:
    """A known name (`meta-llama/Llama-3.1-8B-Instruct`, also without `-Instruct`), a path
    ending in `tiny-llama`, or a local directory holding config.json."""
    path = Path(name_or_path).expanduser()
    if path.is_dir() and (path / "config.json").is_file():
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        return model_from_config(config, name_or_path)
    if path.is_file() and path.name == "config.json":
        return model_from_config(json.loads(path.read_text(encoding="utf-8")), name_or_path)
    wanted = name_or_path.rstrip("/").lower()
    for known in known_models():
        low = known.lower()
        if wanted in (low, low.removesuffix("-instruct")) or wanted.endswith("/" + low):
            config = json.loads((_HERE / f"{known.replace('/', '__')}.json").read_text())
            return model_from_config(config, name_or_path)
    raise ValueError(
        f"unknown model {name_or_path!r}: give a local directory with config.json or one of "
        + ", ".join(known_models())
    )
