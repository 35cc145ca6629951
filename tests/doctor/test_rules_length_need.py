"""The words ask what GPUs a context length needs (headroom/doctor/rules_words_sizing.py): more
GPUs (step 1), never the shorter length. Texts are public threads' (named beside each)."""

from __future__ import annotations

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.gpu_spec import parse_gpu_spec

# zai-org/GLM-4#149 (description); its maintainer answered 8 H100 for 1M
GLM_1M = (
    "想部署一下glm4-9b-1m模型，目前40G显存跑不起来，请问一下需要多少显存才能跑支持"
    "max_model_len为1M的大模型？"
)


def _diagnose(log: str, gpus: str | None = None):
    return diagnose(DoctorInputs(log=log, gpu_spec=parse_gpu_spec(gpus) if gpus else None))


def test_the_length_asked_for_is_sized_in_gpus_not_cut():
    d = _diagnose(GLM_1M, "1xGPU:40")  # the thread's one 40 GB card
    top = d.findings[0]
    assert top.id == "words-length-needs-gpus" and top.step == 1
    act = top.actions[0]
    assert (act.knob, act.direction, act.step) == ("tensor_parallel_size", "raise", 1)
    # more GPUs than the one given: advice, naming how many of this kind
    assert act.value is None and "GPUs of this kind (1 given)" in act.why
    assert ("max_model_len", "lower") not in {(a.knob, a.direction) for a in top.actions}


def test_on_a_node_that_has_the_gpus_the_tp_is_applied():
    top = _diagnose(GLM_1M, "8xGPU:40").findings[0]
    assert top.id == "words-length-needs-gpus"
    act = top.actions[0]
    assert act.knob == "tensor_parallel_size" and isinstance(act.value, int) and act.value > 1


def test_without_the_model_the_evidence_says_what_is_missing():
    d = _diagnose("用vllm部署，开启1M上下文，至少需要多少显存")  # MiniMax-AI/MiniMax-M1#2 (title)
    top = d.findings[0]
    assert top.id == "words-length-needs-gpus"
    assert (top.actions[0].knob, top.actions[0].direction) == ("tensor_parallel_size", "raise")
    assert any("not given" in e for e in top.evidence)
