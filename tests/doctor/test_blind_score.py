"""scripts/blind_score.py: the old rules' score on today's incidents, totals only.

With the rules of HEAD and nothing added since, it must give exactly what the benchmark gives
in this process: the worktree, the copied incidents and the copied scorer change nothing."""

from __future__ import annotations

import subprocess

import pytest
from support.repo_scripts import ROOT, load_repo_script


def _clean_git_checkout() -> bool:
    try:
        status = subprocess.run(
            ["git", "status", "--porcelain", "--", "headroom", "benchmarks"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return False
    return not status.strip()


@pytest.mark.skipif(not _clean_git_checkout(), reason="needs a git checkout with committed code")
def test_head_rules_on_head_incidents_match_the_benchmark():
    blind = load_repo_script("scripts/blind_score.py")
    bench = load_repo_script("benchmarks/doctor_accuracy.py")
    rows = blind.blind_rows("HEAD", "HEAD")
    table = bench.summarize(bench.evaluate(bench.load_incidents()))
    on_disk = {p.stem for p in (ROOT / "tests/fixtures/incidents").glob("*.json")}
    if set(blind.incident_ids_at("HEAD")) != on_disk:
        pytest.skip("incidents not committed yet: HEAD's ids differ from the files")
    assert not any(key.endswith("added") for key in rows)
    for split in ("train", "validation"):
        ours, theirs = rows[f"{split} present"], table[split]["all"]
        for column in ("count", "right_step", "right_knob", "right_both", "wrong_direction"):
            assert ours[column] == theirs[column], (split, column)


def test_render_names_each_part_and_the_share_of_both():
    blind = load_repo_script("scripts/blind_score.py")
    row = {"count": 4, "right_step": 3, "right_knob": 2, "right_both": 1,
           "wrong_direction": 0, "exit_2": 0}  # fmt: skip
    text = blind.render({"train added": row}, "abc", "def")
    assert "train added" in text and "( 25%)" in text and "since def" in text
