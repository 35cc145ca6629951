"""The command line a pasted log shows above its output (headroom/vllm_cmd/pasted_command.py)
and the doctor reading it when nothing follows `--`.

Lines: the threads' own command lines (vllm-project/vllm#882's `python -m
vllm.entrypoints.openai.api_server --model meta-llama/Llama-2-70b-hf`, OpenBMB/MiniCPM-V#640's
`vllm serve /docker_storage/models/MiniCPM-V-2_6 ...`), behind the prompts bash and conda
print; a traceback frame and a logger line that name vLLM are from vLLM 0.6's own output
(tests/fixtures/gpu-startup-logs).
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.cli import doctor
from headroom.vllm_cmd.pasted_command import command_in_text

LINE_882 = "python -m vllm.entrypoints.openai.api_server --model meta-llama/Llama-2-70b-hf"
LINE_640 = (
    "vllm serve /docker_storage/models/MiniCPM-V-2_6 --dtype auto --max-model-len 2048 "
    "--gpu_memory_utilization 1 --trust-remote-code"
)
PYTORCH_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total "
    "capacity of 22.18 GiB of which 3.47 GiB is free."
)


def test_the_typed_line_behind_any_prompt():
    for prompt in ("", "$ ", "# ", "(vllm) $ ", "user@gpu-box:~/work$ ", "(base) root@c1:/# "):
        assert command_in_text([prompt + LINE_882, "Runing API OOM"]) == LINE_882


def test_continuation_lines_and_environment_are_joined():
    lines = [
        "$ CUDA_VISIBLE_DEVICES=0 vllm serve /docker_storage/models/MiniCPM-V-2_6 \\",
        "    --dtype auto --max-model-len 2048 \\",
        ">   --gpu_memory_utilization 1 --trust-remote-code",
        PYTORCH_OOM,
    ]
    assert command_in_text(lines) == "CUDA_VISIBLE_DEVICES=0 " + LINE_640


def test_lines_that_only_name_vllm_are_no_command():
    lines = [
        '  File "/usr/local/lib/python3.10/dist-packages/vllm/entrypoints/openai/api_server.py", '
        "line 585, in run_server",
        "INFO 10-08 07:16:14 api_server.py:528] vLLM API server version 0.6.3",
        "usage: vllm serve <model_tag> [options]",
        PYTORCH_OOM,
    ]
    assert command_in_text(lines) is None


def test_a_title_that_starts_with_the_launcher_is_words():
    """Titles from tests/fixtures/field_words (QwenLM/Qwen3-VL#1224): a sentence after
    `vllm serve MODEL` is no command, and a words reader must still read it."""
    title = "vllm serve Qwen/Qwen2.5-VL-7B-Instruct-AWQ到底需要多大显存？16G都不够，能限制它在16G以内吗？"
    assert command_in_text([title]) is None
    # the launcher's words followed by a sentence: the same title, its question dropped
    assert command_in_text([title.split("到")[0] + " 到底需要多大显存"]) is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=120), max_size=30))
def test_never_raises_and_returns_a_launch(lines):
    found = command_in_text(lines)
    assert found is None or ("vllm" in found and len(found) <= 8192)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.sampled_from([PYTORCH_OOM, "INFO 1 x.py:1] ready", ""]), max_size=5),
    st.sampled_from(["", "$ ", "(env) $ "]),
)
def test_the_launch_is_found_among_any_output(output, prompt):
    assert command_in_text([*output, prompt + LINE_640, *output]) == LINE_640


def test_the_doctor_reads_the_pasted_line_as_the_command(tmp_path, capsys):
    log = tmp_path / "vllm.log"
    log.write_text(f"$ {LINE_640}\n{PYTORCH_OOM}\n")
    assert doctor.main(["--log", str(log), "--json", "--gpus", "1xA10"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert any("command line read from the log" in x for x in doc["lacking"])
    assert not any("no vLLM command line" in x for x in doc["lacking"])
    # the line's --gpu_memory_utilization 1 is in force: no room for the CUDA context
    ids = [f["id"] for f in doc["findings"]]
    assert "preflight-utilization-above-free" in ids


def test_a_placeholder_is_a_value_not_a_redirection():
    """vllm-project/vllm#57475 wrote its model as `<model>`; the same line behind the API
    server's `--model <model>` must read, while a real `< file` still goes."""
    from headroom.vllm_cmd.shell_line import command_segments, split_pasted

    line = "python -m vllm.entrypoints.openai.api_server --model <model> --max-model-len 124000"
    (segment,) = command_segments(split_pasted(line + " < prompts.txt > out.log"))
    assert segment.words[-4:] == ("--model", "<model>", "--max-model-len", "124000")
    from headroom.cli.doctor_inputs import read_command

    command, _, _ = read_command(split_pasted(line))
    assert command is not None and command.get("max_model_len") == 124000
