"""`headroom topo` on saved files: text, JSON keys, --tp, and the no-GPU exit path."""

from __future__ import annotations

import io
import json

import pytest
from nvml_standin import FakeNvml
from nvml_standin.machines import h100_sxm_8, no_driver

from headroom.cli import topo
from headroom.probes import topology
from headroom.probes.nvml import NvmlProbe

A100 = "a100-pcie-8gpu-nv12-bridge-pairs-empty-cpu-affinity-truncated.txt"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = topo.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_json_has_the_documented_keys(capsys, fixtures_dir) -> None:
    path = fixtures_dir / "topo" / "h100-sxm-8gpu-nv18-8nic.txt"
    code, out, _ = run(capsys, "--file", str(path), "--json")
    data = json.loads(out)
    assert code == 0
    assert {"gpus", "links", "nics", "confidence", "verdicts"} <= set(data)
    assert data["gpus"][0] == "GPU0" and data["links"][3][3] == "X"
    assert data["nics"][7] == "NIC7" and data["nic_names"]["NIC7"] == "mlx5_7"
    assert [v["tp"] for v in data["verdicts"]] == [1, 2, 4, 8]
    assert set(data["verdicts"][3]) == {"tp", "gpus", "weakest_link", "level", "reasons"}
    assert data["verdicts"][3]["level"] == "good"


def test_text_output_for_bridge_pairs(capsys, fixtures_dir) -> None:
    code, out, _ = run(capsys, "--file", str(fixtures_dir / "topo" / A100), "--tp", "2,4")
    assert code == 0
    assert "GPU6  NODE NODE NODE NODE NODE NODE X    NV12 PHB" in out
    assert "TP=2   good" in out and "TP=4   poor" in out and "TP=8" not in out
    assert "--pipeline-parallel-size 2" in out


def test_stdin_and_repeated_tp(capsys, monkeypatch, fixtures_dir) -> None:
    text = (fixtures_dir / "topo" / "rtx4090-8gpu-all-sys-2nic-no-legend.txt").read_text()
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    code, out, _ = run(capsys, "-f", "-", "--tp", "4", "--tp", "16", "--json")
    levels = {v["tp"]: v["level"] for v in json.loads(out)["verdicts"]}
    assert code == 0 and levels == {4: "poor", 16: "impossible"}


@pytest.mark.parametrize("bad", ["0", "two", "2,-1"])
def test_bad_tp_is_a_usage_error(capsys, fixtures_dir, bad) -> None:
    code, _, err = run(capsys, "--file", str(fixtures_dir / "topo" / A100), "--tp", bad)
    assert code == 2 and "--tp" in err


def test_missing_file_and_unreadable_file(capsys, tmp_path) -> None:
    code, _, err = run(capsys, "--file", str(tmp_path / "nope.txt"))
    assert code == 2 and "cannot read" in err
    junk = tmp_path / "junk.txt"
    junk.write_text("hello\n")
    code, _, err = run(capsys, "--file", str(junk))
    assert code == 1 and "no GPU topology" in err


def test_no_nvidia_smi_and_no_nvml_exits_1(capsys, monkeypatch) -> None:
    async def nothing(nvml=None):
        return topology.unreadable("neither nvidia-smi nor NVML is available", "nvml")

    monkeypatch.setattr(topo, "read_topology", nothing)
    monkeypatch.setattr(topo, "NvmlProbe", lambda: NvmlProbe(FakeNvml(no_driver())))
    code, out, err = run(capsys)
    assert code == 1 and out == "" and "neither nvidia-smi nor NVML" in err


def test_live_machine_uses_nvml_names_and_matrix(capsys, monkeypatch) -> None:
    machine = h100_sxm_8()
    machine.nvlink_pairs = set()  # an NVSwitch box whose fabric is down: no NVLink at all
    machine.ancestor = {frozenset((a, b)): 50 for a in range(8) for b in range(8) if a != b}
    monkeypatch.setattr(topo, "NvmlProbe", lambda: NvmlProbe(FakeNvml(machine)))
    monkeypatch.setattr(topology, "run_nvidia_smi_topo", lambda timeout_s=10.0: None)
    code, out, _ = run(capsys, "--tp", "8")
    assert code == 0 and "source: nvml" in out and "TP=8   poor" in out
    assert "fabricmanager" in out  # H100 SXM names + no NV# link


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8-sig", "utf-16-le"])
def test_saved_files_in_other_encodings(capsys, tmp_path, fixtures_dir, encoding) -> None:
    text = (fixtures_dir / "topo" / "v100-pcie-4gpu-pix-phb.txt").read_text()
    path = tmp_path / "topo.txt"
    path.write_bytes(text.replace("\n", "\r\n").encode(encoding))  # PowerShell-style save
    code, out, _ = run(capsys, "--file", str(path), "--json")
    data = json.loads(out)
    assert code == 0 and data["confidence"] == "high" and data["links"][0][1] == "PIX"
