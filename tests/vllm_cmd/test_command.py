"""headroom.vllm_cmd: parse every real form of a vLLM command line, change knobs, render back."""

from __future__ import annotations

import pytest

from headroom.vllm_cmd import (
    REMOVE,
    CommandLineError,
    FlagChange,
    VllmCommand,
    apply_changes,
    diff_flags,
    parse_command,
    parse_human_int,
    redact_argv,
    redact_env,
    render,
)
from headroom.vllm_cmd.flags import FLAGS_BY_DEST, lookup_option

API = ["python", "-m", "vllm.entrypoints.openai.api_server"]


@pytest.mark.parametrize(
    ("argv", "launcher", "model"),
    [
        (["vllm", "serve", "Qwen/Qwen3-8B", "--port", "8001"], ("vllm", "serve"), "Qwen/Qwen3-8B"),
        (["vllm", "serve", "--model", "m", "-tp", "2"], ("vllm", "serve"), "m"),
        (["/opt/venv/bin/vllm", "serve", "m"], ("/opt/venv/bin/vllm", "serve"), "m"),
        ([*API, "--model", "/models/tiny"], tuple(API), "/models/tiny"),
        (["python3", "-m", "vllm.entrypoints.openai.api_server", "--model=m"], None, "m"),
        (
            [
                "/usr/bin/python3.11",
                "-u",
                "-m",
                "vllm.entrypoints.openai.api_server",
                "--model",
                "m",
            ],
            None,
            "m",
        ),
        (["python", "-m", "vllm.entrypoints.cli.main", "serve", "m"], None, "m"),
        (["python", "-m", "headroom.simulator", "serve", "sim-8b", "--port", "9"], None, "sim-8b"),
        (["--model", "m", "--port", "8000"], (), "m"),
        (["--port", "8000"], (), None),
        (
            ["env", "CUDA_VISIBLE_DEVICES=0,1", "HF_TOKEN=x", "vllm", "serve", "m"],
            ("env", "CUDA_VISIBLE_DEVICES=0,1", "HF_TOKEN=x", "vllm", "serve"),
            "m",
        ),
        ([], (), None),
    ],
)
def test_launch_forms(argv, launcher, model):
    cmd = parse_command(argv)
    if launcher is not None:
        assert cmd.launcher == launcher
    assert cmd.model == model
    assert render(cmd) == argv


def test_string_is_split_like_a_shell():
    cmd = parse_command("vllm serve m --compilation-config '{\"level\": 3}'")
    assert cmd.get("compilation_config") == {"level": 3}


def test_values_are_typed():
    cmd = parse_command(
        [
            *["vllm", "serve", "m", "-tp", "2", "-pp=2", "-dp", "1", "-q", "awq"],
            *["--gpu-memory-utilization", "0.85", "--max-model-len", "16k"],
            *["--max-num-batched-tokens=8K", "--kv-cache-memory-bytes", "10G"],
            *["--max-num-seqs", "64", "--enforce-eager", "--no-enable-prefix-caching"],
            *["--disable-chunked-prefill", "--hf-overrides", '{"rope_theta": 1e6}'],
            *["--limit-mm-per-prompt", '{"image": 2}', "--served-model-name", "a", "b"],
            *["--disable-log-stats", "--kv-cache-dtype", "fp8", "-O3"],
        ]
    )
    assert cmd.get("tensor_parallel_size") == 2
    assert cmd.get("pipeline_parallel_size") == 2
    assert cmd.get("data_parallel_size") == 1
    assert cmd.get("quantization") == "awq"
    assert cmd.get("gpu_memory_utilization") == 0.85
    assert cmd.get("max_model_len") == 16000
    assert cmd.get("max_num_batched_tokens") == 8192
    assert cmd.get("kv_cache_memory_bytes") == 10 * 2**30
    assert cmd.get("max_num_seqs") == 64
    assert cmd.get("enforce_eager") is True
    assert cmd.get("enable_prefix_caching") is False
    assert cmd.get("enable_chunked_prefill") is False
    assert cmd.get("hf_overrides") == {"rope_theta": 1e6}
    assert cmd.get("limit_mm_per_prompt") == {"image": 2}
    assert cmd.get("served_model_name") == ["a", "b"]
    assert cmd.get("disable_log_stats") is True
    assert cmd.get("kv_cache_dtype") == "fp8"
    assert cmd.get("optimization_level") == "3"
    assert cmd.has("tensor-parallel-size") and not cmd.has("block_size")
    assert cmd.get("block_size", 16) == 16


@pytest.mark.parametrize("text", ["auto", "-1", "AUTO"])
def test_max_model_len_auto(text):
    assert parse_command(["--max-model-len", text]).get("max_model_len") == -1


def test_aliases_underscores_and_repeats():
    cmd = parse_command(
        ["--device-memory-utilization", "0.7", "--gpu_memory_utilization=0.8", "--port", "1"]
    )
    assert cmd.get("gpu_memory_utilization") == 0.8  # last one wins, as in argparse
    assert parse_command(["--port", "1", "--port", "2"]).get("port") == 2


def test_dotted_json_keys_merge_like_vllm():
    cmd = parse_command(
        [
            *["--compilation-config.x.a", "1", "--compilation-config.x.b", "2"],
            *["-cc.mode=4", "--compilation_config.sizes+", "1,2", "--cc2.size", "16k"],
        ]
    )
    assert cmd.get("compilation_config") == {"x": {"a": 1, "b": 2}, "mode": 4, "sizes": ["1", "2"]}
    assert cmd.get("cc2") == {"size": 16000}
    # vLLM appends the merged dotted keys after every flag: they replace a full JSON value
    full = parse_command(["--compilation-config.level", "1", "-cc", '{"level": 3}'])
    assert full.get("compilation_config") == {"level": 1}
    assert parse_command(["-cc", '{"a": 1}', "-cc", '{"b": 2}']).get("compilation_config") == {
        "b": 2
    }


def test_unknown_flags_are_kept_with_their_values():
    argv = ["vllm", "serve", "m", "--future-knob", "7", "--new-switch", "--port", "8000"]
    cmd = parse_command(argv)
    assert cmd.get("future_knob") == 7
    assert cmd.get("new_switch") is True
    assert cmd.get("port") == 8000
    assert render(cmd) == argv
    changed = apply_changes(cmd, {"future_knob": 9})
    assert render(changed) == [
        "vllm",
        "serve",
        "m",
        "--future-knob",
        "9",
        "--new-switch",
        "--port",
        "8000",
    ]


def test_negative_numbers_are_values():
    assert parse_command(["--seed", "-5"]).get("seed") == -5


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["vllm", "serve", "m", "--port"], "--port needs a value"),
        (["vllm", "serve", "m", "--port", "http"], "--port expects an integer"),
        (["vllm", "serve", "m", "--hf-overrides", "{bad"], None),  # json_or_str: a string
        (["--compilation-config", "{bad"], "--compilation-config expects JSON"),
        (["--kv-cache-memory-bytes", "1.5G"], "decimals are not allowed"),
        (["docker", "run", "vllm/vllm-openai"], "not a vLLM command line"),
        (["vllm", "bench", "serve"], "only `vllm serve`"),
        (["python", "-m"], "without `-m MODULE`"),
        (["CUDA_VISIBLE_DEVICES=0", "vllm", "serve", "m"], "needs a shell"),
        (["env", "-i", "vllm", "serve", "m"], "options are not supported"),
    ],
)
def test_clear_errors(argv, words):
    if words is None:
        assert parse_command(argv).get("hf_overrides") == "{bad"
        return
    with pytest.raises(CommandLineError, match=words):
        parse_command(argv)


def test_command_error_is_a_value_error():
    assert issubclass(CommandLineError, ValueError)


@pytest.mark.parametrize(
    ("text", "value"),
    [("4096", 4096), ("16k", 16000), ("16K", 16384), ("10G", 10 * 2**30), ("10g", 10**10),
     ("1.5k", 1500), ("2T", 2 * 2**40), (" 3m ", 3 * 10**6)],
)  # fmt: skip
def test_parse_human_int(text, value):
    assert parse_human_int(text) == value


@pytest.mark.parametrize("text", ["", "ten", "1.5K", "4x", "1e3"])
def test_parse_human_int_rejects(text):
    with pytest.raises(CommandLineError):
        parse_human_int(text)


# --- apply_changes ------------------------------------------------------------------------


def test_apply_changes_only_touches_named_knobs():
    argv = ["vllm", "serve", "m", "-tp", "2", "--max-model-len=32k", "--api-key", "s", "--x", "y"]
    cmd = parse_command(argv)
    new = apply_changes(
        cmd, {"tensor_parallel_size": 4, "max_model_len": 16384, "max_num_seqs": 32}
    )
    assert render(new) == [
        *["vllm", "serve", "m", "-tp", "4", "--max-model-len=16384", "--api-key", "s"],
        *["--x", "y", "--max-num-seqs", "32"],
    ]
    assert render(cmd) == argv  # the original is untouched


def test_apply_booleans():
    cmd = parse_command(["vllm", "serve", "m", "--port", "1"])
    eager = apply_changes(cmd, {"enforce_eager": True})
    assert render(eager)[-1] == "--enforce-eager"
    # enforce_eager is off by default: turning it off removes the flag
    assert render(apply_changes(eager, {"enforce_eager": False})) == render(cmd)
    # prefix caching defaults to "decided by the model": off must be said explicitly
    off = apply_changes(cmd, {"enable_prefix_caching": False})
    assert render(off)[-1] == "--no-enable-prefix-caching"
    assert off.get("enable_prefix_caching") is False
    assert apply_changes(off, {"enable_prefix_caching": True}).get("enable_prefix_caching") is True
    # the user's own spelling of "off" is kept
    mine = parse_command(["--disable-chunked-prefill"])
    assert render(apply_changes(mine, {"enable_chunked_prefill": False})) == [
        "--disable-chunked-prefill"
    ]
    assert render(apply_changes(mine, {"enable_chunked_prefill": True})) == [
        "--enable-chunked-prefill"
    ]
    # store_true flags: off = absent
    stats = parse_command(["--disable-log-stats", "--port", "1"])
    assert render(apply_changes(stats, {"disable_log_stats": False})) == ["--port", "1"]


def test_an_older_releases_store_boolean_word_is_the_value():
    """vLLM 0.6.3's `--enable-chunked-prefill` was a StoreBoolean with an optional word
    (engine/arg_utils.py: nargs="?", const="True"): `--enable-chunked-prefill false` turns
    chunked prefill off; the word is read as the value, and a change keeps that form."""
    cmd = parse_command(["vllm", "serve", "m", "--enable-chunked-prefill", "false", "--port", "1"])
    assert cmd.get("enable_chunked_prefill") is False
    on = apply_changes(cmd, {"enable_chunked_prefill": True})
    assert render(on) == ["vllm", "serve", "m", "--enable-chunked-prefill", "true", "--port", "1"]
    assert on.get("enable_chunked_prefill") is True
    assert diff_flags(cmd, on) == [FlagChange("enable_chunked_prefill", False, True)]
    assert parse_command(["--enable-chunked-prefill", "True"]).get("enable_chunked_prefill")
    # the bare switch stays a switch, and a switch vLLM never read so keeps its word stray
    assert parse_command(["--enable-chunked-prefill", "--port", "1"]).get("enable_chunked_prefill")
    eager = parse_command(["vllm", "serve", "m", "--enforce-eager", "false"])
    assert eager.get("enforce_eager") is True


def test_apply_remove_and_none():
    cmd = parse_command(["vllm", "serve", "m", "--enforce-eager", "--port", "1", "--enforce-eager"])
    assert render(apply_changes(cmd, {"enforce_eager": REMOVE})) == [
        "vllm",
        "serve",
        "m",
        "--port",
        "1",
    ]
    assert render(apply_changes(cmd, {"port": None})) == [
        "vllm",
        "serve",
        "m",
        "--enforce-eager",
        "--enforce-eager",
    ]
    assert repr(REMOVE) == "REMOVE"


def test_apply_rejects_value_for_a_switch():
    with pytest.raises(CommandLineError, match="on/off"):
        apply_changes(parse_command([]), {"enforce_eager": "yes"})


def test_apply_keeps_spelling_and_handles_model():
    cmd = parse_command([*API, "--model", "a", "--gpu_memory_utilization=0.9", "-O", "3"])
    new = apply_changes(cmd, {"gpu_memory_utilization": 0.8, "model": "b", "optimization_level": 1})
    assert render(new) == [*API, "--model", "b", "--gpu_memory_utilization=0.8", "-O", "1"]
    assert new.model == "b" and new.flag_tokens() == ["--gpu_memory_utilization=0.8", "-O", "1"]
    served = parse_command(["vllm", "serve", "a", "-O3"])
    assert render(apply_changes(served, {"model": "b", "optimization_level": 0})) == [
        "vllm",
        "serve",
        "b",
        "-O0",
    ]


def test_apply_json_and_lists():
    cmd = apply_changes(
        parse_command(["--compilation-config.level", "3"]),
        {
            "compilation_config": {"level": 0, "cudagraph_mode": "NONE"},
            "served_model_name": ["x", "y"],
        },
    )
    assert render(cmd) == [
        "--compilation-config", '{"level":0,"cudagraph_mode":"NONE"}', "--served-model-name", "x", "y"
    ]  # fmt: skip
    assert cmd.get("compilation_config") == {"level": 0, "cudagraph_mode": "NONE"}


def test_diff_flags():
    old = parse_command(["vllm", "serve", "m", "-tp", "2", "--max-model-len", "32768"])
    new = apply_changes(
        old, {"max_model_len": 16384, "enforce_eager": True, "tensor_parallel_size": 2}
    )
    assert diff_flags(old, new) == [
        FlagChange("max_model_len", 32768, 16384),
        FlagChange("enforce_eager", None, True),
    ]
    assert diff_flags(old, old) == []
    dropped = apply_changes(old, {"tensor_parallel_size": REMOVE})
    assert diff_flags(old, dropped) == [FlagChange("tensor_parallel_size", 2, None)]


# --- secrets --------------------------------------------------------------------------------


def test_redact_argv():
    argv = [
        *["env", "HF_TOKEN=hf_abc", "vllm", "serve", "m", "--api-key", "k1", "k2", "--port", "1"],
        *["--api-key=k3", "--hf-token", "hf_x", "--api_key", "k4", "Authorization: Bearer t0k"],
    ]
    out = redact_argv(argv)
    text = " ".join(out)
    for secret in ("hf_abc", "k1", "k2", "k3", "hf_x", "k4", "t0k"):
        assert secret not in text
    assert out[:5] == ["env", "HF_TOKEN=***", "vllm", "serve", "m"]
    assert out[5:10] == ["--api-key", "***", "***", "--port", "1"]
    assert "--api-key=***" in out
    assert redact_argv(["--port", "1"]) == ["--port", "1"]


def test_redact_env():
    env = {
        "HF_TOKEN": "a", "HUGGING_FACE_HUB_TOKEN": "b", "VLLM_API_KEY": "c", "OPENAI_API_KEY": "d",
        "MY_SECRET_THING": "e", "DB_PASSWORD": "f", "PATH": "/bin", "CUDA_VISIBLE_DEVICES": "0,1",
        "NCCL_DEBUG": "INFO", "TOKENIZERS_PARALLELISM": "false",
    }  # fmt: skip
    out = redact_env(env)
    assert {k for k, v in out.items() if v == "***"} == {
        "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "VLLM_API_KEY", "OPENAI_API_KEY", "MY_SECRET_THING", "DB_PASSWORD",
    }  # fmt: skip
    assert env["HF_TOKEN"] == "a"  # a copy


# --- the flag table ------------------------------------------------------------------------


def test_flag_table_covers_common_flags():
    for option in [
        "--tensor-parallel-size", "-tp", "-pp", "-dp", "-q", "--gpu-memory-utilization",
        "--device-memory-utilization", "--kv-cache-memory-bytes", "--max-model-len",
        "--max-num-seqs", "--max-num-batched-tokens", "--enforce-eager", "--enable-prefix-caching",
        "--enable-chunked-prefill", "--kv-cache-dtype", "--swap-space", "--cpu-offload-gb",
        "--port", "--host", "--served-model-name", "--disable-log-stats", "--api-key",
        "--compilation-config", "--hf-overrides", "--limit-mm-per-prompt", "--block-size",
        "--dtype", "--trust-remote-code", "--disable-custom-all-reduce", "--speculative-config",
    ]:  # fmt: skip
        assert lookup_option(option) is not None, option
    assert len(FLAGS_BY_DEST) > 250


def test_hand_built_command_renders():
    cmd = VllmCommand(launcher=("vllm", "serve"), model="m", tokens=("--port", "1"))
    assert render(cmd) == ["vllm", "serve", "m", "--port", "1"]
    assert cmd.engine_args() == {"port": 1, "model": "m"}


def test_unambiguous_abbreviations_like_argparse():
    # vLLM's own memory summary suggests `--kv-cache-memory=N` (a prefix of -bytes)
    cmd = parse_command(
        ["vllm", "serve", "m", "--kv-cache-memory=10G", "--enforce", "--max-num", "3"]
    )
    assert cmd.get("kv_cache_memory_bytes") == 10 * 2**30
    assert cmd.get("enforce_eager") is True
    assert (
        cmd.get("max_num") == 3
    )  # ambiguous (--max-num-seqs, --max-num-batched-tokens...): unknown
    changed = apply_changes(cmd, {"kv_cache_memory_bytes": 2**30})
    assert render(changed)[3] == "--kv-cache-memory=1073741824"  # changed where it stands
