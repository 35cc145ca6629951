"""Launcher templates and the config file."""

from __future__ import annotations

import sys

import pytest

from headroom.supervisor.launcher import (
    LAUNCHERS,
    LauncherError,
    build_argv,
    load_config,
    resolve_template,
)


def test_builtin_templates_expand_to_argv_lists():
    flags = ["--port", "8001", "--max-model-len", "4096"]
    assert build_argv(LAUNCHERS["vllm"], "Qwen/Qwen3-8B", flags) == [
        "vllm",
        "serve",
        "Qwen/Qwen3-8B",
        *flags,
    ]
    argv = build_argv(LAUNCHERS["api_server"], "/models/tiny", flags, python="/opt/v/bin/python")
    assert argv == [
        "/opt/v/bin/python",
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        "/models/tiny",
        *flags,
    ]
    assert build_argv(LAUNCHERS["sim"], "m", [])[:3] == [sys.executable, "-m", "headroom.simulator"]


def test_model_with_spaces_stays_one_argument():
    argv = build_argv("vllm serve {model} {flags}", "/my models/x", ["--served-model-name", "a b"])
    assert argv == ["vllm", "serve", "/my models/x", "--served-model-name", "a b"]


def test_missing_model_drops_the_model_option():
    assert build_argv(LAUNCHERS["api_server"], None, ["--port", "1"], python="py") == [
        "py",
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--port",
        "1",
    ]


def test_container_template_from_config(tmp_path):
    config_file = tmp_path / "config.toml"
    config_file.write_text(
        '[serve]\nlauncher = "docker"\npython = "/opt/vllm/bin/python"\n'
        '[launchers]\ndocker = "docker run --rm --gpus all vllm/vllm-openai:latest '
        '--model {model} {flags}"\n'
    )
    config = load_config(config_file)
    assert config.launcher == "docker"
    assert config.python == "/opt/vllm/bin/python"
    template = resolve_template(config.launcher, config)
    assert build_argv(template, "m", ["--port", "9"])[:3] == ["docker", "run", "--rm"]
    assert build_argv(template, "m", ["--port", "9"])[-4:] == ["--model", "m", "--port", "9"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[serve\n", "not valid TOML"),
        ("[serve]\nlaunch = 'x'\n", "unknown key"),
        ("[launchers]\nx = 3\n", "template strings"),
    ],
)
def test_bad_config_says_why(tmp_path, text, message):
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(LauncherError, match=message):
        load_config(path)


def test_missing_config_is_empty(tmp_path):
    assert load_config(tmp_path / "absent.toml").launcher is None


def test_unknown_launcher_and_bad_templates():
    with pytest.raises(LauncherError, match="unknown launcher"):
        resolve_template("podman")
    assert resolve_template("my-vllm serve {model} {flags}") == "my-vllm serve {model} {flags}"
    with pytest.raises(LauncherError, match="word of its own"):
        build_argv("vllm serve {model} --x={flags}", "m", [])
    with pytest.raises(LauncherError, match="cannot be split"):
        build_argv("vllm 'serve {flags}", "m", [])
