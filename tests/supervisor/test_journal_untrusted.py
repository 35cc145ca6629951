"""The journal reader against hostile lines (issue 14, item 8).

Old: a line nested 1000+ levels raised RecursionError out of `Journal.records()` (stopping
`headroom runs` and `serve`'s journal update); a 400-digit `time` raised in the table;
wrong types (command: 5) raised TypeError in the comparison.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.hostile_json import deep_nesting, hostile_field_values, json_with_raw

from headroom.cli import runs as runs_cli
from headroom.supervisor.journal import Journal, RunRecord

pytestmark = pytest.mark.filterwarnings("ignore::headroom.supervisor.journal.JournalWarning")

FIELDS = [
    "run_id", "time", "model", "command", "flags", "env", "gpus", "port", "kv_cache_tokens",
    "max_concurrency", "time_to_ready_s", "outcome", "reason", "changes", "findings",
    "summary", "bench", "ended_at", "model_shape", "parent_run_id", "launcher",
]  # fmt: skip


def _good(run_id: str = "r1") -> dict:
    return RunRecord(run_id=run_id, time=1.7e9, model="m", command=["vllm", "serve", "m"],
                     flags=["--max-num-seqs", "8"], outcome="ready",
                     summary={"throughput_tok_s": 100.0}).to_json()  # fmt: skip


def test_a_deeply_nested_line_is_skipped_and_the_rest_read(tmp_path) -> None:
    path = tmp_path / "runs.jsonl"
    lines = [json.dumps(_good("a")), deep_nesting(5000), '{"run_id": ' + deep_nesting(1500, "{")
             + "}", json.dumps(_good("b"))]  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    journal = Journal(path)
    records = journal.records()
    assert [r.run_id for r in records] == ["a", "b"]
    assert len(journal.skipped) == 2 and "nests" in journal.skipped[0]


def test_update_still_works_past_a_hostile_line(tmp_path) -> None:
    # serve marks its run ready through update(); a bad line must not stop it.
    path = tmp_path / "runs.jsonl"
    path.write_text(deep_nesting(3000) + "\n" + json.dumps(_good("a")) + "\n")
    assert Journal(path).update("a", outcome="ready", time_to_ready_s=3.0) is not None
    assert Journal(path).get("a").time_to_ready_s == 3.0


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(field=st.sampled_from(FIELDS), raw=hostile_field_values())
def test_runs_command_survives_any_hostile_field(tmp_path, capsys, field, raw) -> None:
    good = _good("ok")
    bad = {k: v for k, v in _good("bad").items() if k != field}
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(good) + "\n" + json_with_raw(bad, {field: raw}) + "\n")
    records = Journal(path).records()
    assert "ok" in [r.run_id for r in records]
    for record in records:  # what was read has the declared types
        assert isinstance(record.command, list) and all(isinstance(t, str) for t in record.command)
        assert isinstance(record.time, float | int) and 0 <= record.time <= 1e11
        assert isinstance(record.summary, dict)
    for fmt in ([], ["--csv"], ["--json"], ["--markdown"]):
        assert runs_cli.main([*fmt, "--journal", str(path)]) == 0
    assert "ok" in capsys.readouterr().out


def test_a_line_over_the_limit_is_skipped_without_being_held(tmp_path, monkeypatch) -> None:
    from headroom.supervisor import journal as journal_module

    monkeypatch.setattr(journal_module, "MAX_LINE_BYTES", 1000)
    path = tmp_path / "runs.jsonl"
    huge = '{"run_id": "x", "notes": "' + "n" * 5000 + '"}'
    path.write_text(json.dumps(_good("a")) + "\n" + huge + "\n" + json.dumps(_good("b")) + "\n")
    journal = Journal(path)
    assert [r.run_id for r in journal.records()] == ["a", "b"]
    assert "longer than 1,000 bytes" in journal.skipped[0] and ":2:" in journal.skipped[0]
