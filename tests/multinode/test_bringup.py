"""`--gpus NODESxCOUNTxNAME`, and plan's per-node bring-up for both backends."""

from __future__ import annotations

import json

import pytest

from headroom.cli import plan as plan_cli
from headroom.doctor.bringup import plan_bringup
from headroom.doctor.gpu_spec import GpuSpecError, parse_gpu_spec, resolve_nodes
from headroom.vllm_cmd import parse_command
from headroom.vllm_cmd.flags import lookup_option


def test_shape_said_once():
    spec = parse_gpu_spec("2x8xH100")
    assert (spec.nodes, spec.count) == (2, 8)
    assert resolve_nodes(spec, None) == 2
    assert spec.shape() == "2 nodes x 8 H100 (16 GPUs in all)"
    plain = parse_gpu_spec("16xH100")
    assert plain.nodes is None and plain.count == 16
    assert plain.shape(2) == "2 nodes x 16 H100 (32 GPUs in all)"


def test_two_node_counts_that_disagree_are_refused():
    with pytest.raises(GpuSpecError, match="give one of them"):
        resolve_nodes(parse_gpu_spec("2x8xH100"), 3)
    with pytest.raises(GpuSpecError, match="one kind of node"):
        parse_gpu_spec("2x4xH100+2x4xA100")


def _flags(argv):
    """Every option token of a vllm serve line must be a flag vLLM 0.32's parser knows."""
    unknown = [t for t in argv if t.startswith("-") and lookup_option(t.split("=")[0]) is None]
    return unknown


def test_both_backends_for_tp8_pp2():
    ray, mp = plan_bringup(
        "M", tp=8, pp=2, nodes=2, gpus_per_node=8, node_ips=["10.0.0.1", "10.0.0.2"]
    )
    head_start, worker_start, serve = ray.lines
    assert head_start.argv[:3] == ("ray", "start", "--head")
    assert "--node-ip-address=10.0.0.1" in head_start.argv
    assert worker_start.env["VLLM_HOST_IP"] == "10.0.0.2"  # not copied by Ray: set per node
    assert "--address=10.0.0.1:6379" in worker_start.argv
    assert "GLOO_SOCKET_IFNAME" in worker_start.env  # GLOO_* is not a copied prefix
    assert serve.env["VLLM_RAY_EXTRA_ENV_VAR_PREFIXES_TO_COPY"] == "GLOO_"
    cmd = parse_command(list(serve.argv))
    assert cmd.get("tensor_parallel_size") == 8 and cmd.get("pipeline_parallel_size") == 2
    assert cmd.get("distributed_executor_backend") == "ray"
    assert not _flags(serve.argv)
    head, other = mp.lines
    for rank, line in enumerate(mp.lines):
        parsed = parse_command(list(line.argv))
        assert parsed.get("nnodes") == 2 and parsed.get("node_rank") == rank
        assert parsed.get("master_addr") == "10.0.0.1"
        assert not _flags(line.argv)
    assert parse_command(list(other.argv)).get("headless") is True
    assert not parse_command(list(head.argv)).has("headless")


def test_plan_prints_the_bring_up_for_a_model_that_needs_two_nodes(capsys):
    code = plan_cli.main(["meta-llama/Llama-3.1-405B-Instruct", "--gpus", "8xH100", "--nodes", "2"])
    out = capsys.readouterr().out
    assert code == 0
    assert "2 nodes x 8 H100 (16 GPUs in all)" in out
    assert "bring-up with Ray" in out and "bring-up with multiprocessing" in out
    assert "--pipeline-parallel-size 2" in out and "--headless" in out
    code = plan_cli.main(["meta-llama/Llama-3.1-405B-Instruct", "--gpus", "2x8xH100", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["shape"] == "2 nodes x 8 H100 (16 GPUs in all)"
    assert [line["node"] for line in doc["bringup"]["mp"]] == ["head", "node 1"]
    assert doc["bringup"]["ray"][-1]["argv"][:2] == ["vllm", "serve"]


def test_plan_on_one_node_prints_no_bring_up(capsys):
    assert plan_cli.main(["meta-llama/Llama-3.1-8B-Instruct", "--gpus", "2x8xH100"]) == 0
    assert "bring-up" not in capsys.readouterr().out


def test_the_bring_up_drops_tp_and_pp_in_every_spelling():
    for argv in (
        ["vllm", "serve", "M", "-tp", "16", "--max-model-len", "8192"],
        ["vllm", "serve", "M", "--tensor-parallel-size=16", "--pipeline-parallel-size=1",
         "--max-model-len", "8192"],
        ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "M", "-tp=16",
         "--max-model-len", "8192"],
    ):  # fmt: skip
        assert plan_cli._flags_after_layout(argv) == ["--max-model-len", "8192"], argv
