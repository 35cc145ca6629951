"""A hang or a memory leak said in words on a release that ships V0 beside V1
(headroom/doctor/rules_v1_words.py): VLLM_USE_V1=0 in 0.8.0-0.10.x only, never beside an
error line, a multi-GPU hang, a timeout alone or VLLM_USE_V1=0 already set. Titles and
sentences are public threads' (named beside each); the log line is vLLM's own."""

from __future__ import annotations

import pytest

from headroom.doctor import DoctorInputs, diagnose

ID = "v1-words-hang-or-leak"
HANG = "Hang with VLLM backend"  # EleutherAI/lm-evaluation-harness#2904 (title), 0.8.5.post1
# zai-org/GLM-V#165 (description), on 0.10
LEAK = (
    "While using vLLM versions 0.10.*, I encountered the problem that the memory of my GPUs is "
    "rapidly clogging up during inference."
)


def _diagnose(log: str, version: str | None):
    return diagnose(DoctorInputs(log=log, vllm_version=version))


def _found(d):
    return next((f for f in d.findings if f.id == ID), None)


@pytest.mark.parametrize(("text", "version"), [(HANG, "0.8.5.post1"), (LEAK, "0.10")])
def test_v0_is_tried_where_it_ships(text, version):
    top = _diagnose(text, version).findings[0]
    assert top.id == ID
    assert [(a.knob, a.direction, a.value) for a in top.actions] == [("VLLM_USE_V1", "set", "0")]


@pytest.mark.parametrize("version", ["0.7.3", "0.11.0", None])
def test_nothing_where_there_is_no_switch_or_no_release(version):
    # before 0.8.0 V1 was not the default; from 0.11.0 V0 is gone; unknown: nothing to say
    assert _found(_diagnose(HANG, version)) is None


def test_a_multi_gpu_hang_is_the_comms_rules_own():
    # vllm-project/vllm#8087 (title): GPU-to-GPU communication, not the engine version
    assert _found(_diagnose("[Bug]: when tensor-parallel-size>1，Stuck", "0.8.5")) is None


def test_a_timeout_alone_is_no_hang():
    # OpenRLHF/OpenRLHF#1040's kind of title: a deadline, not the engine stopping
    text = "torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for clients"
    assert _found(_diagnose(text, "0.8.5")) is None


def test_silent_beside_an_error_line():
    # V1's engine-core failure (vllm/v1/engine/utils.py 0.9.2): a cause in the log
    log = (
        HANG + "\nRuntimeError: Engine core initialization failed. See root cause above. "
        "Failed core proc(s): {}"
    )
    assert _found(_diagnose(log, "0.9.2")) is None


def test_silent_when_v0_is_already_chosen():
    assert _found(_diagnose(HANG + "\nexport VLLM_USE_V1=0", "0.8.5")) is None
