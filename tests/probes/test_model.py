"""Model shape from config.json and safetensors headers built in tmp_path; HF cache lookup."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.cli import model as model_cli
from headroom.probes.model import (
    ModelConfigError,
    describe_unread,
    hf_cache_dirs,
    kv_bytes_per_token,
    load_model_shape,
    shape_from_config,
)
from headroom.probes.model_weights import read_header, summarize_weights

LLAMA_8B = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "torch_dtype": "bfloat16",
    "rope_scaling": {
        "factor": 8.0,
        "rope_type": "llama3",
        "original_max_position_embeddings": 8192,
    },
}


def write_safetensors(
    path: Path, tensors: dict[str, tuple[str, list[int], int]], pad: int = 0
) -> None:
    """A safetensors file with a real header and `pad` zero bytes standing in for the data."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, (dtype, shape, nbytes) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    blob = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(blob)) + blob + b"\0" * pad)


def make_model(root: Path, config: dict, shards: int = 1) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_text(json.dumps(config))
    if shards == 1:
        write_safetensors(root / "model.safetensors", {"embed": ("BF16", [1000, 64], 128_000),
                                                       "lm_head": ("BF16", [1000, 64], 128_000)})  # fmt: skip
        return root
    weight_map = {}
    for i in range(shards):
        fname = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        write_safetensors(root / fname, {f"layer{i}.w": ("BF16", [512, 512], 524_288)})
        weight_map[f"layer{i}.w"] = fname
    index = {"metadata": {"total_size": shards * 524_288}, "weight_map": weight_map}
    (root / "model.safetensors.index.json").write_text(json.dumps(index))
    return root


def test_llama_shape_from_local_dir(tmp_path) -> None:
    shape = load_model_shape(str(make_model(tmp_path / "Llama-3.1-8B", LLAMA_8B)))
    assert shape.name == "Llama-3.1-8B" and shape.source == "local"
    assert shape.architecture == "LlamaForCausalLM"
    assert (shape.num_layers, shape.hidden_size, shape.num_attention_heads) == (32, 4096, 32)
    assert shape.num_kv_heads == 8 and shape.head_dim == 128 and shape.vocab_size == 128256
    assert shape.dtype == "bfloat16" and shape.max_position_embeddings == 131072
    assert shape.rope_scaling["rope_type"] == "llama3" and shape.num_experts is None
    assert shape.param_count == 128_000 and shape.weight_bytes == 256_000
    assert shape.weights_complete is True and shape.weight_files == 1
    assert kv_bytes_per_token(shape) == 2 * 32 * 8 * 128 * 2  # 128 KiB per token


def test_config_json_path_and_defaults(tmp_path) -> None:
    cfg = {
        "hidden_size": 768,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "dtype": "float16",
    }
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    shape = load_model_shape(str(tmp_path / "config.json"))
    assert shape.num_kv_heads == 12 and shape.head_dim == 64  # defaults: heads, hidden/heads
    assert shape.dtype == "float16" and shape.param_count is None and shape.weights_complete is None
    assert shape.name == tmp_path.name  # a model's config.json: named by its directory
    (tmp_path / "qwen3-8b.json").write_text(json.dumps(cfg))
    assert load_model_shape(str(tmp_path / "qwen3-8b.json")).name == "qwen3-8b"  # by the file


def test_sharded_checkpoint_sums_every_shard_and_notices_missing_ones(tmp_path) -> None:
    root = make_model(tmp_path / "m", LLAMA_8B, shards=3)
    shape = load_model_shape(str(root))
    assert shape.param_count == 3 * 512 * 512 and shape.weight_bytes == 3 * 524_288
    assert shape.weight_files == 3
    (root / "model-00002-of-00003.safetensors").unlink()
    partial = load_model_shape(str(root))
    assert partial.weights_complete is False and partial.param_count is None
    assert partial.weight_bytes == 3 * 524_288  # from the index's total_size


def test_header_is_read_without_touching_tensor_data(tmp_path) -> None:
    path = tmp_path / "big.safetensors"
    write_safetensors(path, {"w": ("F32", [10, 10], 400)}, pad=400)
    assert read_header(path)["w"]["shape"] == [10, 10]
    (tmp_path / "junk.safetensors").write_bytes(b"\xff" * 16)
    assert read_header(tmp_path / "junk.safetensors") is None
    (tmp_path / "short.safetensors").write_bytes(b"\x01")
    assert read_header(tmp_path / "short.safetensors") is None


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=64))
def test_random_bytes_never_break_the_header_reader(tmp_path_factory, data) -> None:
    path = tmp_path_factory.mktemp("st") / "x.safetensors"
    path.write_bytes(data)
    read_header(path)
    assert summarize_weights(path.parent).files in (0, 1)


def test_moe_quantized_multimodal_and_mla_configs() -> None:
    mixtral = shape_from_config(
        {**LLAMA_8B, "num_local_experts": 8, "num_experts_per_tok": 2}, "mx"
    )
    assert mixtral.num_experts == 8 and mixtral.num_experts_per_token == 2
    qwen_moe = shape_from_config({**LLAMA_8B, "num_experts": 128}, "q")
    assert qwen_moe.num_experts == 128
    awq = shape_from_config(
        {**LLAMA_8B, "quantization_config": {"quant_method": "awq", "bits": 4}}, "a"
    )
    assert awq.quantization == "awq" and awq.quantization_config["bits"] == 4
    gemma3 = {
        "architectures": ["Gemma3ForConditionalGeneration"],
        "torch_dtype": "bfloat16",
        "text_config": {"hidden_size": 2560, "num_hidden_layers": 34, "num_attention_heads": 8,
                        "num_key_value_heads": 4, "head_dim": 256, "vocab_size": 262208},
        "vision_config": {"hidden_size": 1152, "num_hidden_layers": 27},
    }  # fmt: skip
    shape = shape_from_config(gemma3, "gemma3")
    assert shape.architecture == "Gemma3ForConditionalGeneration" and shape.num_layers == 34
    assert shape.head_dim == 256 and shape.num_kv_heads == 4 and shape.dtype == "bfloat16"
    deepseek = {**LLAMA_8B, "n_routed_experts": 256, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
                "num_hidden_layers": 61}  # fmt: skip
    ds = shape_from_config(deepseek, "ds")
    assert ds.num_experts == 256 and kv_bytes_per_token(ds) == 61 * (512 + 64) * 2
    falcon = shape_from_config(
        {"hidden_size": 4544, "n_layer": 32, "n_head": 71, "multi_query": True}, "f"
    )
    assert falcon.num_kv_heads == 1 and falcon.head_dim == 64


@pytest.mark.parametrize(
    ("config", "unread"),
    [
        ({}, ("num_layers", "hidden_size", "num_attention_heads")),
        ({"hidden_size": 10}, ("num_layers", "num_attention_heads")),
        ({"num_hidden_layers": "32", "hidden_size": 64, "n_head": 4}, ("num_layers",)),
    ],
)
def test_missing_basics_are_unknown_and_named(config, unread) -> None:
    shape = shape_from_config(config, "broken")
    assert shape.unread == unread and not shape.sizable
    assert shape.num_layers is None or "num_layers" not in unread
    assert kv_bytes_per_token(shape) is None


def test_a_config_that_is_not_an_object_is_an_error() -> None:
    with pytest.raises(ModelConfigError):
        shape_from_config([], "broken")  # type: ignore[arg-type]


def test_hf_cache_lookup_prefers_refs_main(tmp_path) -> None:
    repo = tmp_path / "hub" / "models--meta-llama--Llama-3.1-8B"
    old = make_model(repo / "snapshots" / "aaaa", {**LLAMA_8B, "num_hidden_layers": 1})
    make_model(repo / "snapshots" / "bbbb", LLAMA_8B)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("bbbb\n")
    old.touch()
    env = {"HF_HOME": str(tmp_path), "HOME": str(tmp_path / "home")}
    shape = load_model_shape("meta-llama/Llama-3.1-8B", env=env)
    assert shape.source == "hf-cache" and shape.num_layers == 32
    assert shape.name == "meta-llama/Llama-3.1-8B" and "bbbb" in (shape.config_path or "")


def test_hf_cache_env_order_and_not_found_message(tmp_path) -> None:
    env = {"HF_HUB_CACHE": "/a", "HUGGINGFACE_HUB_CACHE": "/b", "HF_HOME": "/c", "HOME": "/h"}
    assert hf_cache_dirs(env) == [
        Path("/a"),
        Path("/b"),
        Path("/c/hub"),
        Path("/h/.cache/huggingface/hub"),
    ]
    with pytest.raises(ModelConfigError, match="never downloads"):
        load_model_shape("nobody/nothing", env={"HOME": str(tmp_path)})


def test_bad_json_is_a_model_config_error(tmp_path) -> None:
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(ModelConfigError, match="not valid JSON"):
        load_model_shape(str(tmp_path))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ModelConfigError, match="no config.json"):
        load_model_shape(str(empty))


def test_cli_prints_text_and_json(tmp_path, capsys) -> None:
    root = make_model(tmp_path / "Llama-3.1-8B", LLAMA_8B)
    assert model_cli.main([str(root)]) == 0
    out = capsys.readouterr().out
    assert "KV heads 8" in out and "LlamaForCausalLM" in out and "128.0 KiB" in out
    assert model_cli.main([str(root), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["num_kv_heads"] == 8 and data["kv_bytes_per_token_16bit"] == 131072
    assert model_cli.main([str(tmp_path / "missing")]) == 1
    assert "never downloads" in capsys.readouterr().err


def test_modality_keys_say_what_the_config_reads_besides_text() -> None:
    """A vision/audio sub-config or a true is_encoder_decoder is kept (the doctor's model
    family reads it); an empty sub-config or a false flag says nothing."""
    gemma3 = {**LLAMA_8B, "architectures": ["Gemma3ForConditionalGeneration"],
              "vision_config": {"hidden_size": 1152}}  # fmt: skip
    assert shape_from_config(gemma3, "g").modality_keys == ("vision_config",)
    whisper = {**LLAMA_8B, "is_encoder_decoder": True, "audio_config": {"d_model": 1280}}
    assert shape_from_config(whisper, "w").modality_keys == ("audio_config", "is_encoder_decoder")
    plain = {**LLAMA_8B, "vision_config": {}, "is_encoder_decoder": False}
    assert shape_from_config(plain, "p").modality_keys == ()


@pytest.mark.parametrize("key", ["num_key_value_heads", "head_dim"])
def test_a_spoiled_derived_fact_is_named_not_silently_dropped(key) -> None:
    """A config that writes 0 KV heads (or a 0 head size) gives no default either: the shape
    is not sizable and says which fact it could not use (found by the hostile-field property
    test, tests/probes/test_model_untrusted.py, with num_key_value_heads = 0)."""
    shape = shape_from_config({**LLAMA_8B, key: 0}, "spoiled")
    assert not shape.sizable
    assert shape.unread == ({"num_key_value_heads": "num_kv_heads"}.get(key, key),)
    assert "usable" in (describe_unread(shape) or "")
