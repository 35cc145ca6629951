"""`headroom doctor --ray-address/--ray-dashboard/--ray-status`: the cluster is read in the
input-loading step and the doctor names why a placement group waits; --gpus NODESxCOUNT is
printed back as the doctor read it."""

from __future__ import annotations

import json

from support.ray_fakes import (
    RAY_FIXTURES,
    argv_seen,
    fake_ray,
    state_api,
)

from headroom.cli import doctor

TOO_FEW = str(RAY_FIXTURES / "status-2026-new-format-pending-pg-2node-gpustack-5509.txt")
VLLM = ["--", "vllm", "serve", "meta-llama/Llama-3.1-70B-Instruct"]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = doctor.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_saved_ray_status_names_too_few_gpus(capsys):
    code, out, _ = run(capsys, "--ray-status", TOO_FEW, "--json", *VLLM, "-tp", "2")
    doc = json.loads(out)
    found = {f["id"]: f for f in doc["findings"]}
    assert code == 1
    assert "ray-too-few-gpus" in found
    assert any("the cluster has 1 in all" in e for e in found["ray-too-few-gpus"]["evidence"])


def test_shape_is_printed_back(capsys):
    code, out, _ = run(capsys, "--gpus", "2x8xH100", *VLLM, "-tp", "8", "-pp", "2")
    assert out.splitlines()[0] == "GPUs: 2 nodes x 8 H100 (16 GPUs in all)"
    code, out, _ = run(capsys, "--gpus", "8xH100", "--nodes", "2", "--json", *VLLM)
    assert json.loads(out)["shape"] == "2 nodes x 8 H100 (16 GPUs in all)"
    code, out, _ = run(capsys, "--gpus", "8xH100", *VLLM)
    assert out.splitlines()[0] == "GPUs: 1 node x 8 H100"


def test_contradicting_node_counts_are_bad_input(capsys):
    code, _, err = run(capsys, "--gpus", "2x8xH100", "--nodes", "3", *VLLM)
    assert code == 2 and "--gpus says 2 nodes and --nodes says 3" in err


def test_ray_address_runs_ray_status_and_dashboard_adds_nodes(capsys, tmp_path):
    ray = fake_ray(tmp_path)
    with state_api() as url:
        code, out, _ = run(
            capsys,
            "--ray-address",
            "10.0.0.1:6379",
            "--ray",
            str(ray),
            "--ray-dashboard",
            url,
            "--json",
            *VLLM,
            "-tp",
            "3",
        )
    assert argv_seen(tmp_path) == [["status", "-v", "--address", "10.0.0.1:6379"]]
    found = {f["id"]: f for f in json.loads(out)["findings"]}
    # 3 GPUs STRICT_PACK on nodes of 2 (from both ray status -v and the state API)
    assert "ray-bundle-exceeds-node" in found
    assert "ray-tp-spans-nodes" in found
    assert code == 1


def test_dashboard_only_reads_the_state_api(capsys):
    with state_api() as url:
        code, out, _ = run(capsys, "--ray-dashboard", url, "--json", *VLLM, "-tp", "8")
    doc = json.loads(out)
    found = {f["id"]: f for f in doc["findings"]}
    # the pending group asks 3 of the 4 GPUs: not too few; TP 8 is over the 2 of a node
    assert "ray-too-few-gpus" not in found
    assert found["ray-tp-spans-nodes"]["evidence"] == ["GPUs per node: 2, 2"]


def test_unreachable_cluster_is_lacking_not_an_error(capsys, tmp_path):
    ray = fake_ray(tmp_path, exit_code=1)
    code, out, _ = run(capsys, "--ray-address", "127.0.0.1:1", "--ray", str(ray), "--json", *VLLM)
    doc = json.loads(out)
    assert any("Ray cluster: ray status exited 1" in item for item in doc["lacking"])
    assert code in (0, 1)


def test_missing_ray_executable_is_lacking(capsys, tmp_path):
    code, out, _ = run(
        capsys, "--ray-address", "127.0.0.1:1", "--ray", str(tmp_path / "no-ray"), "--json"
    )
    assert any("not found" in item for item in json.loads(out)["lacking"])


def test_unreadable_ray_status_file_is_bad_input(capsys, tmp_path):
    junk = tmp_path / "status.txt"
    junk.write_text("hello\n")
    code, _, err = run(capsys, "--ray-status", str(junk))
    assert code == 2 and "not a `ray status` output" in err
    code, _, err = run(capsys, "--ray-status", str(tmp_path / "missing.txt"))
    assert code == 2 and "cannot read" in err
    code, _, err = run(capsys, "--ray-dashboard", "head:8265")
    assert code == 2 and "expected a URL" in err
