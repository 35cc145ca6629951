"""`headroom runs`: the journal as the configuration comparison table, in four formats.
Baseline first, ratios to it, the not-comparable note, and runs without a bench kept."""

from __future__ import annotations

import csv
import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.bench import compare as bench_compare
from headroom.bench import compare_table
from headroom.cli.runs import main
from headroom.supervisor.journal import Journal, RunRecord

MODEL = "Qwen/Qwen3-8B"
# Peak output tok/s per configuration's bench (the ratios below are computed from these).
PEAKS = {"tp1": [100.0, 180.0, 250.0], "tp2": [150.0, 290.0, 520.0], "pp2": [90.0, 170.0, 310.0]}


def _bench(peaks, *, dist="chat-fp", model=MODEL) -> dict:
    ramp = [1, 2, 4][: len(peaks)]
    return {
        "workload": {
            "model": model,
            "distribution": {"name": "chat", "fingerprint": dist},
            "ramp": ramp,
            "step_duration_s": 5.0,
            "step_requests": None,
            "endpoint": "completions",
        },
        "steps": [
            {
                "concurrency": c,
                "output_tokens_per_s": t,
                "ttft_p95": 0.05 * c,
                "e2e_p95": 1.0 + c,
                "gpu_memory_peak_bytes": 20 * 2**30,
            }
            for c, t in zip(ramp, peaks, strict=True)
        ],
        "knee": {"step": None},
    }


@pytest.fixture
def journal(tmp_path, monkeypatch):
    monkeypatch.setenv("HEADROOM_DATA_DIR", str(tmp_path))
    j = Journal()
    # Journal order is deliberately not table order: the table puts the TP=1 baseline first.
    j.append(
        RunRecord(
            run_id="tp2",
            time=2,
            model=MODEL,
            flags=["--port", "8000", "--api-key", "***", "-tp", "2"],
            gpus=[{"name": "NVIDIA H100 80GB HBM3"}, {"name": "NVIDIA H100 80GB HBM3"}],
            topology="GPU0-GPU1 NV18",
            outcome="stopped",
            bench=_bench(PEAKS["tp2"]),
        )
    )
    j.append(
        RunRecord(
            run_id="tp1",
            time=1,
            model=MODEL,
            flags=["--port", "8000"],
            gpus=[{"name": "NVIDIA H100 80GB HBM3"}],
            outcome="stopped",
            bench=_bench(PEAKS["tp1"]),
        )
    )
    j.append(
        RunRecord(
            run_id="pp2",
            time=3,
            model=MODEL,
            flags=["--pipeline-parallel-size", "2"],
            outcome="stopped",
            bench=_bench(PEAKS["pp2"], dist="long-doc-fp"),
        )
    )
    j.append(
        RunRecord(
            run_id="served",
            time=4,
            model=MODEL,
            flags=["--max-model-len", "65536", "-tp", "2"],
            env={"CUDA_VISIBLE_DEVICES": "0,1"},
            outcome="failed",
            reason="(EngineCore pid=7) ERROR 11-29 11:30:44 [core.py:1510] ValueError: To serve",
            changes={"max_model_len": 65536},
            summary={
                "throughput_tok_s": 2210.5,
                "ttft_p95_s": 0.41,
                "e2e_p95_s": 9.5,
                "peak_gpu_memory_bytes": 2 * 76 * 2**30,
            },
        )
    )
    return j


def test_text_table_baseline_first_with_ratios(journal, capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    header, *lines = out.splitlines()
    for column in ("configuration", "GPUs", "tok/s", "vs base", "p95 latency", "TTFT p95"):
        assert column in header
    assert "memory peak" in header and "outcome" in header and "notes" in header
    assert [line.split()[0] for line in lines] == ["TP=1", "TP=2", "TP=1", "TP=2"]
    assert "baseline" in lines[0] and "1x H100 80GB HBM3" in lines[0]
    assert "TP=2 (NV18)" in lines[1] and "2x H100 80GB HBM3" in lines[1]
    ratio = max(PEAKS["tp2"]) / max(PEAKS["tp1"])
    assert f"{ratio:.2f}x" in lines[1]
    assert lines[2].startswith("TP=1 PP=2") and "not comparable" in lines[2]
    assert "different request distribution" in lines[2]
    assert "--port" not in out and "***" not in out


def test_csv_raw_numbers_and_ratios(journal, capsys):
    assert main(["--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["run_id"] for r in rows] == ["tp1", "tp2", "pp2", "served"]
    base = max(PEAKS["tp1"])
    assert rows[0]["is_baseline"] == "True" and float(rows[0]["ratio"]) == 1.0
    assert float(rows[1]["ratio"]) == pytest.approx(max(PEAKS["tp2"]) / base)
    assert float(rows[1]["throughput_tok_s"]) == max(PEAKS["tp2"])
    # A different distribution: the ratio would mean nothing, so there is none.
    assert rows[2]["ratio"] == "" and rows[2]["comparable"] == "False"
    served = rows[3]
    assert served["benched"] == "False" and served["ratio"] == ""
    assert float(served["throughput_tok_s"]) == 2210.5
    assert float(served["ttft_p95_s"]) == 0.41
    assert float(served["memory_peak_gib"]) == 152.0
    assert "--max-model-len 65536" in served["flags_that_differ"]
    assert "CUDA_VISIBLE_DEVICES=0,1" in served["flags_that_differ"]
    assert "changed max_model_len=65536" in served["notes"]
    assert "ValueError: To serve" in served["notes"]
    assert "pid=7" not in served["notes"]  # the log-line prefix is noise in a table


def test_json_markdown_last_and_model(journal, capsys):
    assert main(["--json", "--last", "2"]) == 0
    data = json.loads(capsys.readouterr().out)
    # The newest two: pp2 becomes the only benched run, so the baseline, and says so.
    assert [d["record"]["run_id"] for d in data] == ["pp2", "served"]
    assert data[0]["row"]["is_baseline"] and "no single-GPU" in data[0]["row"]["notes"][0]
    assert main(["--markdown"]) == 0
    md = capsys.readouterr().out.splitlines()
    assert md[0].startswith("| configuration | GPUs |")
    assert len(md) == 2 + 4
    assert main(["--csv", "--model", "other"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1


def test_bench_compare_prints_the_same_table(journal, capsys):
    from headroom.cli.bench import main as bench_main

    assert bench_main(["--compare"]) == 0
    bench_out = capsys.readouterr().out.splitlines()
    assert main([]) == 0
    runs_out = capsys.readouterr().out.splitlines()
    # Same cells (column widths follow the widest row, which only runs has).
    assert [line.split() for line in bench_out] == [
        line.split() for line in runs_out[: len(bench_out)]
    ]
    assert len(runs_out) == len(bench_out) + 1


def test_only_unbenched_runs_still_list(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HEADROOM_DATA_DIR", str(tmp_path))
    Journal().append(RunRecord(run_id="a", model=MODEL, summary={"throughput_tok_s": 5.0}))
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "5.0" in out and "no benched runs" in out


def test_corrupt_line_warns_but_lists_the_rest(journal, capsys):
    with open(journal.path, "a") as f:
        f.write("{oops\n")
    assert main(["--csv"]) == 0
    captured = capsys.readouterr()
    assert "corrupt journal line" in captured.err
    assert len(captured.out.splitlines()) == 5


def test_empty_journal(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HEADROOM_DATA_DIR", str(tmp_path))
    assert main([]) == 0
    assert "no runs" in capsys.readouterr().out


def test_a_model_filter_that_matches_nothing_says_so(journal, capsys):
    assert main(["--model", "no/such-model"]) == 0
    out = capsys.readouterr().out
    assert "no runs of model 'no/such-model'" in out and "yet" not in out


def test_a_journal_path_that_does_not_exist_is_bad_input(tmp_path, capsys):
    assert main(["--journal", str(tmp_path / "typo.jsonl")]) == 2
    assert "no journal file at" in capsys.readouterr().err


JUNK = st.one_of(
    st.none(),
    st.integers(),
    st.floats(),
    st.text(max_size=8),
    st.lists(st.one_of(st.text(max_size=4), st.integers()), max_size=3),
    st.dictionaries(st.text(max_size=4), st.one_of(st.integers(), st.text(max_size=4)), max_size=3),
)
FIELDS = [
    "time", "model", "flags", "env", "gpus", "summary", "bench", "changes", "findings",
    "reason", "trigger", "time_to_ready_s", "kv_cache_tokens", "outcome", "topology",
]  # fmt: skip


@settings(max_examples=80, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(FIELDS), JUNK, max_size=8), max_size=3))
def test_records_from_other_versions_never_break_the_table(data):
    records = [RunRecord.from_json(d) for d in data]
    rows = bench_compare.compare_runs(records, benched_only=False)
    assert len(rows) == len(records)
    for render in (
        compare_table.render_comparison,
        compare_table.comparison_csv,
        compare_table.comparison_markdown,
    ):
        assert isinstance(render(rows), str)
    json.dumps(compare_table.comparison_to_json(rows))
