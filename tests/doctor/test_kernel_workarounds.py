"""doctor/kernel_workarounds.py (an illegal memory access on a V0 release: xFormers attention)
and the release a person names in a title (doctor/context.py), which dates it.

Texts: the catalog's own example of PyTorch's illegal-memory-access error
(probes/vllm_catalog/runtime.py), and issue titles of public threads, named beside each."""

from __future__ import annotations

import pytest

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.context import Context
from headroom.probes.vllm_catalog import SIGNATURES
from headroom.probes.vllm_log import digest_text

IMA = {s.id: s for s in SIGNATURES}["cuda_illegal_memory"].examples[0]


def _top(log: str, version: str | None = None):
    return diagnose(DoctorInputs(log=digest_text(log), vllm_version=version)).findings[0]


@pytest.mark.parametrize("version", ["0.4.1", "0.4.3", "0.5.5", "0.6.4.post1", "0.7.3"])
def test_an_illegal_memory_access_on_a_v0_release_tries_xformers_attention(version):
    top = _top(IMA, version)
    assert top.id == "cuda-illegal-memory"
    assert [(a.knob, a.direction, a.value) for a in top.actions] == [
        ("VLLM_ATTENTION_BACKEND", "set", "XFORMERS")
    ]


@pytest.mark.parametrize("version", [None, "0.3.3", "0.8.5", "0.11.0", "0.33.0"])
def test_no_knob_where_the_release_has_no_xformers_choice_or_is_unknown(version):
    # vllm #17295 on 0.8.5: a PyTorch 2.6 Inductor bug; V1 has no xFormers backend
    top = _top(IMA, version)
    assert top.id == "cuda-illegal-memory" and top.actions == ()


def test_a_release_named_in_a_title_dates_it():
    # vllm #5376's title
    top = _top("0.4.3 error CUDA error: an illegal memory access was encountered\n")
    assert top.actions and top.actions[0].knob == "VLLM_ATTENTION_BACKEND"


@pytest.mark.parametrize(
    ("text", "release"),
    [
        ("0.4.3 error CUDA error: an illegal memory access was encountered", "0.4.3"),  # #5376
        ("out of memory running mixtral gptq model in vllm 0.2.7", "0.2.7"),  # vllm #2413
        ("--cpu-offload-gb fails with AssertionError on Windows (v0.16.0)", "0.16.0"),  # #36279
        ("Qwen2.5-0.5B-Instruct OOM on a 8G 4060ti", None),  # a model size is no release
        ("torch 2.5.1 and flash-attn 0.2.8 hang", None),  # other packages' versions
        ("works with vllm 0.7.2, OOM after upgrading to 0.8.3", None),  # two: an upgrade
    ],
)
def test_the_release_a_sentence_names(text, release):
    assert Context(DoctorInputs(log=text + "\n")).version == release


def test_a_real_log_is_not_dated_by_a_number_in_it():
    lines = ["INFO 10-08 07:16:13 pynccl.py:63] vLLM is using nccl==2.20.5"] * 3
    lines.append("0.4.3 was the last release that worked")
    assert Context(DoctorInputs(log="\n".join(lines) + "\n")).version is None
