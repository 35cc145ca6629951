"""Configurations side by side: baseline first, ratios, comparability notes, journal round trip."""

from __future__ import annotations

import pytest

from headroom.bench.compare import compare_runs
from headroom.bench.compare_table import (
    comparison_cells,
    comparison_to_json,
    render_comparison,
)
from headroom.bench.journal import find_run_for_url, record_bench
from headroom.bench.knee import find_knee
from headroom.bench.ramp import BenchResult
from headroom.bench.stats import StepResult
from headroom.supervisor.journal import Journal, RunRecord


def _step(c, tok, itl=0.01, mem=None) -> StepResult:
    return StepResult(
        c,
        10,
        10,
        0,
        0,
        1.0,
        tok,
        100,
        50,
        0.1,
        0.2,
        itl,
        itl * 1.5,
        1.0,
        1.0 + c / 10,
        None,
        None,
        None,
        mem,
        None,
        None,
    )


def _bench(tops, itl=0.01, model="m", dist="fp1", ramp=(1, 2, 4, 8), label=None) -> dict:
    steps = tuple(_step(c, t, itl, mem=10 * 2**30) for c, t in zip(ramp, tops, strict=True))
    workload = {
        "model": model,
        "distribution": {"name": "chat", "fingerprint": dist},
        "ramp": list(ramp),
        "step_duration_s": 10.0,
        "step_requests": None,
        "endpoint": "completions",
        "label": label,
        "url": "http://127.0.0.1:8000",
    }
    return BenchResult(workload, steps, find_knee(steps), 100.0, 200.0).to_json()


def _record(run_id, flags, bench, t, topology=None) -> RunRecord:
    command = ["vllm", "serve", "m", *flags]
    return RunRecord(
        run_id=run_id, flags=flags, command=command, bench=bench, time=t, topology=topology
    )


def _fleet() -> list[RunRecord]:
    return [
        _record("pp2", ["--pipeline-parallel-size", "2"], _bench([80, 160, 320, 600], 0.012), 4),
        _record(
            "tp2nv",
            ["--tensor-parallel-size", "2"],
            _bench([150, 300, 600, 1200], 0.006),
            2,
            "NV18",
        ),
        _record("tp1", [], _bench([100, 200, 400, 450]), 1),
        _record("tp2pcie", ["-tp", "2"], _bench([140, 280, 560, 1100], 0.0065), 3, "PHB"),
        _record("nobench", ["--tensor-parallel-size", "4"], None, 5),
    ]


def test_baseline_first_and_ratios_against_it() -> None:
    rows = compare_runs(_fleet())
    assert [r.run_id for r in rows][0] == "tp1"
    assert {r.run_id for r in rows} == {"tp1", "tp2nv", "tp2pcie", "pp2"}  # no bench, no row
    by_id = {r.run_id: r for r in rows}
    assert by_id["tp1"].is_baseline and by_id["tp1"].ratio == pytest.approx(1.0)
    assert by_id["tp2nv"].ratio == pytest.approx(1200 / 450)
    assert by_id["pp2"].ratio == pytest.approx(600 / 450)
    assert by_id["tp2nv"].configuration == "TP=2" and by_id["pp2"].configuration == "TP=1 PP=2"
    assert by_id["tp2pcie"].configuration == "TP=2"  # -tp is vLLM's short form
    assert by_id["tp2nv"].gpus == 2 and by_id["tp1"].gpus == 1
    assert by_id["tp1"].knee_concurrency == 4  # 400 -> 450 tok/s from 4 to 8: efficiency 0.125
    assert by_id["tp2nv"].itl_c1_s == pytest.approx(0.006)
    assert all(r.comparable for r in rows)


def test_table_text_and_json() -> None:
    rows = compare_runs(_fleet())
    text = render_comparison(rows)
    lines = text.splitlines()
    assert lines[0].startswith("configuration")
    assert lines[1].startswith("TP=1") and "baseline" in lines[1]
    assert "TP=2 (NV18)" in text and "TP=2 (PHB)" in text and "2.67x" in text
    cells = comparison_cells(rows)
    assert cells[0][6] == "10.0 GiB"
    data = comparison_to_json(rows)
    assert data[0]["run_id"] == "tp1" and isinstance(data[0]["notes"], list)


def test_unbenched_runs_follow_with_live_figures_and_no_ratio() -> None:
    served = RunRecord(
        run_id="served",
        time=9,
        flags=["-tp", "2", "--max-num-seqs", "64"],
        outcome="stopped",
        summary={"throughput_tok_s": 777.0, "ttft_p95_s": 0.3, "peak_gpu_memory_bytes": 2**31},
    )
    rows = compare_runs([*_fleet(), served], benched_only=False)
    ids = [r.run_id for r in rows]
    assert ids[0] == "tp1" and ids[-2:] == ["nobench", "served"]  # unbenched last, by time
    last = rows[-1]
    assert not last.benched and last.ratio is None and not last.comparable
    assert last.peak_tok_s == 777.0 and last.ttft_p95_s == 0.3
    assert last.peak_gpu_memory_bytes == 2**31
    assert "not benched" in last.notes[0]
    # Only --max-num-seqs differs between rows besides TP/PP: it is named where set.
    assert last.flags_that_differ == ("--max-num-seqs 64",)
    assert rows[0].flags_that_differ == ()
    assert render_comparison(rows).splitlines()[-1].startswith("TP=2 --max-num-seqs 64")


def test_mismatched_workloads_are_flagged_and_get_no_ratio() -> None:
    records = [
        _record("tp1", [], _bench([100, 200, 400, 450]), 1),
        _record("other-model", ["-tp", "2"], _bench([1, 2, 3, 4], model="other"), 2),
        _record("other-mix", ["-tp", "2"], _bench([1, 2, 3, 4], dist="fp2"), 3),
        _record("other-ramp", ["-tp", "2"], _bench([100, 200, 400], ramp=(1, 2, 4)), 4),
    ]
    by_id = {r.run_id: r for r in compare_runs(records)}
    assert by_id["other-model"].ratio is None and not by_id["other-model"].comparable
    assert "different model" in by_id["other-model"].notes[0]
    assert "different request distribution" in by_id["other-mix"].notes[0]
    assert by_id["other-mix"].ratio is None
    # A different ramp still has a meaningful peak ratio, but says it differs.
    assert by_id["other-ramp"].ratio == pytest.approx(400 / 450)
    assert "different ramp" in by_id["other-ramp"].notes[0]


def test_without_a_single_gpu_run_the_first_is_the_baseline_and_says_so() -> None:
    rows = compare_runs(
        [
            _record("a", ["-tp", "2"], _bench([1, 2, 3, 4]), 1),
            _record("b", ["-tp", "4"], _bench([2, 4, 6, 8]), 2),
        ]
    )
    assert rows[0].run_id == "a" and rows[0].is_baseline
    assert "no single-GPU" in rows[0].notes[0]
    assert rows[1].ratio == pytest.approx(2.0)


def test_labels_override_flags_and_dict_records_work() -> None:
    rec = _record("x", [], _bench([1, 2, 3, 4], label="TP=1 on L40S"), 1).to_json()
    rows = compare_runs([rec])
    assert rows[0].configuration == "TP=1 on L40S" and rows[0].tp == 1
    unmanaged = RunRecord(run_id="u", bench=_bench([1, 2, 3, 4]))
    assert compare_runs([unmanaged])[0].configuration == "unknown configuration"
    assert compare_runs([]) == []
    assert "no benched runs" in render_comparison([])


def test_record_bench_attaches_to_the_run_on_that_port(tmp_path) -> None:
    journal = Journal(tmp_path / "runs.jsonl")
    journal.append(RunRecord(run_id="old", port=8000, time=1, outcome="stopped"))
    journal.append(RunRecord(run_id="new", port=8000, time=2, outcome="ready"))
    journal.append(RunRecord(run_id="failed", port=8000, time=3, outcome="failed"))
    journal.append(RunRecord(run_id="stopped-later", port=8000, time=4, outcome="stopped"))
    result = BenchResult.from_json(_bench([1, 2, 3, 4]))
    assert find_run_for_url(journal, "http://127.0.0.1:8000").run_id == "new"
    assert "new" in record_bench(result, journal)
    assert journal.get("new").bench["workload"]["model"] == "m"
    assert journal.get("old").bench is None
    # A remote URL never matches a local run: it becomes a record of its own.
    remote = BenchResult.from_json(
        {**_bench([1, 2, 3, 4]), "workload": {"url": "http://gpu9:8000", "model": "m"}}
    )
    where = record_bench(remote, journal)
    assert "recorded as run" in where
    assert len(journal.records()) == 5
    with pytest.raises(KeyError):
        record_bench(result, journal, run_id="nope")


def test_result_json_round_trip() -> None:
    data = _bench([100, 200, 400, 450])
    again = BenchResult.from_json(data).to_json()
    assert again == data


def test_clamped_distribution_is_not_the_same_traffic() -> None:
    clamped = _bench([1, 2, 3, 4])
    clamped["workload"]["distribution"]["clamped_to_tokens"] = 1024
    rows = compare_runs(
        [
            _record("tp1", [], _bench([100, 200, 400, 450]), 1),
            _record("small", ["-tp", "2"], clamped, 2),
        ]
    )
    assert "different request distribution" in rows[1].notes[0]


def test_topology_of_several_pairs_reads_as_its_link_classes() -> None:
    # the supervisor journals every pair, joined with ", " (a TP=2 sweep row printed
    # "TP=2 (NV18,/NV18)")
    fleet = _fleet()
    fleet[1] = _record(
        "tp2nv",
        ["--tensor-parallel-size", "2"],
        _bench([150, 300, 600, 1200], 0.006),
        2,
        "GPU0-GPU1 NV18, GPU0-GPU2 NV18, GPU1-GPU2 SYS",
    )
    text = render_comparison(compare_runs(fleet))
    assert "TP=2 (NV18/SYS)" in text and "NV18," not in text
