"""The run journal: round trips, atomic updates, corrupt lines, and kill -9 mid-write."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.supervisor.journal import Journal, JournalWarning, RunRecord


def test_append_and_read_back(tmp_path):
    journal = Journal(tmp_path / "runs.jsonl")
    first = RunRecord(model="m1", command=["vllm", "serve", "m1"], outcome="ready")
    second = RunRecord(model="m2", kv_cache_tokens=3840, max_concurrency=3.75)
    journal.append(first)
    journal.append(second)
    records = journal.records()
    assert [r.model for r in records] == ["m1", "m2"]
    assert records[0].run_id == first.run_id
    assert records[1].kv_cache_tokens == 3840
    assert records[1].max_concurrency == 3.75


def test_update_changes_one_record_and_keeps_unknown_keys(tmp_path):
    path = tmp_path / "runs.jsonl"
    journal = Journal(path)
    a, b = RunRecord(model="a"), RunRecord(model="b")
    journal.append(a)
    journal.append(b)
    # A field written by a newer Headroom survives an update by this one.
    lines = path.read_text().splitlines()
    data = json.loads(lines[0])
    data["future_field"] = {"x": 1}
    path.write_text(json.dumps(data) + "\n" + lines[1] + "\n")
    updated = journal.update(a.run_id, outcome="failed", bench={"knee": 12})
    assert updated is not None and updated.outcome == "failed"
    records = journal.records()
    assert records[0].outcome == "failed"
    assert records[0].bench == {"knee": 12}
    assert records[0].extra == {"future_field": {"x": 1}}
    assert records[1].outcome == "running"
    assert journal.update("no-such-run", outcome="x") is None


def test_corrupt_lines_are_skipped_with_a_warning(tmp_path):
    path = tmp_path / "runs.jsonl"
    good = RunRecord(model="good")
    path.write_text('{"model": "torn\n[1, 2]\n' + json.dumps(good.to_json()) + "\nnot json\n")
    journal = Journal(path)
    with pytest.warns(JournalWarning):
        records = journal.records()
    assert [r.model for r in records] == ["good"]
    assert len(journal.skipped) == 3


def test_append_after_a_torn_line_starts_a_fresh_line(tmp_path):
    path = tmp_path / "runs.jsonl"
    path.write_bytes(b'{"model": "half-writ')  # a writer died mid-line
    journal = Journal(path)
    journal.append(RunRecord(model="next"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JournalWarning)
        records = journal.records()
    assert [r.model for r in records] == ["next"]


def test_missing_journal_is_empty(tmp_path):
    assert Journal(tmp_path / "nope" / "runs.jsonl").records() == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=80), max_size=8))
def test_any_bytes_never_break_reading(tmp_path_factory, chunks):
    path = tmp_path_factory.mktemp("j") / "runs.jsonl"
    path.write_bytes(b"\n".join(chunks))
    journal = Journal(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JournalWarning)
        records = journal.records()
    assert all(isinstance(r, RunRecord) for r in records)


WRITER = r"""
import sys, time
from headroom.supervisor.journal import Journal, RunRecord
journal = Journal(sys.argv[1])
i = 0
while True:
    record = RunRecord(run_id=f"run-{i}", model="m" * 2000, notes=str(i))
    journal.append(record)
    if i % 3 == 0:
        journal.update(f"run-{i}", outcome="ready", summary={"n": i})
    print(i, flush=True)
    i += 1
"""


@pytest.mark.slow
def test_journal_survives_kill_9_of_the_writer(tmp_path):
    """SIGKILL a writer (appends + rewrites) at random moments: every acknowledged record
    stays readable, and nothing but (at most) one torn trailing line is ever skipped."""
    path = tmp_path / "runs.jsonl"
    acknowledged = -1
    for round_no in range(6):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True
        )
        try:
            first = proc.stdout.readline()  # it is writing now (however slow the machine)
            time.sleep(0.05 + 0.07 * round_no)  # then kill it somewhere mid-stream
            os.kill(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate(timeout=10)
            out = first + out
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        printed = [int(x) for x in out.split()]
        journal = Journal(path)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", JournalWarning)
            records = journal.records()
        assert len(journal.skipped) <= 1, journal.skipped
        ids = {r.run_id for r in records}
        for i in printed:
            assert f"run-{i}" in ids
        for r in records:
            n = int(r.notes)
            if n % 3 == 0 and n in printed:
                assert r.outcome == "ready"
        acknowledged = max(acknowledged, max(printed, default=-1))
    assert acknowledged > 0  # the writer did get to write
    Journal(path).update("run-0", notes="0")
    assert not list(tmp_path.glob(".runs.jsonl.*.tmp"))  # killed rewrites leave nothing behind
