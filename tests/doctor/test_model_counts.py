"""Every row's numbers hold together: the parameter count it states is the one its shape
implies, the count fits the size in the model's name, and its KV bytes per token are what
vLLM's own start-up lines imply for the models those logs name.

The log numbers are read from tests/fixtures/gpu-startup-logs (real vLLM lines from public
issues; that directory's SOURCES.md names each issue, model and GPU)."""

from __future__ import annotations

import re

import pytest
from support.fixtures import FIXTURES

from headroom.doctor.model_bytes import kv_bytes_per_token
from headroom.doctor.model_rows import count_params
from headroom.doctor.model_shapes import ALL, COMPUTED_PARAMS, COUNT_ARGS
from headroom.doctor.model_table import find_model

GIB = 2**30
ROWS = [facts for facts, _ in ALL]
STATED = [facts for facts in ROWS if facts.name not in COMPUTED_PARAMS]
LOGS = FIXTURES / "gpu-startup-logs"


def implied(name: str) -> float:
    """The count the row's shape implies, with its vision tower."""
    args = dict(COUNT_ARGS[name])
    shape, vision = args.pop("shape"), args.pop("vision")
    return count_params(*shape, **args) + vision * 1e9


@pytest.mark.parametrize("facts", STATED, ids=lambda f: f.name)
def test_a_stated_count_is_the_one_its_shape_implies(facts):
    assert abs(implied(facts.name) - facts.param_count) / facts.param_count < 0.03


_SIZE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)B(?![a-zA-Z])")
# Names whose first size is the active count, not the total (Llama 4: 17B active of 109/400)
_ACTIVE_FIRST = re.compile(r"-\d+E\b")


def _named_size(name: str) -> float | None:
    if _ACTIVE_FIRST.search(name):
        return None
    if (experts := re.search(r"(\d+)x(\d+)B", name)) is not None:  # Mixtral-8x7B: 8 x 7
        return int(experts.group(1)) * int(experts.group(2))
    found = _SIZE.search(name)
    return float(found.group(1)) if found else None


# Rows whose name rounds far down, and why.
_NAME_ROUNDS_DOWN = {
    "Falcon3-1B": "1.67 B: the untied 131072 x 2048 embedding and lm_head are 0.54 B of it",
}


@pytest.mark.parametrize(
    "facts", [f for f in ROWS if _named_size(f.name) and f.name not in _NAME_ROUNDS_DOWN],
    ids=lambda f: f.name,
)  # fmt: skip
def test_a_rows_count_fits_the_size_in_its_name(facts):
    # Names round and leave things out (Gemma's embeddings: Gemma-2-2B is 2.6 B; Mixtral-8x7B
    # shares its attention: 46.7 B), so the band is wide; a wrong layer count or width is not
    named = _named_size(facts.name) * 1e9
    assert 0.75 < facts.param_count / named < 1.35, facts.param_count / 1e9


def _number(pattern: str, text: str) -> float:
    found = re.search(pattern, text)
    assert found, pattern
    return float(found.group(1).replace(",", ""))


@pytest.mark.parametrize(
    ("log", "model", "tp", "kv_dtype"),
    [
        # "Available KV cache memory" / "# GPU blocks" and "GPU KV cache size" lines
        ("gpu1-qwen3-14b-maxlen32768-v1.log", "Qwen/Qwen3-14B", 1, "auto"),
        ("gpu-qwen3-30b-a3b-fp8-kv-fp8-v1.log", "Qwen/Qwen3-30B-A3B-FP8", 1, "fp8"),
        ("h100x4-qwen3-235b-a22b-fp8-tp4.log", "Qwen/Qwen3-235B-A22B-FP8", 4, "auto"),
    ],
)
def test_kv_bytes_per_token_match_vllms_kv_cache_lines(log, model, tp, kv_dtype):
    text = (LOGS / log).read_text()
    memory = _number(r"Available KV cache memory: ([\d.]+) GiB", text) * GIB
    tokens = _number(r"GPU KV cache size: ([\d,]+) tokens", text)
    # the GiB figure is rounded to two decimals: within 1.5 % of memory / tokens
    per_token = kv_bytes_per_token(find_model(model), tp, 1, kv_dtype)
    assert abs(per_token - memory / tokens) / per_token < 0.015


def test_kv_bytes_match_a_v0_logs_blocks():
    # vLLM 0.6 (V0): 3.81 GiB of KV as 1,952 blocks of 16 for Llama-3.1-8B on an RTX 3090
    text = (LOGS / "rtx3090-llama3.1-8b-maxlen20000-v0.6.log").read_text()
    blocks = _number(r"GPU blocks: (\d+)", text)
    memory = _number(r"kv_cache_size=([\d.]+)GiB", text) * GIB
    per_token = kv_bytes_per_token(find_model("meta-llama/Llama-3.1-8B-Instruct"))
    assert abs(per_token - memory / (blocks * 16)) / per_token < 0.015


def test_a_refusals_needed_kv_is_the_whole_models_at_its_own_length():
    # vLLM 0.15.2: "24.0 GiB KV cache is needed" for max seq len 262144 (the model's own, no
    # --max-model-len) of Qwen3-Coder-30B-A3B-Instruct-FP8
    text = (LOGS / "rtx5070ti-rtx5090d-pp2-qwen3-coder-30b-fp8-fail-v0.15.log").read_text()
    needed = _number(r"\(([\d.]+) GiB KV cache is needed", text) * GIB
    length = _number(r"max seq len \((\d+)\)", text)
    shape = find_model("Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8")
    assert shape.max_position_embeddings == length
    assert abs(kv_bytes_per_token(shape) * length - needed) / needed < 0.01
