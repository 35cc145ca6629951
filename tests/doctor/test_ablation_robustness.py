"""The doctor's right answers survive how else a thread shows the same evidence
(scripts/incident_ablation.py, training split only): a finished weight-loading bar before an
OOM, a message hard-wrapped by a terminal, a wrapped PyTorch OOM whose pieces the log reader
also reads one by one, and the ablation itself on a few training incidents.

Texts: the shard bars are hangs/report-v1-tp2-rtx3090-start.log's (vLLM's weight_utils.py
_BAR_FORMAT, 0.6.0-0.33.0); the OOM is the thread's own paste in test_rules_oom_phases
(OOM_21, PyTorch 2.2+'s "capacity"); the AWQ refusal is vllm-project/vllm#1479's (vLLM
0.2.x model_loader: "torch.bfloat16 is not supported for quantization method awq. Supported
dtypes: [torch.float16]"); the wrapped OOM is openbmb/MiniCPM-V#612's paste.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.repo_scripts import load_repo_script

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.context import Context
from headroom.doctor.gpu_spec import GpuSpecError, read_gpus_option
from headroom.doctor.refusal_match import _MAX_GLUED_WORD, hard_wrap_joined
from headroom.vllm_cmd import parse_command

ROOT = Path(__file__).resolve().parents[2]
BAR_START = "Loading safetensors checkpoint shards:   0% Completed | 0/1 [00:00<?, ?it/s]"
BAR_DONE = "Loading safetensors checkpoint shards: 100% Completed | 1/1 [00:14<00:00, 14.86s/it]"
OOM = (
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB. GPU 0 has a "
    "total capacity of 23.64 GiB of which 950.44 MiB is free. Process 2316410 has 176.00 MiB "
    "memory in use. Process 3149588 has 250.00 MiB memory in use. Including non-PyTorch memory, "
    "this process has 22.30 GiB memory in use. Of the allocated memory 19.44 GiB is allocated "
    "by PyTorch, and 2.51 GiB is reserved by PyTorch but unallocated."
)
AWQ_BF16 = (
    "ValueError: torch.bfloat16 is not supported for quantization method awq. Supported dtypes: "
    "[torch.float16]"
)
MINICPM_OOM = (
    "[rank0]: torch.OutOfMemoryError: Error in model execution (input dumped to "
    "/tmp/err_execute_model_input_20241010-154829.pkl): CUDA out of memory. Tried to allocate "
    "2.00 GiB. GPU 0 has a total capacity of 23.69 GiB of which 979.69 MiB is free. Process "
    "115625 has 22.73 GiB memory in use. Of the allocated memory 22.29 GiB is allocated by "
    "PyTorch, and 129.54 MiB is reserved by PyTorch but unallocated."
)


def _top(log: str, argv: list[str] | None = None):
    d = diagnose(DoctorInputs(log=log, command=parse_command(argv) if argv else None))
    assert d.findings
    return d.findings[0]


def test_an_oom_after_a_finished_shard_bar_is_not_one_while_loading():
    argv = ["vllm", "serve", "some-org/some-model"]
    assert _top(OOM, argv).id == "cuda-oom-unknown"
    assert _top("\n".join([BAR_START, BAR_DONE, OOM]), argv).id == "cuda-oom-unknown"


def test_an_oom_while_the_shard_bar_runs_is_one_while_loading():
    assert _top("\n".join([BAR_START, OOM]), ["vllm", "serve", "some-org/some-model"]).id == (
        "cuda-oom-weights"
    )


def test_a_refusal_a_terminal_cut_inside_a_word_is_read_whole():
    cut = "\n".join(AWQ_BF16[k : k + 80] for k in range(0, len(AWQ_BF16), 80))
    assert "Support\ned" in cut
    top = _top(cut, ["vllm", "serve", "TheBloke/CodeLlama-7B-AWQ", "--quantization", "awq"])
    assert top.id == "dtype-unsupported"
    assert (top.actions[0].knob, top.actions[0].value) == ("dtype", "half")


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(
        alphabet=st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")),
        min_size=41,
        max_size=600,
    ).map(str.strip),
    width=st.integers(min_value=40, max_value=160),
)
def test_hard_wrap_joined_gives_back_any_text_cut_at_a_fixed_width(text, width):
    if len(text) <= width or text != text.strip() or "\x85" in text:
        return
    if max(len(w) for w in re.split(r"\s+", text)) > _MAX_GLUED_WORD:
        return  # no message's word is this long: a flood is not glued (the next test)
    pieces = [text[k : k + width] for k in range(0, len(text), width)]
    assert hard_wrap_joined(pieces) == text


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(max_size=200), max_size=12))
def test_hard_wrap_joined_never_raises_and_keeps_every_word(lines):
    lines = [x.replace("\n", " ").replace("\r", " ") for x in lines]
    joined = hard_wrap_joined(lines)
    assert isinstance(joined, str)
    assert len(joined) <= sum(len(x) + 1 for x in lines)


def test_a_flood_of_equal_lines_is_not_glued_into_one_word():
    """The supervisor's log-flood test (tests/supervisor/fake_vllm.py: 'x' * 1023 a line)
    has every line as long as the longest: read as a hard wrap, 400 of them became one word
    of 409,200 characters and a `\\w+ is not supported ...` pattern ran for minutes on it."""
    joined = hard_wrap_joined(["x" * 1023] * 400)
    assert max(len(w) for w in joined.split()) == 1023
    assert len(joined.split()) == 400
    wrapped = hard_wrap_joined(["y" * 100] * 9)  # a word of 900: past the cap, cut at 500
    assert [len(w) for w in wrapped.split()] == [500, 400]


def test_a_word_wrapped_oom_is_read_with_its_numbers_first():
    """The log reader reads the wrapped message whole and also its pieces one by one; the
    rules take a kind's first event, which must be the one with the numbers."""
    wrapped = "\n".join(textwrap.wrap(MINICPM_OOM, 80))
    ooms = Context(DoctorInputs(log=wrapped + "\n")).of("cuda_oom")
    assert ooms and ooms[0].fields.get("total_gib") == 23.69


def _ablation():
    return load_repo_script("scripts/incident_ablation.py")


# Training incidents whose right answers once flipped under a variant that kept the evidence
# (the ablation's table in the commit messages); validation incidents are never read here.
GUARDED = (
    "openbmb--minicpm-v--612",
    "openbmb--minicpm-v--640",
    "vllm-project--vllm--1479",
    "alex8791-cyber--cognithor--318",
    "vllm-project--vllm--36734",
    "vllm-project--vllm--4417",
    "bentoml--openllm--1003",
    "vllm-project--vllm--8879",
    "vllm-project--vllm--882",
    "vllm-project--vllm-ascend--5020",
    "xencon--aixcl--694",
    "zai-org--glm-v--165",
    "project-monai--vlm-surgical-agent-framework--5",
    "ai-dynamo--dynamo--2109",
    "opea-project--genaicomps--954",
    "vllm-project--vime--186",
    "hiyouga--easyr1--59",
    "openrlhf--openrlhf--336",
    "blog-catg-kghs--gb10-two-lane-appliance--swap-space",
)


def test_the_ablation_keeps_these_training_answers_right():
    ablation = _ablation()
    incidents = [i for i in ablation.training_incidents() if i["id"] in GUARDED]
    assert len(incidents) == len(GUARDED)
    table = ablation.ablate(incidents)
    assert sum(row["applied"] for row in table.values()) > 3 * len(GUARDED)
    kept = [
        (kind, incident_id, got)
        for kind, row in table.items()
        for incident_id, got, reason in row["flips"]
        if reason is None
    ]
    assert kept == []


# vllm-project/vllm#4417's paste (8 x RTX A6000, TP left at 1): PyTorch 2.2+'s OOM line.
OOM_4417 = (
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a "
    "total capacity of 47.54 GiB of which 1.38 GiB is free. Process 876965 has 46.14 GiB "
    "memory in use. Of the allocated memory 45.52 GiB is allocated by PyTorch, and 5.85 MiB "
    "is reserved by PyTorch but unallocated."
)


def test_a_bare_gpu_count_is_that_many_gpus():
    assert read_gpus_option("2") == (None, 2)
    spec, count = read_gpus_option("2:24")
    assert count == 2 and spec is not None and spec.memory_gib == 24.0
    with pytest.raises(GpuSpecError):
        read_gpus_option("0")


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=1, max_value=1024), st.sampled_from(["", " ", "\t"]))
def test_any_bare_count_reads_as_that_count(count, pad):
    assert read_gpus_option(f"{pad}{count}{pad}") == (None, count)


def test_a_count_only_takes_the_gpu_size_the_log_says():
    """`--gpus 8` and an OOM line that says each GPU's total: the same answer as
    `--gpus 8xGPU:48` (more GPUs than TP 1 uses)."""
    counted = diagnose(DoctorInputs(log=OOM_4417 + "\n", gpu_count=8))
    assert counted.findings[0].id == "cuda-oom-idle-gpus"
    assert counted.findings[0].actions[0].knob == "tensor_parallel_size"
    assert Context(DoctorInputs(log=OOM_4417 + "\n", gpu_count=8)).gpu.usable_gib == 47.54
    assert Context(DoctorInputs(log="no numbers here\n", gpu_count=8)).gpu is None


# bentoml/OpenLLM#1003's words and vllm-project/vllm#8879's last frames (the thread's paste).
GRAPHS_WORDS = (
    "Since vllm 0.2.7, CUDA graph generation is on by default, which takes up to 3 Gio of VRAM "
    "in addition to the model. On my hardware, this means I trigger an Out Of Memory error."
)
MLLAMA_FRAME = (
    'File "/home/heerak/miniconda3/envs/eval/lib/python3.10/site-packages/vllm/model_executor/'
    'models/mllama.py", line 1084, in forward\n'
    "cross_attention_states = self.vision_model(pixel_values,"
)


def test_words_wrapped_at_80_columns_keep_their_cause():
    for text in (GRAPHS_WORDS, "\n".join(textwrap.wrap(GRAPHS_WORDS, 80))):
        top = diagnose(DoctorInputs(log=text + "\n")).findings[0]
        assert top.id == "cuda-oom-graphs" and top.actions[0].knob == "enforce_eager"


def test_a_frame_whose_path_a_terminal_cut_is_still_read():
    frame, code = MLLAMA_FRAME.split("\n")
    cut = "\n".join([*(frame[k : k + 80] for k in range(0, len(frame), 80)), code])
    for text in (MLLAMA_FRAME, cut):
        top = diagnose(DoctorInputs(log=text + "\n")).findings[0]
        assert top.id == "release-default-max-num-seqs-encoder-trace"


# tests/fixtures/startup-logs (dennislee22, vLLM 0.10.1.1): the server's version line.
VERSION_LINE = (
    "(APIServer pid=1009) INFO 09-10 23:26:12 [api_server.py:1805] vLLM API server version 0.10.1.1"
)


def test_the_servers_version_line_does_not_place_an_oom():
    argv = ["vllm", "serve", "some-org/some-model"]
    assert _top(VERSION_LINE + "\n" + OOM, argv).id == _top(OOM, argv).id == "cuda-oom-unknown"


# xencon/aixcl#694's words, with the flags it quotes typed above them as a shell shows it.
GRAPH_WORDS = "Error: CUDA graph capture fails during profiling"
TYPED = "$ vllm serve some-org/some-model --gpu-memory-utilization 0.8 --max-model-len 32768"


def test_a_typed_command_line_is_not_read_as_words():
    ctx = Context(DoctorInputs(log=f"{TYPED}\n{GRAPH_WORDS}\n"))
    assert ctx.words is not None and not ctx.words.length_blamed
    assert ctx.words.utilization is None  # the line's value is the command's, not the words'
    top = diagnose(DoctorInputs(log=f"{TYPED}\n{GRAPH_WORDS}\n")).findings[0]
    assert top.id == diagnose(DoctorInputs(log=GRAPH_WORDS + "\n")).findings[0].id
