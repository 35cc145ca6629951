"""headroom.vllm_cmd against vLLM's own argument parser (the real 0.32 environment).

Each command line is read by `parse_command` here and by vLLM's FlexibleArgumentParser +
make_arg_parser in the real environment's Python; every knob Headroom reads must have the
value vLLM reads. No server is started."""

from __future__ import annotations

import json
import subprocess

import pytest

from headroom.vllm_cmd import apply_changes, parse_command, render

pytestmark = pytest.mark.real_vllm

# Runs in the real vLLM's Python: read JSON cases on stdin, parse each with vLLM's parser,
# and answer vLLM's value for each knob, shaped like Headroom's (objects -> their fields).
VLLM_SIDE = r"""
import enum, json, sys
from vllm.utils.argparse_utils import FlexibleArgumentParser
try:
    from vllm.entrypoints.launchers.cli_args import make_arg_parser
except ImportError:  # older layout
    from vllm.entrypoints.openai.cli_args import make_arg_parser

def shape(theirs, mine):
    if isinstance(mine, dict):
        get = theirs.get if isinstance(theirs, dict) else (lambda k: getattr(theirs, k, None))
        return {k: shape(get(k), v) for k, v in mine.items()}
    if isinstance(theirs, enum.Enum):
        return theirs.value if isinstance(mine, (int, float)) else theirs.name
    return theirs

out = []
for case in json.load(sys.stdin):
    parser = make_arg_parser(FlexibleArgumentParser())
    ns = parser.parse_args(case["tokens"])
    values = vars(ns)
    got = {}
    for name, mine in case["mine"].items():
        got[name] = shape(values.get("model_tag") if name == "model" and values.get("model_tag") else values.get(name), mine)
    out.append(got)
print("RESULT" + json.dumps(out, default=str))
"""

MODEL = "/models/tiny-llama"
CASES = [
    ["vllm", "serve", MODEL, "-tp", "1", "--max-model-len", "16k", "--gpu_memory_utilization=0.85",
     "--enforce-eager", "--no-enable-prefix-caching", "--max-num-batched-tokens", "8K",
     "--kv-cache-memory-bytes", "10G", "--served-model-name", "a", "b", "--port", "8123", "-O3"],
    ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", MODEL,
     "--device-memory-utilization", "0.7", "--max-model-len", "auto", "--disable-log-stats",
     "--api-key", "k1", "k2", "--seed", "-5", "--enable-chunked-prefill", "-dp", "1", "-pp=1",
     "--max-num-seqs", "64", "--kv-cache-dtype", "auto", "--block-size", "16"],
    ["--model", MODEL, "--hf-overrides", '{"rope_theta": 10000}', "--limit-mm-per-prompt",
     '{"image": 2}', "--max_model_len", "2048", "--max-model-len", "4096", "--cpu-offload-gb", "1.5",
     "--no-enforce-eager", "--max-num-batched-tokens", "1.5k"],
    ["vllm", "serve", MODEL, "--compilation-config", '{"cudagraph_capture_sizes": [1, 2, 4]}',
     "--disable-custom-all-reduce", "--trust-remote-code", "--dtype", "bfloat16", "-q", "fp8",
     "--kv-cache-memory=1073741824", "--enforce"],  # argparse abbreviations
]  # fmt: skip


def _tokens_for_vllm(argv: list[str]) -> list[str]:
    """What vLLM's parser sees: the positional MODEL (vllm serve) and the flags."""
    command = parse_command(argv)
    model = [command.model] if command.model_is_positional else []
    return [*model, *command.tokens]


def _ask_vllm(python: str, cases: list[dict]) -> list[dict]:
    done = subprocess.run(
        [python, "-c", VLLM_SIDE],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        timeout=300,
    )
    marker = [line for line in done.stdout.splitlines() if line.startswith("RESULT")]
    assert done.returncode == 0 and marker, done.stderr[-3000:]
    return json.loads(marker[-1][len("RESULT") :])


def test_parse_command_agrees_with_vllms_parser(real_vllm_env):
    commands = [parse_command(argv) for argv in CASES]
    # Also what apply_changes writes must read the same in vLLM.
    changed = apply_changes(
        commands[0], {"max_model_len": 8192, "enforce_eager": False, "enable_prefix_caching": True,
                      "tensor_parallel_size": 1, "max_num_seqs": 32, "gpu_memory_utilization": 0.9}
    )  # fmt: skip
    commands.append(changed)
    cases = [
        {"tokens": _tokens_for_vllm(render(c)), "mine": json.loads(json.dumps(c.engine_args()))}
        for c in commands
    ]
    theirs = _ask_vllm(real_vllm_env.python, cases)
    for case, got in zip(cases, theirs, strict=True):
        assert got == case["mine"], case["tokens"]
    assert changed.get("enforce_eager") is None and changed.get("max_num_seqs") == 32


def test_plans_multi_node_serve_lines_parse_in_vllm(real_vllm_env):
    """Issue 16: the bring-up's `vllm serve` lines of both backends (TP 8 x PP 2 over two
    nodes) are read by vLLM 0.32's own parser with the values Headroom meant."""
    from headroom.doctor.bringup import plan_bringup

    ray, mp = plan_bringup(
        MODEL, tp=8, pp=2, nodes=2, gpus_per_node=8, node_ips=["10.0.0.1", "10.0.0.2"]
    )
    serve_lines = [ray.lines[-1].argv, *(line.argv for line in mp.lines)]
    commands = [parse_command(list(argv)) for argv in serve_lines]
    cases = [
        {"tokens": _tokens_for_vllm(render(c)), "mine": json.loads(json.dumps(c.engine_args()))}
        for c in commands
    ]
    theirs = _ask_vllm(real_vllm_env.python, cases)
    for case, got in zip(cases, theirs, strict=True):
        assert got == case["mine"], case["tokens"]
    assert theirs[0]["distributed_executor_backend"] == "ray"
    assert [t["node_rank"] for t in theirs[1:]] == [0, 1]
    assert theirs[2]["headless"] is True and theirs[1].get("headless") in (False, None)
    assert all(t["tensor_parallel_size"] == 8 and t["pipeline_parallel_size"] == 2 for t in theirs)
