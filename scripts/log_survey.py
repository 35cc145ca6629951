"""How well the log reader and the doctor read error excerpts pasted in the field (read-only).

    python scripts/log_survey.py [FILE] [--misread] [--doctor] [--gaps] [--json OUT]

FILE (default tests/fixtures/field_logs/excerpts.jsonl, see SOURCES.md beside it) holds one
real excerpt a line (without the threads an incident file was since made from): the lines a public thread pasted that carry the failure, verbatim, the
thread's URL, the family the doctor should name (a log-reader event kind) and, where found,
the source text that printed it. It is independent of tests/fixtures/incidents.

For every excerpt the log reader (headroom.probes.vllm_log.digest_text) reads the text, and
the survey prints:
- coverage: the reader recognised a failure or warning other than the generic ones (any
  exception, a bare traceback, a generic NCCL line);
- right family: what the reader names first is the excerpt's family (the top-ranked failure;
  for a family that is only a warning, that warning among the events);
- --misread: the excerpts read as nothing or as another family, grouped by source text;
- --doctor: also runs `headroom doctor --json --log` on each excerpt (no command line, no
  GPUs) and counts how many get a finding at all, and which finding ids they get;
- --gaps (implies --doctor): the excerpts whose family the reader names rightly but that get
  no finding, and those whose top finding turns no knob, grouped by family (a finding with
  no knob is right for a family that is no setting: an upgrade, a bug, a client's request).
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from headroom.probes.vllm_log import digest_text  # noqa: E402

DEFAULT = ROOT / "tests" / "fixtures" / "field_logs" / "excerpts.jsonl"
# Kinds that say "something failed" without saying what: they do not count as recognised.
GENERIC = {"exception", "traceback", "worker_exception", "nccl_warn", "nccl_transport"}


@dataclass
class Reading:
    excerpt: dict
    kinds: list[str] = field(default_factory=list)  # failures (ranked), then warnings
    top: str | None = None
    finding: str | None = None  # the doctor's top finding id, when --doctor
    actions: list[str] = field(default_factory=list)  # its knobs, "knob:direction"

    @property
    def recognised(self) -> bool:
        return any(k not in GENERIC for k in self.kinds)

    @property
    def right(self) -> bool:
        return self.excerpt["family"] == self.top or (
            self.top is None and self.excerpt["family"] in self.kinds
        )


INCIDENTS = ROOT / "tests" / "fixtures" / "incidents"


def thread_of(excerpt_id: str) -> str:
    """`owner--repo--number` of an excerpt id (a second excerpt of a thread ends in --2)."""
    return "--".join(excerpt_id.split("--")[:3])


def incident_threads(directory: Path = INCIDENTS) -> set[str]:
    """The threads the incident corpus holds, from its file names alone (never opened)."""
    return {thread_of(p.stem) for p in directory.glob("*.json")}


def load(path: Path = DEFAULT, *, independent: bool = True) -> list[dict]:
    """The excerpts; `independent`: without a thread that an incident file was since made
    from (the survey measures texts the doctor was not tuned on)."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    if not independent:
        return rows
    taken = incident_threads()
    return [r for r in rows if thread_of(r["id"]) not in taken]


def read(excerpt: dict) -> Reading:
    facts = digest_text(excerpt["text"]).facts()
    failures = [e.kind for e in facts.failures]
    warnings = [e.kind for e in facts.warnings]
    specific = [k for k in failures if k not in GENERIC]
    reading = Reading(excerpt, kinds=[*failures, *warnings])
    if specific:
        reading.top = specific[0]
    elif failures and excerpt["family"] in GENERIC:
        reading.top = failures[0]
    return reading


def doctor_finding(text: str) -> tuple[str | None, list[str]]:
    """The id of the doctor's top finding for a log holding only this text (None: none) and
    its actions as "knob:direction"."""
    from headroom.cli import main as headroom_main

    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "vllm.log"
        log.write_text(text + "\n", encoding="utf-8")
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            try:
                headroom_main(["doctor", "--json", "--log", str(log)])
            except SystemExit:
                pass
    try:
        findings = json.loads(out.getvalue()).get("findings") or []
    except (json.JSONDecodeError, AttributeError):
        return None, []
    if not findings:
        return None, []
    actions = [f"{a.get('knob')}:{a.get('direction')}" for a in findings[0].get("actions") or []]
    return findings[0].get("id"), actions


def survey(excerpts: list[dict], *, doctor: bool = False) -> list[Reading]:
    readings = [read(e) for e in excerpts]
    if doctor:
        for r in readings:
            r.finding, r.actions = doctor_finding(r.excerpt["text"])
    return readings


def figures(readings: list[Reading]) -> dict[str, float | int]:
    n = len(readings) or 1
    out: dict[str, float | int] = {
        "excerpts": len(readings),
        "recognised": sum(r.recognised for r in readings),
        "right_family": sum(r.right for r in readings),
    }
    out["coverage"] = round(out["recognised"] / n, 3)
    out["right_rate"] = round(out["right_family"] / n, 3)
    if any(r.finding is not None for r in readings):
        out["with_finding"] = sum(r.finding is not None for r in readings)
        out["finding_rate"] = round(out["with_finding"] / n, 3)
    return out


def gaps(readings: list[Reading]) -> dict[str, dict[str, list[Reading]]]:
    """Rightly read excerpts the doctor answers with nothing ("no finding") or with a
    finding that turns no knob ("no action"), by family."""
    out: dict[str, dict[str, list[Reading]]] = {"no finding": {}, "no action": {}}
    for r in readings:
        if not r.right:
            continue
        gap = "no finding" if r.finding is None else "no action" if not r.actions else None
        if gap:
            out[gap].setdefault(r.excerpt["family"], []).append(r)
    return out


def render_gaps(readings: list[Reading]) -> list[str]:
    lines = []
    for gap, families in gaps(readings).items():
        total = sum(len(rs) for rs in families.values())
        lines.append(f"right family, {gap}: {total}")
        for fam, rs in sorted(families.items(), key=lambda kv: -len(kv[1])):
            lines.append(f"- {fam} ({len(rs)})")
            lines += [f"    {r.excerpt['id']}" + (f" doctor={r.finding}" if r.finding else "")
                      for r in rs]  # fmt: skip
    return lines


def render(readings: list[Reading], *, misread: bool, gapped: bool = False) -> str:
    f = figures(readings)
    lines = [
        f"excerpts: {f['excerpts']}",
        f"coverage (recognised at all): {f['recognised']} ({f['coverage']:.1%})",
        f"right family: {f['right_family']} ({f['right_rate']:.1%})",
    ]
    if any(r.finding is not None for r in readings):
        got = Counter(r.finding for r in readings)
        lines.append(f"doctor: a finding for {len(readings) - got[None]} excerpts")
        lines += [f"  {n:3d} {fid}" for fid, n in got.most_common() if fid]
    by_family: dict[str, list[Reading]] = defaultdict(list)
    for r in readings:
        by_family[r.excerpt["family"]].append(r)
    lines.append("per family (right / all):")
    for fam, rs in sorted(by_family.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"  {sum(r.right for r in rs):3d}/{len(rs):<3d} {fam}")
    if misread:
        groups: dict[str, list[Reading]] = defaultdict(list)
        for r in readings:
            if not r.right:
                groups[r.excerpt.get("source") or r.excerpt["family"]].append(r)
        lines.append("unread / misread, by source text:")
        for source, rs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            lines.append(f"- {source}  [{rs[0].excerpt['family']}]")
            for r in rs:
                got = r.top or ("nothing" if not r.kinds else ",".join(r.kinds[:3]))
                doc = f" doctor={r.finding}" if r.finding is not None else ""
                lines.append(f"    {r.excerpt['id']}: read as {got}{doc}")
    if gapped:
        lines += render_gaps(readings)
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    out_at = argv.index("--json") + 1 if "--json" in argv else -1
    args = [a for i, a in enumerate(argv) if not a.startswith("--") and i != out_at]
    path = Path(args[0]) if args else DEFAULT
    gapped = "--gaps" in argv
    readings = survey(load(path), doctor="--doctor" in argv or gapped)
    print(render(readings, misread="--misread" in argv, gapped=gapped))
    if "--json" in argv:
        out = Path(argv[argv.index("--json") + 1])
        table = [
            {"id": r.excerpt["id"], "family": r.excerpt["family"], "top": r.top,
             "kinds": r.kinds, "finding": r.finding, "actions": r.actions}
            for r in readings
        ]  # fmt: skip
        out.write_text(json.dumps({"figures": figures(readings), "excerpts": table}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
