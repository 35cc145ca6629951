"""The doctor's score on incidents its rules never saw: the honest figure for a new user.

    PYTHONPATH=$PWD .venv/bin/python scripts/blind_score.py RULES_REV [--since REV]

Scores this checkout's incidents (tests/fixtures/incidents/) with the doctor as it stood at
RULES_REV, split into the incidents RULES_REV already had and those added since (or since
--since REV, default RULES_REV). Incidents collected blind after RULES_REV (SOURCES.md says
which collections were) were never seen by the rules of RULES_REV, so their score is what a new
user's threads get; the README's "honest figure" rows come from here (session 6: RULES_REV
83b51a3, the session's start).

The old rules run in a temporary git worktree of RULES_REV with this checkout's incidents and
this checkout's benchmark copied in (the scoring rules, e.g. the `unset` direction, are today's,
so old and new rules are scored alike). Totals only, per split: nothing per incident, so the
validation split stays unread. Never `shell=True`; the worktree is removed afterwards.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INCIDENTS = "tests/fixtures/incidents"
BENCH = "benchmarks/doctor_accuracy.py"

# Run inside the old worktree: score every incident, print per split and per part the totals.
_SCORER = """
import json, sys
sys.path.insert(0, "benchmarks"); sys.path.insert(0, ".")
import doctor_accuracy as da
old = set(json.loads(sys.argv[1]))
rows = {}
for o in da.evaluate(da.load_incidents()):
    part = "present" if o.incident["id"] in old else "added"
    r = rows.setdefault(o.incident["split"] + " " + part, dict.fromkeys(
        ("count", "right_step", "right_knob", "right_both", "wrong_direction", "exit_2"), 0))
    r["count"] += 1
    r["right_step"] += o.right_step
    r["right_knob"] += o.right_knob
    r["right_both"] += o.right_knob and o.right_step
    r["wrong_direction"] += bool(o.wrong_direction)
    r["exit_2"] += o.code == 2
print(json.dumps(rows))
"""


def _git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def incident_ids_at(rev: str) -> list[str]:
    """The incident ids the tree of `rev` holds (file names without .json)."""
    names = _git("ls-tree", "--name-only", rev, INCIDENTS + "/").split()
    return sorted(Path(n).stem for n in names if n.endswith(".json"))


def blind_rows(rules_rev: str, since_rev: str) -> dict[str, dict[str, int]]:
    """{"train present": {...}, "train added": {...}, "validation ...": ...} with RULES_REV's
    doctor on this checkout's incidents."""
    old_ids = incident_ids_at(since_rev)
    tmp = Path(tempfile.mkdtemp(prefix="blind-"))
    tree = tmp / "tree"
    _git("worktree", "add", "--detach", "-q", str(tree), rules_rev)
    try:
        shutil.rmtree(tree / INCIDENTS)
        shutil.copytree(ROOT / INCIDENTS, tree / INCIDENTS)
        shutil.copy2(ROOT / BENCH, tree / BENCH)
        out = subprocess.run(
            [sys.executable, "-c", _SCORER, json.dumps(old_ids)],
            cwd=tree,
            env={**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1"},
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        return json.loads(out.strip().splitlines()[-1])
    finally:
        _git("worktree", "remove", "--force", str(tree))
        shutil.rmtree(tmp, ignore_errors=True)


def render(rows: dict[str, dict[str, int]], rules_rev: str, since_rev: str) -> str:
    lines = [f"rules of {rules_rev}; 'added' = incidents added since {since_rev}"]
    lines.append(
        "  split/part            count  right step  right knob  step and knob  wrong  exit 2"
    )
    for key in sorted(rows):
        r = rows[key]
        share = 100.0 * r["right_both"] / r["count"] if r["count"] else 0.0
        lines.append(
            f"  {key:<20} {r['count']:>6}  {r['right_step']:>10}  {r['right_knob']:>10}"
            f"  {r['right_both']:>6} ({share:3.0f}%)  {r['wrong_direction']:>5}  {r['exit_2']:>6}"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        raise SystemExit(__doc__)
    rules_rev = argv[0]
    since_rev = argv[argv.index("--since") + 1] if "--since" in argv else rules_rev
    print(render(blind_rows(rules_rev, since_rev), rules_rev, since_rev))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
