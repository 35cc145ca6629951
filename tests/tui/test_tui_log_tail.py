"""FileTail: complete lines only, incremental, survives truncation; log line classes."""

from __future__ import annotations

from headroom.tui.log_classes import classify, matches_filter
from headroom.tui.log_tail import FileTail


def test_reads_only_complete_new_lines(tmp_path):
    path = tmp_path / "vllm.log"
    path.write_text("one\ntwo\nthr")
    tail = FileTail(path)
    assert tail.read_new() == ["one", "two"]
    assert tail.read_new() == []
    with path.open("a") as handle:
        handle.write("ee\nfour\n")
    assert tail.read_new() == ["three", "four"]


def test_truncated_file_is_read_from_the_start(tmp_path):
    path = tmp_path / "vllm.log"
    path.write_text("a\nb\nc\n")
    tail = FileTail(path)
    assert tail.read_new() == ["a", "b", "c"]
    path.write_text("x\n")
    assert tail.read_new() == ["x"]


def test_missing_file_is_empty_not_an_error(tmp_path):
    assert FileTail(tmp_path / "absent.log").read_new() == []


def test_from_end_skips_existing(tmp_path):
    path = tmp_path / "vllm.log"
    path.write_text("old\n")
    tail = FileTail(path, from_start=False)
    with path.open("a") as handle:
        handle.write("new\n")
    assert tail.read_new() == ["new"]


def test_classify_severity_from_vllm_level():
    error = classify("(EngineCore pid=1) ERROR 11-29 11:26:25 [core.py:1] boom", 1)
    warning = classify("(APIServer pid=2) WARNING 11-29 11:26:25 [x.py:1] hmm", 2)
    info = classify("(APIServer pid=2) INFO 11-29 11:26:25 [x.py:1] fine", 3)
    assert (error.severity, warning.severity, info.severity) == ("error", "warning", "info")
    assert matches_filter(error, "errors") and matches_filter(warning, "errors")
    assert not matches_filter(info, "errors")
    assert matches_filter(info, "all")


def test_nccl_filter_matches_nccl_lines():
    line = "node:1:1 [0] NCCL INFO Channel 00/02 : 0 1"
    assert matches_filter(classify(line, 1), "nccl")
    assert not matches_filter(classify("(APIServer pid=2) INFO 11-29 [x.py:1] fine", 2), "nccl")


async def test_command_tail_follows_output_without_a_shell(tmp_path):
    import asyncio
    import sys

    from headroom.tui.log_tail import CommandTail

    tail = CommandTail([sys.executable, "-c", "print('one'); print('two; echo not-a-shell')"])
    await tail.start()
    for _ in range(100):
        if tail.ended:
            break
        await asyncio.sleep(0.05)
    assert tail.read_new() == ["one", "two; echo not-a-shell"]
    assert "status 0" in tail.ended
    await tail.stop()


async def test_command_tail_missing_program_says_why():
    from headroom.tui.log_tail import CommandTail

    tail = CommandTail(["/nonexistent/headroom-log-cmd"])
    await tail.start()
    assert tail.ended and "could not run" in tail.ended
    assert tail.read_new() == []
    await tail.stop()


def test_run_attach_bad_theme_is_a_message(capsys):
    from headroom.tui.app import run_attach

    assert run_attach("http://127.0.0.1:9", theme="neon") == 2
    assert "unknown theme" in capsys.readouterr().err
