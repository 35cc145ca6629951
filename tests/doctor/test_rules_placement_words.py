"""Hugging Face's device_map / max_memory named for vLLM (headroom/doctor/rules_words_sizing.py):
TP (and PP where the GPU count does not divide the heads) splits the model instead, step 1.
Texts are public threads' titles, named beside each."""

from __future__ import annotations

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.vllm_cmd import parse_command

SWIFT = "swift在部署的时候--max_memory没生效"  # modelscope/ms-swift#3363
LIKE_DEVICE_MAP = "[Usage]:Can vllm use a method similar to device_map in transformers ?"  # #6601


def _turns(finding) -> list[tuple[str, str, object]]:
    return [(a.knob, a.direction, a.value) for a in finding.actions]


def test_the_title_alone_raises_tp():
    top = diagnose(DoctorInputs(log=SWIFT)).findings[0]
    assert top.id == "words-hf-placement" and top.step == 1
    assert _turns(top)[0][:2] == ("tensor_parallel_size", "raise")


def test_three_gpus_the_heads_do_not_divide_get_pp():
    # vllm#6601: three 4090s; Qwen2.5-14B's 40 heads / 8 KV heads do not divide by 3
    d = diagnose(
        DoctorInputs(
            log=LIKE_DEVICE_MAP,
            command=parse_command(["vllm", "serve", "Qwen/Qwen2.5-14B-Instruct"]),
            gpu_spec=parse_gpu_spec("3xRTX4090"),
        )
    )
    # the memory model's own prediction (no KV room at TP 1) may rank first: step 1 too
    assert d.findings[0].step == 1
    found = next(f for f in d.findings if f.id == "words-hf-placement")
    assert ("pipeline_parallel_size", "raise", 3) in _turns(found)
    assert not any(a.direction == "lower" and a.knob.endswith("parallel_size")
                   for f in d.findings for a in f.actions)  # fmt: skip


def test_silent_when_tp_already_splits():
    d = diagnose(DoctorInputs(log=SWIFT, command=parse_command(["--tensor-parallel-size", "2"])))
    assert not any(f.id == "words-hf-placement" for f in d.findings)
