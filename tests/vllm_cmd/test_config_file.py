"""vLLM's --config FILE.yaml: expanded with vLLM's rules and precedence wherever Headroom reads
a command line, while the line itself keeps the user's --config reference."""

from __future__ import annotations

import json

import pytest

from headroom.cli import doctor, plan
from headroom.supervisor.restart import preview_for_command
from headroom.vllm_cmd import REMOVE, apply_changes, diff_flags, parse_command, render
from headroom.vllm_cmd.config_file import (
    ConfigFileError,
    expanded_argv,
    parse_command_with_config,
    with_config_file,
    yaml_to_args,
)

YAML = """\
# the example of vLLM's docs, plus the kinds of value its loader handles
model: meta-llama/Llama-3.1-8B-Instruct
tensor_parallel_size: 2
gpu-memory-utilization: 0.85
max-model-len: 8192
enforce-eager: true
disable-log-stats: false
api-key: sk-from-the-file
served-model-name: [llama, chat]
allowed-local-media-path: []
"""


@pytest.fixture
def cfg(tmp_path):
    path = tmp_path / "serve.yaml"
    path.write_text(YAML)
    return path


def test_yaml_becomes_flags_the_way_vllm_makes_them():
    assert yaml_to_args(YAML) == [
        "--model", "meta-llama/Llama-3.1-8B-Instruct",
        "--tensor_parallel_size", "2",
        "--gpu-memory-utilization", "0.85",
        "--max-model-len", "8192",
        "--enforce-eager",  # true: the bare flag; false and [] give nothing
        "--api-key", "sk-from-the-file",
        "--served-model-name", "llama", "chat",
    ]  # fmt: skip
    assert yaml_to_args("") == []


@pytest.mark.parametrize(
    ("text", "why"), [("- a\n- b\n", "mapping"), ("a: [b\n", "not valid YAML")]
)
def test_a_file_vllm_would_refuse_is_a_clear_error(text, why):
    with pytest.raises(ConfigFileError, match=why):
        yaml_to_args(text)


def test_the_file_counts_and_typed_flags_win(cfg):
    cmd = parse_command_with_config(
        ["vllm", "serve", "--config", str(cfg), "--max-model-len", "4096"]
    )
    assert cmd.model == "meta-llama/Llama-3.1-8B-Instruct"  # from the file: none typed
    assert cmd.get("tensor_parallel_size") == 2 and cmd.get("gpu_memory_utilization") == 0.85
    assert cmd.get("max_model_len") == 4096  # typed after the file: vLLM's argparse keeps it
    assert cmd.get("enforce_eager") is True and cmd.get("served_model_name") == ["llama", "chat"]
    typed = parse_command_with_config(["vllm", "serve", "my/model", "--config", str(cfg)])
    assert typed.model == "my/model"  # a positional MODEL beats the file's model:
    # rendering gives back exactly what was typed: the --config reference, nothing expanded
    assert render(cmd) == ["vllm", "serve", "--config", str(cfg), "--max-model-len", "4096"]
    assert render(typed) == ["vllm", "serve", "my/model", "--config", str(cfg)]


def test_api_server_form_and_relative_paths(cfg):
    argv = ["python", "-m", "vllm.entrypoints.openai.api_server", "--config", cfg.name]
    cmd = with_config_file(parse_command(argv), cwd=cfg.parent)
    assert cmd.model == "meta-llama/Llama-3.1-8B-Instruct" and cmd.get("tensor_parallel_size") == 2
    assert render(cmd) == argv
    assert expanded_argv(cmd)[:2] == ["--model", "meta-llama/Llama-3.1-8B-Instruct"]


def test_restart_keeps_the_file_and_the_diff_is_what_vllm_will_see(cfg):
    cmd = parse_command_with_config(["vllm", "serve", "--config", str(cfg)])
    new = apply_changes(cmd, {"gpu_memory_utilization": 0.92, "enforce_eager": False})
    assert render(new) == [
        "vllm", "serve", "--config", str(cfg),
        "--gpu-memory-utilization", "0.92", "--no-enforce-eager",
    ]  # fmt: skip
    assert {(c.name, c.old, c.new) for c in diff_flags(cmd, new)} == {
        ("gpu_memory_utilization", 0.85, 0.92),
        ("enforce_eager", True, False),
    }
    preview = preview_for_command(cmd, {"max_model_len": 4096})
    assert preview.argv[:4] == ("vllm", "serve", "--config", str(cfg))
    assert [(d.name, d.old, d.new) for d in preview.diff] == [("max_model_len", 8192, 4096)]
    # What the file sets cannot be removed by a typed flag: the diff says nothing changed.
    assert diff_flags(cmd, apply_changes(cmd, {"max_model_len": REMOVE})) == []


def test_file_problems(tmp_path, cfg):
    for argv, why in [
        (["vllm", "serve", "m", "--config", str(tmp_path / "none.yaml")], "cannot read"),
        (["vllm", "serve", "m", "--config", str(tmp_path / "x.json")], "yaml"),
        (["vllm", "serve", "m", "--config", str(cfg), "--config", str(cfg)], "more than one"),
    ]:
        with pytest.raises(ConfigFileError, match=why):
            parse_command_with_config(argv)
    bad = tmp_path / "bad.yaml"
    bad.write_text("tensor-parallel-size:\n")  # vLLM makes '--tensor-parallel-size None'
    with pytest.raises(ConfigFileError, match="expects an integer"):
        parse_command_with_config(["vllm", "serve", "m", "--config", str(bad)])


def test_doctor_reads_the_file_like_the_same_flags_typed(tmp_path, capsys):
    path = tmp_path / "big.yaml"
    path.write_text("model: meta-llama/Llama-3.1-70B-Instruct\n")
    code = doctor.main(["--gpus", "1xH100", "--json", "--", "vllm", "serve", "--config", str(path)])
    from_file = json.loads(capsys.readouterr().out)
    code2 = doctor.main(
        ["--gpus", "1xH100", "--json", "--", "vllm", "serve", "meta-llama/Llama-3.1-70B-Instruct"]
    )
    typed = json.loads(capsys.readouterr().out)
    assert code == code2 == 1
    assert [f["id"] for f in from_file["findings"]] == [f["id"] for f in typed["findings"]]
    assert from_file["findings"][0]["id"] == "predicted-no-kv-memory"
    assert doctor.main(["--", "vllm", "serve", "m", "--config", str(tmp_path / "no.yaml")]) == 2
    assert "cannot read --config" in capsys.readouterr().err


def test_plan_evaluates_the_command_with_its_file(tmp_path, capsys):
    path = tmp_path / "serve.yaml"
    path.write_text("tensor-parallel-size: 2\nmax-model-len: 16384\n")
    argv = ["Llama-3.1-8B", "--gpus", "2xRTX4090", "--json", "--",
            "vllm", "serve", "Llama-3.1-8B", "--config", str(path)]  # fmt: skip
    code = plan.main(argv)
    doc = json.loads(capsys.readouterr().out)
    assert code in (0, 1)
    assert "--config" in doc["command"] and doc["tensor_parallel_size"] == 2


def test_attach_launched_with_a_config_file(cfg, tmp_path):
    from headroom.supervisor.attached import parse_launch

    command, _ = parse_launch(f"vllm serve --config {cfg}")
    assert command.model == "meta-llama/Llama-3.1-8B-Instruct"  # named only in the file
    assert command.get("tensor_parallel_size") == 2
    gone, _ = parse_launch(f"vllm serve my/model --config {tmp_path / 'elsewhere.yaml'}")
    assert gone.model == "my/model" and gone.config_args == ()  # the file is not here: typed only
