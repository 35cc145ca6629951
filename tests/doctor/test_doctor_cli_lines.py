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
