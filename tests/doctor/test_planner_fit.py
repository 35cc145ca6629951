"""`headroom plan` never proposes a --max-model-len vLLM refuses: the block pool's null
block (vllm/v1/core/block_pool.py) is not room for a request."""

from __future__ import annotations

import pytest

from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.doctor.model_table import find_model
from headroom.doctor.planner import plan, recommended_max_model_len
from headroom.vllm_cmd import parse_command

LLAMA_8B = find_model("Llama-3.1-8B")


def _proposed_len(argv: tuple[str, ...]) -> int:
    return int(argv[argv.index("--max-model-len") + 1])


@pytest.mark.parametrize("gpus", ["1xRTX4090", "1xL4", "1xA10"])
def test_proposed_max_model_len_leaves_the_null_block(gpus):
    # 131,072 tokens do not fit beside the weights on these cards: the plan falls back to
    # the longest length that does.
    p = plan(LLAMA_8B, parse_gpu_spec(gpus), context=131072)
    acc = p.account
    proposed = _proposed_len(p.command)
    # the raw estimate stays in the account; the command keeps a margin below it
    assert proposed == recommended_max_model_len(acc)[0] < acc.max_model_len_fit
    assert any(f"below the estimated fit of {acc.max_model_len_fit:,}" in n for n in p.notes)
    # one request of `proposed` tokens in num_blocks - 1 blocks
    blocks = acc.kv_capacity_tokens // acc.block_size
    assert -(-proposed // acc.block_size) <= blocks - 1
    assert proposed < acc.kv_capacity_tokens


@pytest.mark.parametrize(("max_len", "fits"), [(65536, False), (65520, True)])
def test_plan_fits_only_with_the_null_block_spare(max_len, fits):
    """8 GiB of KV for Llama-3.1-8B are 65,536 tokens (4,096 blocks of 16): one request of
    65,536 needs all 4,096 and vLLM refuses it; 65,520 (4,095 blocks) starts."""
    argv = ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct",
            "--kv-cache-memory-bytes", str(8 * 2**30), "--max-model-len", str(max_len)]  # fmt: skip
    p = plan(LLAMA_8B, parse_gpu_spec("1xH100"), command=parse_command(argv))
    assert p.account.kv_capacity_tokens == 65536
    assert p.fits is fits
