"""`headroom runs`: the journal as a comparison table in four formats."""

from __future__ import annotations

import csv
import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.cli.runs import main
from headroom.supervisor import journal_table
from headroom.supervisor.journal import Journal, RunRecord


@pytest.fixture
def journal(tmp_path, monkeypatch):
    monkeypatch.setenv("HEADROOM_DATA_DIR", str(tmp_path))
    j = Journal()
    j.append(
        RunRecord(
            run_id="r1",
            model="Qwen/Qwen3-8B",
            flags=["--port", "8000", "--api-key", "***", "--max-model-len", "32768", "-tp", "2"],
            env={"CUDA_VISIBLE_DEVICES": "0,1"},
            gpus=[{"name": "NVIDIA H100 80GB HBM3"}, {"name": "NVIDIA H100 80GB HBM3"}],
            topology="GPU0-GPU1 NV18",
            outcome="stopped",
            time_to_ready_s=84.2,
            kv_cache_tokens=412000,
            summary={
                "throughput_tok_s": 2210.5,
                "ttft_p95_s": 0.41,
                "itl_p95_s": 0.031,
                "e2e_p95_s": 9.5,
                "peak_gpu_memory_bytes": 2 * 76 * 2**30,
            },
        )
    )
    j.append(
        RunRecord(
            run_id="r2",
            model="Qwen/Qwen3-8B",
            flags=["--max-model-len", "65536", "-tp", "2"],
            outcome="failed",
            reason="(EngineCore pid=7) ERROR 11-29 11:30:44 [core.py:1510] ValueError: To serve",
            changes={"max_model_len": 65536},
            bench={
                "steps": [
                    {"concurrency": 8, "output_tokens_per_s": 900.0, "ttft_p95": 0.2},
                    {"concurrency": 16, "output_tokens_per_s": 1500.0, "ttft_p95": 0.9},
                ],
                "knee": {"step": 0},
            },
        )
    )
    return j


def test_text_table_shows_configuration_without_port_or_secret(journal, capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    header, first, second = out.splitlines()
    assert "configuration" in header and "throughput_tok_s" in header
    assert "--max-model-len 32768 -tp 2 CUDA_VISIBLE_DEVICES=0,1" in first
    assert "--port" not in out and "***" not in out
    assert "2x NVIDIA H100 80GB HBM3" in first
    assert "2.21e+03" in first or "2210" in first


def test_csv_round_trips(journal, capsys):
    assert main(["--csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["run"] for r in rows] == ["r1", "r2"]
    assert float(rows[0]["ttft_p95_s"]) == 0.41
    assert float(rows[0]["memory_peak_gib"]) == 152.0
    # the bench's knee step is the operating point of r2
    assert float(rows[1]["throughput_tok_s"]) == 900.0
    assert "changed max_model_len=65536" in rows[1]["notes"]
    assert "ValueError: To serve" in rows[1]["notes"]
    assert "pid=7" not in rows[1]["notes"]  # the log-line prefix is noise in a table


def test_json_and_markdown(journal, capsys):
    assert main(["--json", "--last", "1"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [d["record"]["run_id"] for d in data] == ["r2"]
    assert main(["--markdown"]) == 0
    md = capsys.readouterr().out.splitlines()
    assert md[0].startswith("| run | started |")
    assert len(md) == 4


def test_corrupt_line_warns_but_lists_the_rest(journal, capsys):
    with open(journal.path, "a") as f:
        f.write("{oops\n")
    assert main(["--csv"]) == 0
    captured = capsys.readouterr()
    assert "corrupt journal line" in captured.err
    assert len(captured.out.splitlines()) == 3


def test_empty_journal(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HEADROOM_DATA_DIR", str(tmp_path))
    assert main([]) == 0
    assert "no runs" in capsys.readouterr().out


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
@given(st.dictionaries(st.sampled_from(FIELDS), JUNK, max_size=8))
def test_records_from_other_versions_never_break_the_table(data):
    record = RunRecord.from_json(data)
    for render in (journal_table.to_text, journal_table.to_csv, journal_table.to_markdown):
        assert isinstance(render([record]), str)
    json.loads(journal_table.to_json([record]))
