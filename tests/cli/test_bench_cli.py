"""`headroom bench` end to end against the scripted fake server (run in a thread)."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import sys
import threading
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from bench_fake_server import FakeServer  # noqa: E402

from headroom.cli import bench as bench_cli  # noqa: E402
from headroom.cli import main as headroom_main  # noqa: E402
from headroom.supervisor.journal import Journal, RunRecord  # noqa: E402

QUICK = ["--ramp", "1,2", "--step-duration", "0.4", "--warmup", "0", "--gpus", "no", "--workload"]


@pytest.fixture
def server(tmp_path):
    """A FakeServer on its own event loop in a thread, so the CLI can asyncio.run()."""
    holder: dict = {}
    ready = threading.Event()
    stop = None

    def run() -> None:
        nonlocal stop
        loop = asyncio.new_event_loop()
        stop = loop.create_future()

        async def serve() -> None:
            async with FakeServer(slots=4, token_s=0.003, api_key="sk-test-key") as srv:
                holder["srv"] = srv
                ready.set()
                await stop

        holder["loop"] = loop
        loop.run_until_complete(serve())
        loop.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(5)
    yield holder["srv"]
    holder["loop"].call_soon_threadsafe(stop.set_result, None)
    thread.join(5)
    assert not thread.is_alive()


@pytest.fixture
def workload(tmp_path) -> str:
    path = tmp_path / "w.jsonl"
    path.write_text(
        "\n".join(
            json.dumps({"prompt_tokens": p, "output_tokens": o})
            for p, o in [(10, 8), (20, 12), (15, 10)]
        )
    )
    return str(path)


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HEADROOM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    return tmp_path / "data"


def test_json_output_has_steps_knee_and_workload(server, workload, capsys) -> None:
    rc = bench_cli.main([server.url, *QUICK, workload, "--api-key", "sk-test-key", "--json"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    data = json.loads(out)
    assert [s["concurrency"] for s in data["steps"]] == [1, 2]
    for key in (
        "requests_per_s",
        "output_tokens_per_s",
        "ttft_p50",
        "ttft_p95",
        "itl_p50",
        "itl_p95",
        "e2e_p95",
        "errors",
        "kv_usage_peak",
        "preemptions",
        "waiting_peak",
        "gpu_memory_peak_bytes",
        "gpu_util_mean",
    ):
        assert key in data["steps"][0]
    assert set(data["knee"]) >= {"step", "concurrency", "reason"}
    assert data["workload"]["model"] == "fake/model"
    assert data["workload"]["ramp"] == [1, 2]
    assert data["workload"]["distribution"]["name"] == "file:w.jsonl"
    assert "sk-test-key" not in out + err


def test_api_key_from_the_environment(server, workload, capsys, monkeypatch) -> None:
    monkeypatch.setenv("VLLM_API_KEY", "sk-test-key")
    assert bench_cli.main([server.url, *QUICK, workload, "--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["concurrency"] for r in rows] == ["1", "2"]
    assert float(rows[0]["output_tokens_per_s"]) > 0


def test_text_output_shows_table_plots_and_knee(server, workload, capsys, monkeypatch) -> None:
    monkeypatch.setenv("VLLM_API_KEY", "sk-test-key")
    assert headroom_main(["bench", server.url, *QUICK, workload]) == 0
    out = capsys.readouterr().out
    assert "out tok/s" in out and "TTFT p95" in out
    assert "output tok/s vs concurrency" in out and "p95 (s) vs concurrency" in out
    assert "knee:" in out


def test_markdown_to_a_file(server, workload, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("VLLM_API_KEY", "sk-test-key")
    target = tmp_path / "bench.md"
    assert bench_cli.main([server.url, *QUICK, workload, "--markdown", "-o", str(target)]) == 0
    text = target.read_text()
    assert text.startswith("## Bench: fake/model")
    assert "| conc |" in text and "- knee:" in text


def test_journal_gets_the_bench_on_the_run_of_that_port(
    server, workload, data_dir, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("VLLM_API_KEY", "sk-test-key")
    journal = Journal()
    journal.append(RunRecord(run_id="r-other", port=1, flags=["--tensor-parallel-size", "2"]))
    journal.append(RunRecord(run_id="r-this", port=server.port, flags=["--max-num-seqs", "4"]))
    assert bench_cli.main([server.url, *QUICK, workload, "--journal", "--label", "TP=1"]) == 0
    assert "r-this" in capsys.readouterr().err
    record = Journal().get("r-this")
    assert record.bench["workload"]["label"] == "TP=1"
    assert Journal().get("r-other").bench is None
    assert "sk-test-key" not in (data_dir / "runs.jsonl").read_text()
    assert bench_cli.main(["--compare"]) == 0
    assert "TP=1" in capsys.readouterr().out
    assert bench_cli.main(["--compare", "--markdown"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("| configuration |") and "| TP=1 |" in out
    assert bench_cli.main(["--compare", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["run_id"] == "r-this"


def test_bad_arguments_exit_2(capsys) -> None:
    assert bench_cli.main(["http://127.0.0.1:1", "--ramp", "4,2"]) == 2
    assert "must rise" in capsys.readouterr().err
    assert bench_cli.main(["http://127.0.0.1:1", "--mix", "nope"]) == 2
    with pytest.raises(SystemExit):
        bench_cli.main([])


def test_unreachable_server_exits_1(capsys) -> None:
    assert bench_cli.main(["http://127.0.0.1:9", "--warmup", "0", "--ramp", "1"]) == 1
    assert "cannot reach" in capsys.readouterr().err


def test_wrong_key_exit_1(server, workload, capsys) -> None:
    assert bench_cli.main([server.url, *QUICK, workload, "--api-key", "nope"]) == 1
    assert "API key" in capsys.readouterr().err


def test_progress_bar_rewrites_one_line_and_is_silent_off_a_tty() -> None:
    from headroom.bench.ramp import BenchProgress

    stream = io.StringIO()
    bar = bench_cli.ProgressBar(True, stream)
    bar(BenchProgress("warmup", None, 1, 3, 0.0, 0.0, 0, 0))
    bar(BenchProgress("step", 1, 2, 3, 0.5, 0.5, 7, 1))
    text = stream.getvalue()
    assert text.count("\r") == 2 and "\n" not in text
    assert "warm-up at concurrency 1" in text
    assert " 50%" in text and "step 2/3: concurrency 2, 7 done, 1 errors" in text
    quiet = io.StringIO()
    bench_cli.ProgressBar(False, quiet)(BenchProgress("step", 0, 1, 1, 1.0, 1.0, 1, 0))
    assert quiet.getvalue() == ""
