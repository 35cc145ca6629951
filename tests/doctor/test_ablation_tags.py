"""A message read whole behind the tag vLLM repeats on each of its lines, a release named at
a sentence's end, and a flag a person's words quote (scripts/incident_ablation.py's prefix_*,
no_version and no_command flips, training split).

Texts: vllm-project/vime#186's paste (the FP8 MoE shard check, vLLM's fp8.py "The
output_size of gate's and up's weight = 96 is not divisible by weight quantization block_n =
128."); the prefixes as tests/fixtures carry them (gpu-startup-logs' "(VllmWorkerProcess
pid=3230) ", startup-logs' "(EngineCore_DP0 pid=8884) " and the Ray worker's tag, the
[rank0]: tag of tests/fixtures/nccl, gpu-startup-logs' "ERROR 04-17 15:10:09 [engine.py:448] "
header, which vLLM's NewLineFormatter repeats on every line of a message); the GB10 session
notes' sentence ("The plan included --swap-space 0 as a flag on both serve scripts. This flag
doesn't exist in vLLM 0.21.0.", blog catg-kghs, a training incident).
"""

from __future__ import annotations

import textwrap

import pytest

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.context import Context
from headroom.vllm_cmd import parse_command

VIME = (
    "ValueError: The output_size of gate's and up's weight = 96 is not\n"
    "            divisible by weight quantization block_n = 128."
)
TAGS = (
    "(VllmWorkerProcess pid=3230) ",
    "(EngineCore_DP0 pid=8884) ",
    "(RayWorkerWrapper pid=345, ip=10.42.9.225) ",
    "[rank0]: ",
    "ERROR 04-17 15:10:09 [engine.py:448] ",
)
GB10 = (
    "The plan included --swap-space 0 as a flag on both serve scripts. This flag doesn't exist "
    "in vLLM 0.21.0."
)


def _kinds(log: str) -> list[str]:
    return [e.kind for e in Context(DoctorInputs(log=log + "\n")).events]


@pytest.mark.parametrize("tag", ("", *TAGS))
def test_a_message_over_two_tagged_lines_is_read_whole(tag):
    log = "\n".join(tag + line for line in VIME.split("\n"))
    assert _kinds(log) == ["quantized_tp_split"]


def test_a_new_record_behind_the_same_tag_is_not_glued_on():
    tag = TAGS[0]
    log = "\n".join([tag + VIME.split("\n")[0], tag + "Traceback (most recent call last):"])
    assert "quantized_tp_split" not in _kinds(log)
    other = "\n".join(["(VllmWorkerProcess pid=9) " + line for line in VIME.split("\n")[:1]])
    log = other + "\n" + TAGS[0] + VIME.split("\n")[1]  # another process's line does not go on
    assert "quantized_tp_split" not in _kinds(log)


def test_a_release_at_the_end_of_a_sentence_is_the_release():
    assert Context(DoctorInputs(log=GB10 + "\n")).version == "0.21.0"
    assert Context(DoctorInputs(log=GB10.rstrip(".") + "\n")).version == "0.21.0"


def test_a_flag_the_words_quote_is_checked_against_the_release():
    for command in (None, parse_command(["--swap-space", "0"])):
        top = diagnose(DoctorInputs(log=GB10 + "\n", command=command)).findings[0]
        assert top.id == "flag-not-in-release"
        assert (top.actions[-1].knob, top.actions[-1].direction) == ("swap_space", "unset")


def test_a_flag_quoted_for_a_release_that_has_it_is_no_finding():
    text = GB10.replace("0.21.0", "0.6.3")  # --swap-space is in 0.6.3's argument parser
    findings = diagnose(DoctorInputs(log=text + "\n")).findings
    assert all(f.id != "flag-not-in-release" for f in findings)


# hiyouga/EasyR1#59's first line (Ray's memory monitor) and openrlhf/OpenRLHF#336's last
# three lines (a Ray actor's V0 KV refusal), each as the thread pasted them; the cuts are a
# terminal's 80 columns and Python's textwrap at 80, as the ablation makes them.
RAY_OOM = "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory."
OPENRLHF = (
    "2024-06-28T06:11:52.685308737Z (LLMRayActor pid=20770) ERROR 06-28 06:11:45 "
    "worker_base.py:145]     return executor(*args, **kwargs)\n"
    "model's max seq len (8192) is larger than the maximum number of tokens that can be stored "
    "in KV cache (6048)."
)


def test_rays_oom_cut_before_its_eviction_text_is_still_the_hosts():
    hard = "\n".join(RAY_OOM[k : k + 80] for k in range(0, len(RAY_OOM), 80))
    for log in (RAY_OOM, hard, "\n".join(textwrap.wrap(RAY_OOM, 80))):
        assert _kinds(log) == ["host_oom"], log


def test_a_refusal_wrapped_after_a_wrapped_traceback_line_is_read():
    wrapped = "\n".join(w for line in OPENRLHF.split("\n") for w in textwrap.wrap(line, 80))
    assert len(wrapped.split("\n")) == 4
    for log in (OPENRLHF, wrapped):
        refusals = Context(DoctorInputs(log=log + "\n")).of("max_seq_len_exceeds_kv")
        assert refusals and refusals[0].fields["estimated_max_len"] == 6048
