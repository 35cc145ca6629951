"""Names people write for a model find its row in the built-in table, with the checkpoint's
quantization; a name the table does not hold stays unknown; no text makes the lookup raise.

The name forms are the ones vLLM command lines and incident threads use (HF ids, ModelScope
ids, local paths, HF cache directories, GGUF file names, quantized re-uploads)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.doctor.model_bytes import weight_bytes_per_param, weights_gib_per_gpu
from headroom.doctor.model_shapes import ALL
from headroom.doctor.model_table import find_model
from headroom.probes.model import ModelShape

ROW_NAMES = [facts.name for facts, _ in ALL]


@pytest.mark.parametrize(
    ("written", "row"),
    [
        ("/models/Qwen2-7B", "Qwen2.5-7B"),
        ("/models/Qwen2-7B/", "Qwen2.5-7B"),
        ("/models--Qwen--Qwen1.5-7B-Chat", "Qwen1.5-7B"),
        (
            "/root/.cache/huggingface/hub/models--Qwen--Qwen1.5-7B-Chat/snapshots/"
            "5f4f5e69ac7f1d508f8369e977de208b4803444b",
            "Qwen1.5-7B",
        ),
        ("qwen/Qwen1.5-72B-Chat", "Qwen1.5-72B"),  # ModelScope's lower-case org
        ("qwen-1.5-72B", "Qwen1.5-72B"),
        ("Meta-Llama-3.1-8B-Instruct", "Llama-3.1-8B"),
        ("llama2_70b", "Llama-2-70B"),
        ("llama 3.2 3b", "Llama-3.2-3B"),
        ("Llama 3.1 405b instruct", "Llama-3.1-405B"),
        ("qwen2.5vl 7B", "Qwen2.5-VL-7B"),
        ("Yi-34B-Chat", "Yi-34B"),
        ("C:\\models\\Mistral-7B-Instruct-v0.2", "Mistral-7B"),
        ("mistral-7b-finetune", "Mistral-7B"),
    ],
)
def test_written_forms_find_their_row(written, row):
    found = find_model(written)
    assert found is not None, written
    expected = find_model(row)
    assert (found.num_layers, found.hidden_size, found.max_position_embeddings) == (
        expected.num_layers,
        expected.hidden_size,
        expected.max_position_embeddings,
    )


@pytest.mark.parametrize(
    ("written", "method", "bits"),
    [
        ("Qwen/Qwen2.5-72B-Instruct-AWQ", "awq", 4),
        ("Qwen/Qwen1.5-7B-Chat-GPTQ-Int4", "gptq", 4),
        ("Qwen/Qwen1.5-7B-Chat-GPTQ-Int8", "gptq", 8),
        ("neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8-dynamic", "fp8", 8),
        ("unsloth/Meta-Llama-3.1-8B-Instruct-bnb-4bit", "bitsandbytes", 4),
        ("neuralmagic/Meta-Llama-3.1-8B-Instruct-quantized.w4a16", "gptq", 4),
        ("Qwen2.5-7B-Instruct-Q4_K_M.gguf", "gguf", 4),
        ("qwen2.5-7b-instruct-q8_0.gguf", "gguf", 8),
        ("Qwen/Qwen2.5-32B-Instruct-INT8-W8A16", "int8", 8),
        ("TheBloke/Mixtral-8x7B-Instruct-v0.1-GPTQ", "gptq", 4),
        ("Qwen/Qwen2.5-7B-Instruct", None, None),
    ],
)
def test_a_quantized_name_carries_its_method_and_bits(written, method, bits):
    found = find_model(written)
    assert found is not None
    assert (found.quantization, found.quantization_bits) == (method, bits)


def test_a_quantized_variant_takes_its_checkpoints_bytes():
    full = weights_gib_per_gpu(find_model("Qwen/Qwen1.5-7B-Chat"), 1, 1)
    int8 = weights_gib_per_gpu(find_model("Qwen/Qwen1.5-7B-Chat-GPTQ-Int8"), 1, 1)
    int4 = weights_gib_per_gpu(find_model("Qwen/Qwen1.5-7B-Chat-GPTQ-Int4"), 1, 1)
    assert full > int8 > int4
    # the layers shrink to a byte a weight at 8 bits, ~0.56 at 4; embeddings stay 16-bit
    assert weight_bytes_per_param("gptq", None, None, 8) == 1.0
    assert weight_bytes_per_param("gptq", None, None, 4) == pytest.approx(0.56)
    assert weight_bytes_per_param("awq", None) == pytest.approx(0.56)


def test_a_checkpoint_published_quantized_says_so_without_the_word():
    assert find_model("openai/gpt-oss-20b").quantization == "mxfp4"
    assert find_model("deepseek-ai/DeepSeek-R1").quantization == "fp8"


@pytest.mark.parametrize(
    "written",
    [
        "acme/NotAModel-7B",
        "qwen25-7b",  # digits run together: not read as Qwen2.5 (nor Qwen2-57B)
        "RRoy233/Qwen2.5-1.5B-Open-R1-GRPO",  # words beyond the base's name: not certain
        "/mnt/model/",
        "model",
        "Qwen2.5",
        "7B",
        "-AWQ",
        "snapshots/0123456789abcdef0123",
    ],
)
def test_a_name_the_table_does_not_hold_stays_unknown(written):
    assert find_model(written) is None


@settings(max_examples=400, deadline=None)
@given(st.text())
def test_the_lookup_never_raises_on_any_text(text):
    found = find_model(text)
    assert found is None or isinstance(found, ModelShape)


_WORDS = st.sampled_from(
    ["Instruct", "chat", "AWQ", "GPTQ", "Int4", "Int8", "FP8", "Dynamic", "bnb", "4bit", "hf",
     "v0.1", "2507", "Q4_K_M", "gguf", "_", "-", ".", "/", " ", "--", "models--x--", "\\"]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(ROW_NAMES), st.lists(_WORDS, max_size=6), st.booleans())
def test_a_row_name_with_any_decorations_never_raises(name, words, prefix):
    text = ("".join(words) + name) if prefix else (name + "-".join(words))
    found = find_model(text)
    assert found is None or isinstance(found, ModelShape)
    if found is not None and found.quantization_bits is not None:
        assert 2 <= found.quantization_bits <= 8
