"""`headroom doctor -- LINE` reads command lines as pasted from shells and older releases."""

from __future__ import annotations

import json

from headroom.cli import main


def _run(tmp_path, capsys, line: list[str]) -> tuple[int, dict]:
    log = tmp_path / "vllm.log"
    log.write_text(
        "ValueError: Total number of attention heads (28) must be divisible by tensor parallel "
        "size (8)\n"
    )
    code = main(["doctor", "--json", "--log", str(log), "--", *line])
    return code, json.loads(capsys.readouterr().out)


def test_env_assignments_before_flags_are_ignored(tmp_path, capsys):
    code, doc = _run(tmp_path, capsys, ["CUDA_VISIBLE_DEVICES=0,1", "--tensor-parallel-size", "8"])
    assert code == 1 and doc["findings"][0]["id"] == "tp-heads-not-divisible"


def test_env_assignments_before_a_launcher_read_like_env(tmp_path, capsys):
    code, doc = _run(tmp_path, capsys, ["CUDA_VISIBLE_DEVICES=7", "vllm", "serve", "m", "-tp", "8"])
    assert code == 1 and doc["findings"]


def test_an_older_release_flag_syntax_does_not_refuse_the_whole_line(tmp_path, capsys):
    code, doc = _run(
        tmp_path, capsys, ["vllm", "serve", "m", "-tp", "8", "--limit-mm-per-prompt", "image=3"]
    )
    assert code == 1 and doc["findings"][0]["id"] == "tp-heads-not-divisible"


def test_a_command_line_alone_whose_tp_does_not_divide_the_heads_is_an_error(capsys):
    # before launch, no log: step 2 fails, so a finding says so and the exit is 1 (it printed
    # "FAIL 2." beside "No findings." and exit 0)
    line = ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "-tp", "3"]
    code = main(["doctor", "--json", "--gpus", "4xH100", "--", *line])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1
    top = doc["findings"][0]
    assert top["id"] == "tp-heads-not-divisible" and top["step"] == 2
    assert top["actions"][0]["knob"] == "tensor_parallel_size"
    assert top["actions"][0]["value"] in (2, 4)  # divides 32 heads and 8 KV heads
    assert [s["status"] for s in doc["steps"]][1] == "fail"


def test_a_command_line_whose_tp_divides_the_heads_has_no_such_finding(capsys):
    line = ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "-tp", "4"]
    code = main(["doctor", "--json", "--gpus", "4xH100", "--", *line])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and not doc["findings"]
