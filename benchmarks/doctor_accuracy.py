"""How often `headroom doctor` names the fix that real public threads found (issue 12).

    .venv/bin/python benchmarks/doctor_accuracy.py [--json] [--details train] [--split train]

Each incident in tests/fixtures/incidents/ (one JSON file each, see SOURCES.md there) is run
the way a new user would run it: its error text, verbatim from the thread, written to a file
and given as `--log`; the thread's command line after `--`; `--gpus`/`--nodes` when the
thread says which GPUs; `--vllm-version` when the thread says which release (as a user knows
their own, and as vLLM's bug template asks); `--model-config` when the incident carries a config. The doctor runs
in this process through `headroom.cli.main(["doctor", ...])`, the same path as the console
script, so 150 incidents take seconds rather than 150 interpreter starts. The Hub is off and its
cache empty while it scores (HF_HUB_OFFLINE), so every machine gets the same figures.

Scored against the answer derived from the thread's own resolution (`expected`):
- right step: the top finding's step equals the expected step (null = "other");
- right knob: the top finding's first knob-turning action is the expected knob turned the
  expected way (or one of the thread's accepted alternatives, `expected.accept`); for an
  incident whose answer is no knob, the top finding turns no knob;
- wrong direction: any action of any finding turns the expected (or an accepted) knob the
  opposite way and not also an accepted way: raise <-> lower, and set <-> unset for every
  knob, engine arg or environment variable alike, whatever the value (`unset` removes a flag,
  its `--no-`/`=value` forms, or an environment variable: a thread answered "drop
  --enforce-eager" and a doctor saying "set enforce_eager" anywhere contradict each other, and
  vice versa; the SET_ONLY knobs compare raise/lower/set as "set", so "unset" is their only
  opposite). A wrong direction is a failed build (tests/doctor);
- exit 2: the doctor refused the input;
- right step and knob: both at once, issue 12's own measure ("right step and knob"). A top
  finding can turn the thread's knob under another step (TP raised as a head-divisibility fix
  where the thread raised it to hold the weights), so this is at most the smaller of the two.
A second, looser count is printed beside the strict one and never replaces it: "fix offered",
the thread's knob turned its way by ANY action of the top finding (the doctor ranks the free
knob first, e.g. raising gpu_memory_utilization before cutting max_model_len, where a thread
may have taken the second; an incident whose answer is no knob counts as in the strict one).

Per-incident lines are printed only for the training split (`--details train`): rules are
tuned on that split alone, and the validation split is only ever read as totals.
`--split train` runs and prints the training split alone: what an engineer writing rules
runs, so that not even the validation totals are seen while rules change.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shlex
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INCIDENTS = ROOT / "tests" / "fixtures" / "incidents"
# Score this checkout's doctor, not whichever headroom the environment installed (an editable
# install of another worktree would otherwise answer).
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
SPLITS = ("train", "validation")
STEP_KEYS = (1, 2, 3, 4, 5, None)
OPPOSITE = {"raise": "lower", "lower": "raise", "set": "unset", "unset": "set"}
# Knobs whose only sensible turn is to set them (a flag, a dtype, a method): compare as "set";
# removing one ("unset", e.g. dropping --enforce-eager) stays "unset", the opposite of "set".
SET_ONLY = {
    "enforce_eager",
    "kv_cache_dtype",
    "quantization",
    "dtype",
    "distributed_executor_backend",
}


def load_incidents(directory: Path = INCIDENTS) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(directory.glob("*.json"))]


def _turn(knob: str | None, direction: str | None) -> tuple[str | None, str | None]:
    if knob in SET_ONLY and direction != "unset":
        return knob, "set"
    return knob, direction


def contradicts(turn: tuple[str | None, str | None], wanted: set) -> bool:
    """A turn against the thread: its opposite is a wanted turn of the same knob and the turn
    itself is not (a thread that accepts both ways of a knob is contradicted by neither)."""
    knob, direction = turn
    opposite = OPPOSITE.get(direction or "")
    return bool(knob) and opposite is not None and (knob, opposite) in wanted and turn not in wanted


def doctor_argv(incident: dict, log_path: Path) -> list[str]:
    argv = ["doctor", "--json", "--log", str(log_path)]
    if incident.get("gpus"):
        argv += ["--gpus", incident["gpus"]]
    if incident.get("nodes"):
        argv += ["--nodes", str(incident["nodes"])]
    if incident.get("vllm_version"):
        argv += ["--vllm-version", str(incident["vllm_version"])]
    if incident.get("model_config"):
        config = log_path.with_name("config.json")
        config.write_text(json.dumps(incident["model_config"]))
        argv += ["--model-config", str(config)]
    if incident.get("command"):
        argv += ["--", *shlex.split(incident["command"])]
    return argv


@contextlib.contextmanager
def offline_hub():
    """The same score on every machine: no Hugging Face Hub and an empty hub cache, so a
    model id is sized from what the incident gives (its name, `model_config`), never from a
    config.json one machine happens to reach or have cached."""
    saved = {k: os.environ.get(k) for k in ("HF_HUB_OFFLINE", "HF_HOME", "HF_HUB_CACHE")}
    with tempfile.TemporaryDirectory() as cache:
        os.environ.update(HF_HUB_OFFLINE="1", HF_HOME=cache, HF_HUB_CACHE=cache)
        try:
            yield
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value


def run_doctor(incident: dict) -> tuple[int, dict | None, str]:
    """(exit status, the JSON document or None, stderr) for one incident."""
    from headroom.cli import main as headroom_main

    with tempfile.TemporaryDirectory() as tmp:
        log_path = Path(tmp) / "vllm.log"
        log_path.write_text(incident["log"] + "\n", encoding="utf-8")
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = headroom_main(doctor_argv(incident, log_path))
            except SystemExit as exc:  # argparse and friends
                code = exc.code if isinstance(exc.code, int) else 2
    try:
        doc = json.loads(out.getvalue()) if out.getvalue().strip() else None
    except json.JSONDecodeError:
        doc = None
    return int(code or 0), doc, err.getvalue()


@dataclass
class Outcome:
    incident: dict
    code: int
    got_step: object = "none"  # "none" = no finding at all
    got_turn: tuple | None = None
    right_step: bool = False
    right_knob: bool = False
    fix_offered: bool = False  # the thread's turn among the top finding's actions
    wrong_direction: list[str] = field(default_factory=list)
    title: str = ""


def score(incident: dict, code: int, doc: dict | None) -> Outcome:
    exp = incident["expected"]
    wanted = {_turn(exp["knob"], exp["direction"])} | {_turn(k, d) for k, d in exp["accept"]}
    outcome = Outcome(incident, code)
    findings = (doc or {}).get("findings") or []
    if code == 2:
        return outcome
    if not findings:
        # "Not a configuration problem" is answered right by a doctor that finds nothing.
        outcome.right_step = outcome.right_knob = exp["step"] is None and exp["knob"] is None
        outcome.fix_offered = outcome.right_knob
        return outcome
    top = findings[0]
    outcome.title = top.get("title", "")
    outcome.got_step = top.get("step")
    outcome.right_step = top.get("step") == exp["step"]
    knob_actions = [a for a in top.get("actions", []) if a.get("knob")]
    if knob_actions:
        outcome.got_turn = _turn(knob_actions[0]["knob"], knob_actions[0]["direction"])
    if exp["knob"] is None:
        outcome.right_knob = outcome.got_turn is None
        outcome.fix_offered = outcome.right_knob
    else:
        outcome.right_knob = outcome.got_turn in wanted
        offered = {_turn(a["knob"], a.get("direction")) for a in knob_actions}
        outcome.fix_offered = bool(offered & wanted)
    for f in findings:
        for a in f.get("actions", []):
            if contradicts(_turn(a.get("knob"), a.get("direction")), wanted):
                outcome.wrong_direction.append(f"{f.get('id')}: {a['direction']} {a['knob']}")
    return outcome


def evaluate(incidents: list[dict]) -> list[Outcome]:
    outcomes = []
    with offline_hub():
        for incident in incidents:
            code, doc, _ = run_doctor(incident)
            outcomes.append(score(incident, code, doc))
    return outcomes


def title_only(incident: dict) -> bool:
    """The thread pasted no log: the incident's log is (part of) the issue title's text."""
    log = " ".join(incident["log"].split())
    return bool(log) and log in " ".join(incident["source"]["title"].split())


def summarize(outcomes: list[Outcome]) -> dict:
    """{split: {"all"|"1".."5"|"other"|"pasted"|"title": {count, right_step, right_knob,
    fix_offered, wrong_direction, exit_2}}}: by expected step, then by what the thread gave
    (a pasted log, or only its title's text)."""
    table: dict = {}
    for o in outcomes:
        split = o.incident["split"]
        step = o.incident["expected"]["step"]
        kind = "title" if title_only(o.incident) else "pasted"
        for key in ("all", "other" if step is None else str(step), kind):
            row = table.setdefault(split, {}).setdefault(
                key,
                {
                    "count": 0,
                    "right_step": 0,
                    "right_knob": 0,
                    "right_both": 0,
                    "fix_offered": 0,
                    "wrong_direction": 0,
                    "exit_2": 0,
                },
            )
            row["count"] += 1
            row["right_step"] += o.right_step
            row["right_knob"] += o.right_knob
            row["right_both"] += o.right_knob and o.right_step
            row["fix_offered"] += o.fix_offered
            row["wrong_direction"] += bool(o.wrong_direction)
            row["exit_2"] += o.code == 2
    return table


def render(table: dict) -> str:
    lines = []
    order = ["all", "1", "2", "3", "4", "5", "other", "pasted", "title"]
    for split in SPLITS:
        rows = table.get(split)
        if not rows:  # --split train: the other split is not run, so it has no header either
            continue
        lines.append(f"{split}")
        lines.append(
            "  step    count  right step  right knob+dir  step and knob  fix offered"
            "  wrong dir  exit 2"
        )
        for key in order:
            r = rows.get(key)
            if not r:
                continue
            if key == "pasted":
                lines.append("  by what the thread gave: a pasted log, or the title's text only")
            pct = 100.0 * r["right_knob"] / r["count"]
            both = 100.0 * r["right_both"] / r["count"]
            offered = 100.0 * r["fix_offered"] / r["count"]
            lines.append(
                f"  {key:<6} {r['count']:>6}  {r['right_step']:>10}  {r['right_knob']:>8}"
                f" ({pct:3.0f}%)  {r['right_both']:>7} ({both:3.0f}%)"
                f"  {r['fix_offered']:>4} ({offered:3.0f}%)"
                f"  {r['wrong_direction']:>9}  {r['exit_2']:>6}"
            )
    return "\n".join(lines)


def details(outcomes: list[Outcome], split: str) -> str:
    if split != "train":
        raise SystemExit("per-incident details are shown for the training split only")
    lines = []
    for o in outcomes:
        if o.incident["split"] != split:
            continue
        exp = o.incident["expected"]
        mark = "ok " if o.right_knob and o.right_step else "MISS"
        if o.wrong_direction:
            mark = "WRONG"
        lines.append(
            f"{mark:5} {o.incident['id']}: want step {exp['step']} {exp['direction']} "
            f"{exp['knob']}; got step {o.got_step} {o.got_turn} (exit {o.code}) {o.title[:70]}"
            + (f" WRONG: {o.wrong_direction}" if o.wrong_direction else "")
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    incidents = load_incidents()
    if "--split" in argv:
        wanted = argv[argv.index("--split") + 1]
        if wanted not in SPLITS:
            raise SystemExit(f"--split takes one of {', '.join(SPLITS)}")
        incidents = [i for i in incidents if i["split"] == wanted]
    outcomes = evaluate(incidents)
    table = summarize(outcomes)
    if "--json" in argv:
        print(json.dumps(table, indent=2))
    else:
        print(render(table))
    if "--details" in argv:
        print(details(outcomes, argv[argv.index("--details") + 1]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
