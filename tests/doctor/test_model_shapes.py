"""The built-in model table: every row's arithmetic holds together, names people write find
their row, and `headroom plan NAME` works for rows added from the model families vLLM serves."""

from __future__ import annotations

import pytest

from headroom.cli import plan
from headroom.doctor.model_shapes import ALL, COMPUTED_PARAMS, shape_params
from headroom.doctor.model_table import find_model, known_model_names
from headroom.probes.model import kv_bytes_per_token

ROWS = [facts for facts, _ in ALL]
IDS = [facts.name for facts in ROWS]


@pytest.mark.parametrize("facts", ROWS, ids=IDS)
def test_every_row_can_be_sized_and_its_heads_group_evenly(facts):
    assert facts.sizable
    assert facts.num_attention_heads % facts.num_kv_heads == 0
    assert facts.param_count and facts.param_count > 1e8
    assert facts.max_position_embeddings and facts.max_position_embeddings >= 2048


@pytest.mark.parametrize("facts", [f for f in ROWS if not f.kv_lora_rank], ids=lambda f: f.name)
def test_kv_bytes_per_token_is_two_tensors_per_layer_per_kv_head(facts):
    layers = facts.kv_layers or facts.num_layers
    expected = 2 * layers * facts.num_kv_heads * facts.head_dim * 2
    assert kv_bytes_per_token(facts) == expected


@pytest.mark.parametrize(
    ("name", "bytes_per_token"),
    [
        # 2 (K and V) x layers x KV heads x head_dim x 2 bytes, from each config.json
        ("meta-llama/Llama-2-7b-chat-hf", 2 * 32 * 32 * 128 * 2),
        ("meta-llama/Llama-2-70b-hf", 2 * 80 * 8 * 128 * 2),
        ("Qwen/Qwen2.5-0.5B-Instruct", 2 * 24 * 2 * 64 * 2),
        ("google/gemma-3-27b-it", 2 * 62 * 16 * 128 * 2),
        ("tiiuae/falcon-7b-instruct", 2 * 32 * 1 * 64 * 2),
        ("openai/gpt-oss-20b", 2 * 24 * 8 * 64 * 2),
    ],
)
def test_kv_bytes_of_rows_read_from_config_json(name, bytes_per_token):
    assert kv_bytes_per_token(find_model(name)) == bytes_per_token


def test_a_hybrid_rows_kv_counts_its_attention_layers_only():
    # Qwen3.5/3.6 27B: 64 layers, every fourth full attention (layer_types); the Gated
    # DeltaNet layers keep a fixed state per sequence, no K/V per token
    qwen = find_model("Qwen/Qwen3.6-27B")
    assert (qwen.num_layers, qwen.kv_layers) == (64, 16)
    assert kv_bytes_per_token(qwen) == 2 * 16 * 4 * 256 * 2
    assert 26.5e9 < qwen.param_count < 28e9  # the name's 27B: text 26.9 B + vision 0.46 B
    nxt = find_model("Qwen/Qwen3-Next-80B-A3B-Instruct")
    assert 78e9 < nxt.param_count < 81e9 and nxt.kv_layers == 12


def test_an_mla_rows_kv_is_one_latent_per_layer():
    # Kimi K2 caches kv_lora_rank 512 + qk_rope_head_dim 64 per layer, like DeepSeek-V3
    assert kv_bytes_per_token(find_model("moonshotai/Kimi-K2-Instruct")) == 61 * (512 + 64) * 2


def test_a_moe_rows_count_is_above_what_one_token_touches():
    for facts in ROWS:
        if facts.num_experts:
            assert facts.num_experts_per_token < facts.num_experts
            dense_part = shape_params(
                facts.num_layers,
                facts.hidden_size,
                facts.moe_intermediate_size * facts.num_experts_per_token,
                facts.num_attention_heads,
                facts.num_kv_heads,
                facts.head_dim,
                facts.vocab_size,
            )
            assert facts.param_count > dense_part, facts.name


def test_a_multimodal_rows_count_carries_its_vision_tower():
    qwen_vl = find_model("Qwen/Qwen2.5-VL-7B-Instruct")
    text_only = shape_params(28, 3584, 18944, 28, 4, 128, 152064, qkv_bias=True)
    assert 0.5e9 < qwen_vl.param_count - text_only < 0.8e9
    mllama = find_model("meta-llama/Llama-3.2-11B-Vision-Instruct")
    assert 10.4e9 < mllama.param_count < 10.8e9  # text 9.78 B + vision 0.82 B
    gemma = find_model("google/gemma-3-4b-it")
    assert 4.2e9 < gemma.param_count < 4.4e9  # the card's 4.3 B: text 3.88 B + SigLIP 0.42 B


def test_phi_3_5_moe_matches_its_cards_total_and_active_counts():
    moe = find_model("microsoft/Phi-3.5-MoE-instruct")
    total = shape_params(32, 4096, 6400 * 16, 32, 8, 128, 32064)
    active = shape_params(32, 4096, 6400 * 2, 32, 8, 128, 32064)
    assert abs(total - moe.param_count) / moe.param_count < 0.01  # the card: 41.9 B
    assert 6.5e9 < active < 6.7e9  # the card: 6.6 B active


def test_computed_counts_are_marked_and_stated_ones_are_not():
    assert "Llama-2-7B" in COMPUTED_PARAMS
    assert "Llama-3.1-8B" not in COMPUTED_PARAMS
    assert COMPUTED_PARAMS <= set(known_model_names())


@pytest.mark.parametrize(("facts", "aliases"), ALL, ids=IDS)
def test_every_alias_finds_its_own_row(facts, aliases):
    for alias in (facts.name, *aliases):
        found = find_model(alias)
        assert found is not None, alias
        assert (found.num_layers, found.hidden_size, found.vocab_size) == (
            facts.num_layers,
            facts.hidden_size,
            facts.vocab_size,
        ), alias


@pytest.mark.parametrize(
    ("written", "row", "quant"),
    [
        ("meta-llama/Llama-2-13b-chat-hf", "Llama-2-13B", None),
        ("lmsys/vicuna-7b-v1.5", "Llama-2-7B", None),
        ("TheBloke/CodeLlama-7B-AWQ", "CodeLlama-7B", "awq"),
        ("codellama/CodeLlama-34b-Instruct-hf", "CodeLlama-34B", None),
        ("Qwen/Qwen2.5-Coder-7B-Instruct", "Qwen2.5-7B", None),
        ("Qwen/Qwen2.5-Coder-32B-Instruct", "Qwen2.5-32B", None),
        ("Qwen/QwQ-32B-AWQ", "QwQ-32B", "awq"),
        ("deepseek-ai/DeepSeek-R1-Distill-Qwen-14B", "DeepSeek-R1-Distill-Qwen-14B", None),
        ("Qwen/Qwen2.5-32B-Instruct-INT8-W8A16", "Qwen2.5-32B", "int8"),
        ("neuralmagic/Qwen2-0.5B-Instruct-FP8", "Qwen2.5-0.5B", "fp8"),
        ("internlm/internlm2-chat-7b", "InternLM2.5-7B", None),
        ("internlm/internlm2_5-7b-chat", "InternLM2.5-7B", None),
        ("TinyLlama/TinyLlama-1.1B-Chat-v1.0", "TinyLlama-1.1B", None),
        ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "Llama-4-Scout-17B-16E", None),
        ("unsloth/gemma-3-12b-it-bnb-4bit", "Gemma-3-12B", "bitsandbytes"),
        ("OpenGVLab/InternVL2_5-8B", "InternVL2.5-8B", None),
        ("openbmb/MiniCPM-V-2_6", "MiniCPM-V-2.6", None),
        ("meta-llama/Llama-3.2-11B-Vision-Instruct", "Llama-3.2-11B-Vision", None),
        ("Qwen/Qwen2-VL-7B-Instruct", "Qwen2-VL-7B", None),
        ("THUDM/glm-4-9b-chat", "GLM-4-9B", None),
        ("baichuan-inc/Baichuan2-13B-Chat", "Baichuan2-13B", None),
        ("Qwen/Qwen1.5-32B-Chat-GPTQ-Int4", "Qwen1.5-32B", "gptq"),
        ("mistralai/Mistral-Nemo-Instruct-2407", "Mistral-Nemo-12B", None),
        ("Qwen/Qwen1.5-72B-Chat", "Qwen1.5-72B", None),
        ("moonshotai/Kimi-K2-Instruct", "Kimi-K2", "fp8"),
        ("deepseek-ai/DeepSeek-R1-0528", "DeepSeek-V3", "fp8"),
        ("MiniMaxAI/MiniMax-M2", "MiniMax-M2.5", "fp8"),
        ("meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8", "Llama-4-Maverick-17B-128E", "fp8"),
        ("Qwen/Qwen3-VL-30B-A3B-Thinking", "Qwen3-VL-30B-A3B", None),
        ("mistralai/Mistral-Large-Instruct-2411", "Mistral-Large-123B", None),
        ("nvidia/Llama-3.1-Nemotron-70B-Instruct-HF", "Llama-3.1-70B", None),
        ("allenai/OLMo-2-1124-13B-Instruct", "OLMo-2-13B", None),
        ("TheBloke/Mixtral-8x7B-Instruct-v0.1-GPTQ", "Mixtral-8x7B", "gptq"),
        ("mistralai/Mistral-7B-Instruct-v0.2", "Mistral-7B", None),
        ("Qwen/Qwen3-30B-A3B-Instruct-2507", "Qwen3-30B-A3B-2507", None),
        ("Qwen/Qwen3-4B-Thinking-2507-FP8", "Qwen3-4B-2507", "fp8"),
        ("Qwen/Qwen3-30B-A3B-Instruct", "Qwen3-30B-A3B", None),
        ("mistralai/Mistral-Small-3.1-24B-Instruct-2503", "Mistral-Small-3.1-24B", None),
        ("mistralai/Mistral-Small-24B-Instruct-2501", "Mistral-Small-24B", None),
        ("Qwen/Qwen1.5-14B-Chat-AWQ", "Qwen1.5-14B", "awq"),
        ("microsoft/Phi-3.5-MoE-instruct", "Phi-3.5-MoE", None),
        ("microsoft/Phi-3-medium-4k-instruct", "Phi-3-medium-4k", None),
        ("mistralai/Ministral-8B-Instruct-2410", "Ministral-8B", None),
        ("deepseek-ai/DeepSeek-Coder-V2-Lite-Instruct", "DeepSeek-V2-Lite", None),
    ],
)
def test_names_people_write_find_the_row(written, row, quant):
    found = find_model(written)
    expected = find_model(row)
    assert found is not None and expected is not None
    assert (found.num_layers, found.hidden_size, found.max_position_embeddings) == (
        expected.num_layers,
        expected.hidden_size,
        expected.max_position_embeddings,
    )
    assert found.quantization == quant


def test_llama_generations_keep_their_own_lengths():
    # LLaMA 2048, Llama 2 4096, Llama 3 8192, Llama 3.1 131072: a name finds its generation's
    assert find_model("lmsys/vicuna-7b-v1.3").max_position_embeddings == 2048  # LLaMA-based
    assert find_model("lmsys/vicuna-7b-v1.5").max_position_embeddings == 4096  # Llama 2-based
    assert find_model("meta-llama/Meta-Llama-3-8B-Instruct").max_position_embeddings == 8192
    assert find_model("meta-llama/Meta-Llama-3.1-8B-Instruct").max_position_embeddings == 131072
    assert find_model("huggyllama/llama-30b").num_attention_heads == 52


def test_a_release_tag_finds_its_own_row_before_the_base_one():
    assert find_model("Qwen/Qwen3-4B-Instruct-2507").max_position_embeddings == 262144
    assert find_model("Qwen/Qwen3-4B").max_position_embeddings == 40960
    assert find_model("deepseek-ai/DeepSeek-V3-0324").num_layers == 61


def test_an_unknown_name_is_still_unknown():
    assert find_model("acme/NotAModel-7B") is None
    assert find_model("v2") is None
    assert find_model("Qwen/Qwen2.5-VL-3000B") is None


@pytest.mark.parametrize(
    ("model", "gpus"),
    [
        ("meta-llama/Llama-2-70b-chat-hf", "4xA100-80GB"),
        ("google/gemma-3-27b-it", "2xL40S"),
        ("openai/gpt-oss-20b", "1xH100"),
        ("Qwen/Qwen2.5-VL-7B-Instruct", "1xRTX4090"),
        ("tiiuae/falcon-40b", "4xA100-40GB"),
    ],
)
def test_plan_sizes_a_new_name(model, gpus, capsys):
    code = plan.main([model, "--gpus", gpus])
    out = capsys.readouterr().out
    assert code in (0, 1), out
    assert "TP lower bound" in out and "per token" in out
