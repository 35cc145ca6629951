"""The failed allocation's size names the tensor, and so the knob (headroom/doctor/
oom_allocation.py): the sampler's logits (max_num_seqs x vocab x 4 bytes), a prefill's MLP
(tokens x intermediate x 2 bytes, tokens from max_num_batched_tokens or, V0 without chunked
prefill, max_model_len). Texts are the threads' own (gpu-startup-logs, incidents); numbers
changed in a test say which and why."""

from __future__ import annotations

from support.fixtures import read_fixture

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.vllm_cmd import parse_command

# vllm#27508: gpt-oss-120b on one H100, the sampler warm-up's logits.to(torch.float32).
SAMPLER_LOG = read_fixture("gpu-startup-logs", "h100-gpt-oss-120b-sampler-warmup-oom.log")
# The OOM line alone, as a thread that pastes only the error gives it (no sampler.py frame).
SAMPLER_LINE = next(x for x in SAMPLER_LOG.splitlines() if "Tried to allocate" in x)
# vllm#2666 (icefairy), PyTorch 2.1's wording: 1.75 GiB, nothing else of this process's
# memory is another's.
OOM_21 = (
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB. GPU 0 has a "
    "total capacty of 23.64 GiB of which 950.44 MiB is free. Including non-PyTorch memory, "
    "this process has 22.30 GiB memory in use. Of the allocated memory 19.44 GiB is allocated "
    "by PyTorch, and 2.51 GiB is reserved by PyTorch but unallocated."
)


def _top(log: str, argv: list[str], gpus: str | None = None):
    inputs = DoctorInputs(
        log=log,
        command=parse_command(argv),
        gpu_spec=parse_gpu_spec(gpus) if gpus else None,
    )
    found = diagnose(inputs).findings
    assert found
    return found[0]


def _turn(finding):
    return finding.actions[0].knob, finding.actions[0].direction


def test_the_sampler_logits_size_lowers_max_num_seqs():
    """786 MiB = 1024 sequences (V1's default on an 80 GiB GPU) x 201,088 vocab x 4 bytes,
    rounded up to 2 MiB. Before: the bare-OOM order (utilization first)."""
    top = _top(SAMPLER_LINE, ["vllm", "serve", "openai/gpt-oss-120b"])
    assert top.id == "cuda-oom-allocation" and top.step == 4
    assert _turn(top) == ("max_num_seqs", "lower") and top.actions[0].value == 512
    assert any("1,024 sequences" in e and "201,088" not in e for e in top.evidence)
    assert ("gpu_memory_utilization", "lower") in [(a.knob, a.direction) for a in top.actions]


def test_the_sampler_size_with_max_num_seqs_set_reads_the_set_value():
    top = _top(SAMPLER_LINE, ["vllm", "serve", "openai/gpt-oss-120b", "--max-num-seqs", "1024"])
    assert _turn(top) == ("max_num_seqs", "lower")
    assert any("as set" in e for e in top.evidence)


def test_a_size_no_tensor_has_keeps_the_tables_order():
    """256 sequences would be 196 MiB a tensor, not 786: the size says nothing."""
    top = _top(SAMPLER_LINE, ["vllm", "serve", "openai/gpt-oss-120b", "--max-num-seqs", "256"])
    assert top.id == "cuda-oom-unknown"
    assert _turn(top) == ("gpu_memory_utilization", "lower")


def test_an_unknown_model_gives_no_size_to_match():
    top = _top(SAMPLER_LINE, ["vllm", "serve", "some-org/some-model"])
    assert top.id == "cuda-oom-unknown"


def test_the_frame_that_says_sampler_keeps_its_own_answer():
    top = _top(SAMPLER_LOG, ["vllm", "serve", "openai/gpt-oss-120b"])
    assert top.id != "cuda-oom-allocation"


def test_a_prefill_mlp_size_lowers_the_batch_budget():
    """Llama-3.1-8B, --max-num-batched-tokens 32768: gate_up_proj's output is 32768 x
    2 x 14,336 x 2 bytes = 1.75 GiB, the size vllm#2666's activation.py OOM names."""
    argv = ["vllm", "serve", "meta-llama/Llama-3.1-8B", "--max-num-batched-tokens", "32768"]
    top = _top(OOM_21, argv, "1xRTX4090")
    assert top.id == "cuda-oom-allocation"
    assert _turn(top) == ("max_num_batched_tokens", "lower")
    assert top.actions[0].value < 32768


def test_a_v0_whole_prompt_prefill_lowers_max_model_len():
    """V0 without chunked prefill steps max(max_model_len, 2048) tokens: at 32768 the same
    1.75 GiB is one whole prompt's MLP, so max_model_len sets it."""
    # 0.2.7's _init_cache calls the workers' profile_num_available_blocks at this line
    egg = (
        '  File "/usr/lib/python3.10/site-packages/vllm-0.2.7+cu123-py3.10-linux-x86_64.egg/'
        'vllm/engine/llm_engine.py", line 263, in _init_cache\n'
    )
    argv = ["vllm", "serve", "meta-llama/Llama-3.1-8B", "--max-model-len", "32768"]
    top = _top(egg + OOM_21, argv, "1xRTX4090")
    assert top.id == "cuda-oom-allocation"
    assert _turn(top) == ("max_model_len", "lower")


def test_tensors_of_two_knobs_with_the_size_say_nothing():
    """Batch budget 32768 and max_num_seqs whose logits are 1.75 GiB too: ambiguous."""
    seqs = str(int(1.75 * 2**30 // (128256 * 4)))  # 3663 sequences x 128,256 x 4 ~ 1.75 GiB
    argv = ["vllm", "serve", "meta-llama/Llama-3.1-8B", "--max-num-batched-tokens", "32768",
            "--max-num-seqs", seqs]  # fmt: skip
    top = _top(OOM_21, argv, "1xRTX4090")
    assert top.id != "cuda-oom-allocation"


def test_another_process_memory_outranks_a_matching_size():
    crowded = SAMPLER_LINE.replace(
        "Process 3270336 has 78.96 GiB memory in use.",
        "Process 1 has 30.00 GiB memory in use. Including non-PyTorch memory, this process "
        "has 48.96 GiB memory in use.",
    )
    top = _top(crowded, ["vllm", "serve", "openai/gpt-oss-120b"])
    assert top.id == "cuda-oom-foreign-process"


# PyTorch 2.2+'s wording with a MoE step's numbers (Mixtral-8x7B, TP 2: 2 routed experts x
# 2 x 14,336 / 2 x 2 bytes = 57,344 bytes per token; 8192 tokens = 448 MiB).
OOM_MOE = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 448.00 MiB. GPU 0 has a "
    "total capacity of 79.19 GiB of which 300.00 MiB is free. Including non-PyTorch memory, "
    "this process has 78.60 GiB memory in use."
)


def test_a_fused_experts_size_lowers_the_batch_budget():
    argv = ["vllm", "serve", "mistralai/Mixtral-8x7B", "-tp", "2"]
    top = _top(OOM_MOE, [*argv, "--max-num-batched-tokens", "8192"])
    assert top.id == "cuda-oom-allocation" and "fused experts" in top.title
    assert _turn(top) == ("max_num_batched_tokens", "lower")


def test_fused_experts_work_in_chunks_so_a_longer_step_does_not_size_them():
    """fused_moe splits a step into VLLM_FUSED_MOE_CHUNK_SIZE (32768) tokens: 65536 tokens
    x the experts' activation (28,672 bytes) is 1.75 GiB arithmetically, but no such tensor
    exists; at 32768 tokens that size is the gate_up output."""
    argv = ["vllm", "serve", "mistralai/Mixtral-8x7B", "-tp", "2", "--max-num-batched-tokens"]
    oom = OOM_MOE.replace("448.00 MiB", "1.75 GiB")
    assert _top(oom, [*argv, "65536"]).id != "cuda-oom-allocation"
    assert _top(oom, [*argv, "32768"]).id == "cuda-oom-allocation"
