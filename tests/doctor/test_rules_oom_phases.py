"""OOM phase and cause details of headroom/doctor/rules_oom.py read from public threads'
texts (tests/fixtures/incidents): a forward frame means activations, a V0 release with the
default batch budget profiles one whole max_model_len prefill, and a few hundred MiB of
another process's memory is not what filled the GPU."""

from __future__ import annotations

from headroom.doctor import DoctorInputs, diagnose
from headroom.vllm_cmd import parse_command

OOM_21 = (
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB. GPU 0 has a "
    "total capacty of 23.64 GiB of which 950.44 MiB is free. Process 2316410 has 176.00 MiB "
    "memory in use. Process 3149588 has 250.00 MiB memory in use. Including non-PyTorch memory, "
    "this process has 22.30 GiB memory in use. Of the allocated memory 19.44 GiB is allocated "
    "by PyTorch, and 2.51 GiB is reserved by PyTorch but unallocated."
)
FORWARD_V027 = (
    '  File "/usr/lib/python3.10/site-packages/vllm-0.2.7+cu123-py3.10-linux-x86_64.egg/vllm/'
    'model_executor/layers/activation.py", line 35, in forward\n'
    "    out = torch.empty(output_shape, dtype=x.dtype, device=x.device)\n"
)


def _top(log: str, argv: list[str] | None = None):
    d = diagnose(DoctorInputs(log=log, command=parse_command(argv) if argv else None))
    assert d.findings
    return d.findings[0]


def test_v0_forward_oom_with_the_default_batch_budget_lowers_max_model_len():
    top = _top(FORWARD_V027 + OOM_21)
    assert top.id == "cuda-oom-activation"
    assert (top.actions[0].knob, top.actions[0].direction) == ("max_model_len", "lower")
    assert not any(a.knob == "tensor_parallel_size" for a in top.actions)


def test_v0_forward_oom_with_a_batch_budget_set_lowers_the_budget():
    top = _top(FORWARD_V027 + OOM_21, ["vllm", "serve", "m", "--max-num-batched-tokens", "8192"])
    assert top.id == "cuda-oom-activation"
    assert (top.actions[0].knob, top.actions[0].direction) == ("max_num_batched_tokens", "lower")


def test_small_foreign_processes_are_not_the_cause_but_large_ones_are():
    small = diagnose(DoctorInputs(log=FORWARD_V027 + OOM_21))
    assert not any(f.id == "cuda-oom-foreign-process" for f in small.findings)
    big = OOM_21.replace("Process 3149588 has 250.00 MiB", "Process 3149588 has 9.50 GiB")
    found = diagnose(DoctorInputs(log=FORWARD_V027 + big))
    assert any(f.id == "cuda-oom-foreign-process" for f in found.findings)


# The same OOM in PyTorch 2.2+'s wording ("capacity"): nothing in it dates the release.
OOM_MODERN = OOM_21.replace("total capacty of", "total capacity of")


def test_a_bare_oom_follows_the_tables_oom_order():
    """Nothing around the OOM line says where it happened: the five-step table's order for
    a CUDA OOM (lower utilization, eager, fewer batched tokens), never more GPUs on a guess."""
    top = _top(OOM_MODERN, ["vllm", "serve", "some-org/some-model"])
    assert top.id == "cuda-oom-unknown" and top.step == 4
    turns = [(a.knob, a.direction) for a in top.actions]
    assert turns[0] == ("gpu_memory_utilization", "lower")
    assert ("enforce_eager", "set") in turns
    assert not any(knob == "tensor_parallel_size" for knob, _ in turns)


def test_a_bare_oom_with_weights_larger_than_the_gpu_raises_tp():
    """The name carries 72B (~134 GiB at 16 bits) and the OOM names an 80 GiB GPU: at TP 1
    the weights alone cannot fit, so step 1 answers, whatever the phase."""
    oom = OOM_21.replace("23.64 GiB", "79.33 GiB")
    top = _top(oom, ["vllm", "serve", "Qwen/Qwen1.5-72B-Chat"])
    assert top.id == "cuda-oom-weights" and top.step == 1
    assert (top.actions[0].knob, top.actions[0].direction) == ("tensor_parallel_size", "raise")
    # at TP 2 the share (~67 GiB) is below the GPU: not the weights
    top = _top(oom, ["vllm", "serve", "Qwen/Qwen1.5-72B-Chat", "-tp", "2"])
    assert top.id != "cuda-oom-weights"


def test_torch_21_wording_dates_a_v0_release_and_a_whole_prompt_tensor_cuts_max_model_len():
    """PyTorch 2.1's "total capacty of" (sic) dates the torch and so the vLLM (0.2.7 and
    0.3.3 pin torch 2.1.2; the V1 default came with torch 2.6): a V0 engine whose start-up
    profile runs one whole max_model_len prefill. A bare OOM of a whole-prompt-sized tensor
    (vllm#1949's title: 3.50 GiB) is that profile: max_model_len first, no GPUs added."""
    title = (
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB. GPU 0 has "
        "a total capacty of 23.64 GiB of which 1.42 GiB is free. Process 2722 has 22.22 GiB "
        "memory in use. Of the allocate"
    )
    d = diagnose(DoctorInputs(log=title))
    top = d.findings[0]
    assert top.id == "cuda-oom-activation" and top.step == 4
    assert (top.actions[0].knob, top.actions[0].direction) == ("max_model_len", "lower")
    assert not any(a.knob == "tensor_parallel_size" for a in top.actions)
    # the same title in PyTorch 2.2+'s wording does not date the release: the table's order
    modern = title.replace("capacty", "capacity")
    top = diagnose(DoctorInputs(log=modern)).findings[0]
    assert top.id == "cuda-oom-unknown"
    assert (top.actions[0].knob, top.actions[0].direction) == ("gpu_memory_utilization", "lower")


def test_a_small_bare_oom_in_a_v0_release_is_not_the_whole_prompt_profile():
    """Once the KV cache holds the budget, what fails is a small allocation: the table's OOM
    order (lower utilization first), even in a V0 release."""
    small = OOM_21.replace("Tried to allocate 1.75 GiB", "Tried to allocate 20.00 MiB")
    top = _top(small, ["vllm", "serve", "some-org/some-model"])
    assert top.id == "cuda-oom-unknown"
    assert (top.actions[0].knob, top.actions[0].direction) == ("gpu_memory_utilization", "lower")


def test_torch_20_wording_also_dates_a_v0_release():
    from headroom.doctor.context import Context

    line = (
        "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 23.65 GiB total "
        "capacity; 21.50 GiB already allocated; 1.10 GiB free; 21.80 GiB reserved in total by "
        "PyTorch)"
    )
    assert Context(DoctorInputs(log=line)).version == "0.3.3"
    assert Context(DoctorInputs(log=OOM_MODERN)).version is None


def test_words_that_put_the_oom_on_cuda_graphs_turn_eager_mode_first():
    # bentoml/OpenLLM#1003 (description): the words say where the memory went
    said = (
        "Since vllm 0.2.7, CUDA graph generation is on by default, which takes up to 3 Gio of "
        "VRAM in addition to the model. On my hardware, this means I trigger an Out Of Memory "
        "error."
    )
    top = _top(said)
    assert top.id == "cuda-oom-graphs"
    assert (top.actions[0].knob, top.actions[0].direction) == ("enforce_eager", "set")
    assert not any(
        a.knob == "gpu_memory_utilization" and a.direction == "raise" for a in top.actions
    )
    # words that name no graphs keep the table's order for an OOM of unknown phase
    # (EleutherAI/lm-evaluation-harness#1923, a commenter's report)
    other = _top("specifically: it OOMs even before running any requests.")
    assert other.id == "cuda-oom-unknown"
    assert (other.actions[0].knob, other.actions[0].direction) == (
        "gpu_memory_utilization",
        "lower",
    )
