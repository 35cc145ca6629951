"""What a sweep tries and how its table reads, without launching anything."""

from __future__ import annotations

import csv
import io
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.doctor.model_table import find_model
from headroom.supervisor.journal import Journal, RunRecord
from headroom.sweep.configs import (
    TryError,
    candidate_tries,
    check_feasible,
    order_tries,
    parse_try,
)
from headroom.sweep.resume import finished_rows
from headroom.sweep.table import (
    SweepRow,
    choose,
    render_csv,
    render_markdown,
    render_text,
    row_json,
)
from headroom.vllm_cmd import parse_command


def test_try_specs():
    t = parse_try("tp=2,pp=2")
    assert dict(t.changes) == {"tensor_parallel_size": 2, "pipeline_parallel_size": 2}
    assert t.label == "TP=2 PP=2" and t.gpus == 4
    t = parse_try("tp=1 max-num-seqs=64 kv=fp8")
    assert t.changes["max_num_seqs"] == 64 and t.changes["kv_cache_dtype"] == "fp8"
    for bad in ("tp", "tp=", "warp=9", ""):
        with pytest.raises(TryError):
            parse_try(bad)


@given(st.text(max_size=40))
def test_any_spec_parses_or_says_why(text):
    try:
        parse_try(text)
    except TryError as exc:
        assert str(exc)


def test_infeasible_tries_are_skipped_with_the_reason():
    base = parse_command(
        ["vllm", "serve", "meta-llama/Llama-3.1-70B-Instruct", "--max-model-len", "8192"]
    )
    model = find_model("meta-llama/Llama-3.1-70B-Instruct")
    gpu = parse_gpu_spec("4xH100")
    skipped = {
        spec: check_feasible(parse_try(spec), base=base, model=model, gpu=gpu).skip_reason
        for spec in ("tp=1", "tp=3", "tp=8", "tp=4")
    }
    assert skipped["tp=1"].startswith("memory")  # 140 GB of weights on one 80 GB GPU
    assert skipped["tp=3"].startswith("heads")  # 64 heads do not divide by 3
    assert skipped["tp=8"].startswith("nodes")  # more GPUs than the box has
    assert skipped["tp=4"] is None


def test_baseline_first_then_by_gpus():
    tries = [parse_try(s) for s in ("tp=4", "pp=2", "tp=2", "tp=1")]
    assert [t.label for t in order_tries(tries)] == ["TP=1", "PP=2", "TP=2", "TP=4"]


def test_candidates_for_four_gpus():
    labels = [
        c.label
        for c in candidate_tries(
            find_model("meta-llama/Llama-3.1-8B-Instruct"), parse_gpu_spec("4xH100")
        )
    ]
    assert labels[:3] == ["TP=1", "TP=2", "TP=4"]
    assert "TP=2 PP=2" in labels and "TP=1 PP=4" in labels and "TP=8" not in labels


def rows() -> list[SweepRow]:
    return [
        SweepRow("TP=2", 2, "done", "b", 900.0, 2.0, 4.0, 0.2, 0.02, 16, 400_000, 70.0, 79.1),
        SweepRow("TP=1", 1, "done", "a", 500.0, 3.0, 5.0, 0.3, 0.03, 8, 150_000, 77.0, 79.1),
        SweepRow("TP=3", 3, "skipped", notes=("heads (step 2): 64 heads",)),
        SweepRow("PP=2", 2, "done", "c", 950.0, 3.5, 5.5, 0.4, 0.04, 16, 400_000, 40.0, 79.1),
    ]


def test_goal_choice_and_the_runner_up():
    latency = choose(rows(), "latency")
    assert latency.label == "TP=2" and "2.00 s" in latency.why
    assert latency.runner_up == "TP=1: 50% slower at concurrency 1"
    throughput = choose(rows(), "throughput")
    assert throughput.label == "PP=2" and throughput.runner_up.startswith("TP=2: 5% less")


def test_renderings_put_the_baseline_first_with_ratios():
    text = render_text(rows(), "throughput")
    lines = text.splitlines()
    assert lines[1].startswith("TP=1") and "baseline" in lines[1]
    assert "1.80x" in text and "*PP=2" in text and "heads (step 2)" in text
    assert "goal throughput: PP=2" in text
    md = render_markdown(rows(), "latency")
    assert md.splitlines()[2].startswith("| TP=1") and "**TP=2**" in md
    table = list(csv.DictReader(io.StringIO(render_csv(rows(), "throughput"))))
    assert table[0]["label"] == "TP=1" and table[0]["is_baseline"] == "True"
    assert float(table[1]["ratio"]) == pytest.approx(1.8)
    # TP=1 peaks at 77 of 79.1 GiB: under the 5 % margin
    assert row_json(rows()[1], None)["memory_margin"] == pytest.approx(1 - 77 / 79.1)


def test_resume_reads_finished_rows_back(tmp_path):
    journal = Journal(tmp_path / "runs.jsonl")
    done = rows()[0]
    journal.append(RunRecord(run_id="r1", outcome="stopped"))
    journal.update("r1", sweep={"id": "sw-1", "label": "TP=2", "row": row_json(done, None)})
    journal.append(RunRecord(run_id="r2", outcome="stopped"))
    journal.update("r2", sweep={"id": "sw-1", "label": "TP=4"})  # interrupted: no row
    journal.append(RunRecord(run_id="r3", outcome="stopped"))
    journal.update(
        "r3", sweep={"id": "sw-other", "label": "TP=1", "row": row_json(rows()[1], None)}
    )
    found = finished_rows(journal, "sw-1")
    assert list(found) == ["TP=2"]
    assert found["TP=2"] == done
    assert json.loads(json.dumps(row_json(found["TP=2"], None)))["throughput_tok_s"] == 900.0


def test_only_the_configurations_gpus_count_for_skew():
    from headroom.sweep.runner import GpuSampler

    total = 80 * 2**30
    sampler = GpuSampler(None, samples=10)
    sampler.total_bytes = {0: total, 1: total, 2: total}
    sampler.peak_bytes = {0: 70 * 2**30, 1: 70 * 2**30, 2: 2**29}  # GPU 2 is not in this run
    sampler.util_sum = {0: 800.0, 1: 790.0, 2: 0.0}
    assert sampler.used_gpus() == [0, 1] and sampler.skew_note() is None
    sampler.util_sum = {0: 800.0, 1: 200.0, 2: 0.0}
    assert sampler.skew_note() == "GPU 1 idles: 20% utilization vs 80% on GPU 0"
    assert sampler.fullest() == (70.0, 80.0)
