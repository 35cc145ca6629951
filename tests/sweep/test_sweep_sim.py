"""A sweep on the simulator with four simulated H100s, once over NVLink and once over PCIe:
1, TP2, TP4 and PP2 under the same ramp fill the table; PP2's end-to-end p95 at
concurrency 1 is worse than TP2's (a pipeline bubble per token); TP4's throughput gain over
TP2 is smaller over PCIe (the all-reduce crosses slower links); --goal picks accordingly.
The simulator is independent of Headroom, so these are its physics, seen through the
supervisor, the bench and the table."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path

import pytest

from headroom.bench.ramp import BenchConfig
from headroom.bench.workload import load_jsonl_distribution
from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.doctor.model_table import find_model
from headroom.probes.nvml import NvmlProbe
from headroom.supervisor.journal import Journal
from headroom.supervisor.settings import SupervisorSettings
from headroom.sweep.configs import check_feasible, order_tries, parse_try
from headroom.sweep.runner import run_sweep
from headroom.sweep.table import choose, render_json, render_text
from headroom.vllm_cmd import parse_command

pytestmark = pytest.mark.slow

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
TRIES = ["tp=1", "tp=2", "tp=4", "pp=2"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _sweep(tmp: Path, interconnect: str, monkeypatch) -> tuple[list, Journal]:
    scenario = tmp / f"h100x4-{interconnect}.toml"
    scenario.write_text(
        f'name = "h100x4-{interconnect}"\n[hardware]\ngpu = "H100-SXM"\ncount = 4\n'
        f'interconnect = "{interconnect}"\n'
    )
    state = tmp / f"state-{interconnect}.json"
    env = {
        "HEADROOM_SIM_SCENARIO": str(scenario),
        "HEADROOM_SIM_TIME_SCALE": "2",
        "HEADROOM_SIM_STATE": str(state),
    }
    monkeypatch.setenv("HEADROOM_NVML_STANDIN", str(state))  # the sampler reads the sim GPUs
    workload = tmp / "w.jsonl"
    workload.write_text(json.dumps({"prompt_tokens": 200, "output_tokens": 300}) + "\n")
    base = parse_command(
        ["vllm", "serve", MODEL, "--port", str(_free_port()), "--max-model-len", "4096"]
    )
    gpu, model = parse_gpu_spec("4xH100"), find_model(MODEL)
    tries = order_tries(
        [check_feasible(parse_try(t), base=base, model=model, gpu=gpu) for t in TRIES]
    )
    journal = Journal(tmp / f"data-{interconnect}" / "runs.jsonl")
    bench = BenchConfig(
        "http://127.0.0.1:0",
        ramp=(1, 16),
        step_duration_s=2.0,
        warmup_s=0.3,
        distribution=load_jsonl_distribution(workload),
        seed=7,
    )
    settings = SupervisorSettings(
        launcher="sim",
        data_dir=tmp / f"data-{interconnect}",
        state_dir=tmp / f"state-dir-{interconnect}",
        preflight=False,
        memory_timeout_s=10.0,
    )
    rows = asyncio.run(
        run_sweep(
            base, tries, bench=bench, settings=settings, journal=journal,
            sweep_id=f"sw-{interconnect}", env=env, nvml_factory=NvmlProbe, ready_timeout_s=90,
        )
    )  # fmt: skip
    return rows, journal


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    try:
        tmp = tmp_path_factory.mktemp("sweep")
        return {ic: _sweep(tmp, ic, mp) for ic in ("nvswitch", "pcie")}
    finally:
        mp.undo()


def by_label(rows) -> dict:
    return {r.label: r for r in rows}


def test_the_table_fills_with_the_baseline_first(sweeps):
    for rows, journal in sweeps.values():
        assert [r.label for r in rows] == ["TP=1", "TP=2", "PP=2", "TP=4"]
        assert all(r.outcome == "done" for r in rows), [(r.label, r.notes) for r in rows]
        for row in rows:
            assert row.throughput_tok_s and row.p95_e2e_c1_s and row.ttft_p95_s and row.itl_p95_s
            assert row.kv_capacity_tokens and row.kv_capacity_tokens > 10_000
            assert row.memory_peak_gib and 10 < row.memory_peak_gib < row.memory_total_gib
        text = render_text(rows, "throughput")
        assert (
            text.splitlines()[1].lstrip("*").startswith("TP=1")
            and "baseline" in text.splitlines()[1]
        )
        records = [r for r in journal.records() if r.extra.get("sweep")]
        assert len(records) == 4 and all(r.bench for r in records)
        assert {r.extra["sweep"]["label"] for r in records} == {"TP=1", "TP=2", "PP=2", "TP=4"}


def test_pp2_is_slower_than_tp2_for_one_user(sweeps):
    for rows, _ in sweeps.values():
        rows = by_label(rows)
        assert rows["PP=2"].p95_e2e_c1_s > rows["TP=2"].p95_e2e_c1_s


def test_tp4_gains_less_over_pcie_than_over_nvlink(sweeps):
    def gain(rows):
        rows = by_label(rows)
        return rows["TP=4"].throughput_tok_s / rows["TP=2"].throughput_tok_s

    assert gain(sweeps["pcie"][0]) < gain(sweeps["nvswitch"][0])


def test_goal_picks_accordingly(sweeps):
    for rows, _ in sweeps.values():
        fastest = min(rows, key=lambda r: r.p95_e2e_c1_s)
        most = max(rows, key=lambda r: r.throughput_tok_s)
        assert choose(rows, "latency").label == fastest.label
        assert choose(rows, "throughput").label == most.label
        doc = json.loads(render_json(rows, "latency", "x"))
        assert doc["chosen"] == fastest.label and doc["runner_up"]
        assert doc["rows"][0]["is_baseline"] and doc["rows"][0]["ratio"] == 1.0
    # over NVLink TP4 is the fastest for one user; over PCIe its all-reduce costs more
    nv = by_label(sweeps["nvswitch"][0])
    assert choose(sweeps["nvswitch"][0], "latency").label in ("TP=4", "TP=2")
    assert nv["TP=4"].p95_e2e_c1_s < nv["TP=1"].p95_e2e_c1_s
