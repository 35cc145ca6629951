"""config.json dialects: real configs of a dozen architectures read into one ModelShape."""

from __future__ import annotations

import json

import pytest
from support.fixtures import FIXTURES

from headroom.probes.model import kv_bytes_per_token, shape_from_config
from headroom.probes.model_config import read_quantization

CONFIGS = FIXTURES / "model-configs"


def real(name: str) -> dict:
    return json.loads((CONFIGS / f"{name}.json").read_text(encoding="utf-8"))


# name: (layers, hidden, heads, kv heads, head_dim, intermediate, vocab, experts, expert width)
EXPECTED = {
    "qwen3-8b": (36, 4096, 32, 8, 128, 12288, 151936, None, None),
    "llama-3-70b": (80, 8192, 64, 8, 128, 28672, 128256, None, None),
    "deepseek-r1": (61, 7168, 128, 128, 128, 18432, 129280, 256, 2048),
    "deepseek-v2.5": (60, 5120, 128, 128, 128, 12288, 102400, 160, 1536),
    "qwen2.5-vl-3b": (36, 2048, 16, 2, 128, 11008, 151936, None, None),
    "minimax-m1": (80, 6144, 64, 8, 128, 9216, 200064, 32, None),
    "gpt2-large": (36, 1280, 20, 20, 64, None, 50257, None, None),
    "mixtral-8x7b": (32, 4096, 32, 8, 128, 14336, 32000, 8, None),
    "chatglm3-6b": (28, 4096, 32, 2, 128, 13696, 65024, None, None),
    "falcon-40b-instruct": (60, 8192, 128, 8, 64, None, 65024, None, None),
    "internvl3-1b": (24, 896, 14, 2, 64, 4864, 151674, None, None),
    "llava-1.5-7b-hf": (32, 4096, 32, 32, 128, 11008, 32064, None, None),
    "qwen3-30b-a3b": (48, 2048, 32, 4, 128, 6144, 151936, 128, 768),
    "qwen2.5-32b-instruct-gptq-int4": (64, 5120, 40, 8, 128, 27648, 152064, None, None),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_dialect_gives_the_same_facts(name):
    shape = shape_from_config(real(name), name)
    got = (
        shape.num_layers,
        shape.hidden_size,
        shape.num_attention_heads,
        shape.num_kv_heads,
        shape.head_dim,
        shape.intermediate_size,
        shape.vocab_size,
        shape.num_experts,
        shape.moe_intermediate_size,
    )
    assert got == EXPECTED[name]
    assert shape.sizable and shape.unread == ()


def test_vision_tower_keys_never_leak_into_the_language_model():
    # InternVL3's vision_config has num_experts 8 and moe_intermediate_size 768 of its own.
    shape = shape_from_config(real("internvl3-1b"), "internvl")
    assert shape.num_experts is None and shape.moe_intermediate_size is None
    # llm_config: max_position_embeddings 32768 with a dynamic rope factor 2.0, which vLLM
    # multiplies in (_get_and_verify_max_len): the length it derives is 65536
    assert shape.architecture == "InternVLChatModel" and shape.max_position_embeddings == 65536


def test_nested_text_config_written_as_a_diff_uses_transformers_defaults_and_says_so():
    shape = shape_from_config(real("llava-1.5-7b-hf"), "llava")
    assert set(shape.assumed) == {
        "num_layers",
        "hidden_size",
        "intermediate_size",
        "num_attention_heads",
    }
    assert shape.max_position_embeddings == 4096 and shape.dtype == "float16"


def test_moe_and_mla_facts():
    ds = shape_from_config(real("deepseek-r1"), "r1")
    assert ds.num_shared_experts == 1 and ds.num_experts_per_token == 8
    assert ds.kv_lora_rank == 512 and kv_bytes_per_token(ds) == 61 * (512 + 64) * 2
    v25 = shape_from_config(real("deepseek-v2.5"), "v2.5")
    assert v25.num_shared_experts == 2
    qwen = shape_from_config(real("qwen3-30b-a3b"), "q")
    assert qwen.num_experts_per_token == 8 and qwen.tie_word_embeddings is False
    vl = shape_from_config(real("qwen2.5-vl-3b"), "vl")
    assert vl.tie_word_embeddings is True  # the nested text_config's, not the outer default


@pytest.mark.parametrize(
    ("name", "method", "bits"),
    [
        ("deepseek-r1", "fp8", 8),
        ("qwen2.5-32b-instruct-gptq-int4", "gptq", 4),
        ("qwen3-8b", None, None),
    ],
)
def test_quantization_method_and_bits(name, method, bits):
    shape = shape_from_config(real(name), name)
    assert (shape.quantization, shape.quantization_bits) == (method, bits)


def test_quantization_blocks_of_other_methods():
    kimi = json.loads(
        (CONFIGS / "quantization" / "kimi-k2-thinking-compressed-tensors.json").read_text()
    )
    awq = json.loads((CONFIGS / "quantization" / "qwen3.6-35b-a3b-awq.json").read_text())
    assert (read_quantization(kimi).method, read_quantization(kimi).bits) == (
        "compressed-tensors",
        4,
    )
    assert (read_quantization(awq).method, read_quantization(awq).bits) == ("awq", 4)
    bnb = read_quantization({"load_in_4bit": True, "bnb_4bit_quant_type": "nf4"})
    assert (bnb.method, bnb.bits) == ("bitsandbytes", 4)
    assert read_quantization({"unrelated": 1}) is None and read_quantization("fp8") is None


def test_falcon_7b_style_multi_query_without_a_group_count():
    # Falcon-7B's RW dialect: n_layer/n_head and multi_query, no KV head count.
    falcon = shape_from_config(
        {"hidden_size": 4544, "n_layer": 32, "n_head": 71, "multi_query": True}, "f"
    )
    assert falcon.num_kv_heads == 1 and falcon.head_dim == 64
    glm_without_mqa = {**real("chatglm3-6b"), "multi_query_attention": False}
    assert shape_from_config(glm_without_mqa, "g").num_kv_heads == 32
