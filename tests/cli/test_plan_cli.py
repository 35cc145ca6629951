"""`headroom plan`: the layouts the five steps give, the JSON keys and bad input."""

from __future__ import annotations

import json

import pytest

from headroom.cli import plan

KEYS = {
    "weights_gib_per_gpu",
    "activation_gib",
    "overhead_gib",
    "kv_cache_gib_per_gpu",
    "kv_capacity_tokens",
    "max_model_len_fit",
    "max_concurrency",
}


def run_json(capsys, *argv: str) -> tuple[int, dict]:
    argv = list(argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    code = plan.main([*argv[:cut], "--json", *argv[cut:]])
    out, _ = capsys.readouterr()
    return code, json.loads(out)


def test_llama_70b_on_8_h100_uses_tp_8_or_4_in_one_node(capsys):
    code, doc = run_json(capsys, "meta-llama/Llama-3.1-70B-Instruct", "--gpus", "8xH100")
    assert code == 0 and KEYS <= set(doc)
    assert doc["tensor_parallel_size"] in (4, 8) and doc["pipeline_parallel_size"] == 1
    assert doc["tp_lower_bound"] == 4  # TP 2 leaves too little KV for 131,072 tokens
    assert doc["tp_upper_bound"] == 8
    assert doc["command"][:3] == ["vllm", "serve", "meta-llama/Llama-3.1-70B-Instruct"]
    assert "--tensor-parallel-size" in doc["command"]
    assert any(line.startswith("budget = ") for line in doc["arithmetic"])
    # throughput goal: the lowest TP, the node's other GPUs as replicas
    code, doc = run_json(
        capsys, "meta-llama/Llama-3.1-70B-Instruct", "--gpus", "8xH100", "--goal", "throughput"
    )
    assert (doc["tensor_parallel_size"], doc["data_parallel_size"]) == (4, 2)


def test_llama_70b_on_two_nodes_of_4_rtx4090_is_tp4_pp2(capsys):
    code, doc = run_json(
        capsys,
        "Llama-3.1-70B",
        "--gpus",
        "4xRTX4090",
        "--nodes",
        "2",
        "--context",
        "8192",
        "--concurrency",
        "4",
    )
    assert code == 0
    assert (doc["tensor_parallel_size"], doc["pipeline_parallel_size"]) == (4, 2)
    assert doc["tp_lower_bound"] is None  # one node of 24 GB cards cannot hold 131 GiB of weights
    assert "NVLink" in doc["tp_upper_reason"] or doc["tp_upper_bound"] == 4
    assert doc["weights_gib_per_gpu"] == pytest.approx(70.55e9 * 2 / 2**30 / 8, rel=0.05)
    assert doc["kv_capacity_tokens"] >= 8192 * 4
    assert "--pipeline-parallel-size" in doc["command"]


def test_text_output_shows_the_arithmetic(capsys):
    code = plan.main(["Llama-3.1-8B", "--gpus", "1xRTX4090", "--context", "8192"])
    out, _ = capsys.readouterr()
    assert code == 0
    for needle in (
        "budget = ",
        "weights = ",
        "KV cache = ",
        "TP lower bound",
        "TP upper bound",
        "vllm serve",
    ):
        assert needle in out


def test_given_command_line_is_evaluated(capsys):
    code, doc = run_json(
        capsys,
        "Llama-3.1-8B",
        "--gpus",
        "1xRTX4090",
        "--",
        "vllm",
        "serve",
        "meta-llama/Llama-3.1-8B-Instruct",
        "--max-model-len",
        "131072",
    )
    assert code == 1 and doc["fits"] is False
    assert doc["max_model_len_fit"] < 131072
    assert doc["command"][:2] == ["vllm", "serve"]


@pytest.mark.parametrize(
    "argv",
    [
        ["Llama-3.1-8B"],
        ["Llama-3.1-8B", "--gpus", "2xWhat"],
        ["no-such-model", "--gpus", "1xH100"],
        ["Llama-3.1-8B", "--gpus", "1xH100", "--nodes", "0"],
        ["Llama-3.1-8B", "--gpus", "1xH100", "--goal", "x"],
    ],
)
def test_bad_input_exits_2(capsys, argv):
    assert plan.main(argv) == 2


def test_slow_links_keep_tp_small_and_use_pp(capsys):
    from pathlib import Path

    topo = (
        Path(__file__).parents[1] / "fixtures" / "topo" / "rtx4090-8gpu-all-sys-2nic-no-legend.txt"
    )
    code, doc = run_json(
        capsys, "Llama-3.1-70B", "--gpus", "8xRTX4090", "--context", "8192", "--topo", str(topo)
    )
    assert code == 0
    assert doc["tp_upper_bound"] == 2 and "topology" in doc["tp_upper_reason"]
    assert (doc["tensor_parallel_size"], doc["pipeline_parallel_size"]) == (2, 4)
    assert doc["steps"][2]["status"] == "ok"


def test_weights_larger_than_the_gpu_fail_step_1_and_the_line_is_not_recommended(capsys):
    code = plan.main(["meta-llama/Llama-3.1-405B-Instruct", "--gpus", "1xRTX4090"])
    out, _ = capsys.readouterr()
    assert code == 1
    assert "FAIL 1." in out  # 756 GiB of weights on a 24 GiB GPU: no context loads it
    assert "Recommended command" not in out and "Closest command (it does not fit" in out
    code, doc = run_json(capsys, "meta-llama/Llama-3.1-405B-Instruct", "--gpus", "1xRTX4090")
    assert code == 1 and doc["steps"][0]["status"] == "fail" and not doc["fits"]


def test_a_plan_that_fits_is_recommended(capsys):
    assert plan.main(["meta-llama/Llama-3.1-8B-Instruct", "--gpus", "1xH100"]) == 0
    out, _ = capsys.readouterr()
    assert "Recommended command:" in out and "FAIL" not in out
