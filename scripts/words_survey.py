"""How well the doctor's words readers read the field's titles (a survey, read-only).

    python scripts/words_survey.py [FILE] [--json] [--all]

FILE (default tests/fixtures/field_words/titles.jsonl, see SOURCES.md there) holds real issue
titles and first sentences about vLLM serving, each with the symptom class its words state
(`label`) and the numbers they carry (`carries`). Each text is given to the doctor the way a
log that is only words reaches it: as the log of a `DoctorInputs`, read through
`headroom.doctor.context.Context` (the log reader's catalog events, then
probes.symptom_text's events from words, probes.symptom_facts' facts) and
probes.symptom_hang.hang_words, as rules_hang calls it. The class the readers give is the
first of:

- an event: `cuda_oom` -> oom; `no_cache_memory` / `max_seq_len_exceeds_kv` -> kv;
  `preemption` -> preemption; `dtype_unsupported` / a quantization kind -> quant;
- a hang in words (hang_words) -> hang;
- the facts: memory_taken -> memory_taken; nan/empty output -> output; one GPU of several
  in use -> one_gpu_used; structured output slow -> slow.

Printed: coverage (of the texts whose label is a class the readers have, READER_CLASSES, the
share they recognise as that class), the right-class rate over every text (the class given
equals the label, or none given for a label no reader has: slow, quant, other), the misread
(a class given that is not the label: a false positive) and the unread texts by family, and
how many of the numbers the words carry the readers take (GPU count, TP, release, a GPU's
memory, a model's size).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from headroom.doctor.context import Context  # noqa: E402
from headroom.doctor.findings import DoctorInputs  # noqa: E402
from headroom.probes.symptom_hang import hang_words  # noqa: E402
from headroom.probes.vllm_log import digest_text  # noqa: E402

DEFAULT = ROOT / "tests" / "fixtures" / "field_words" / "titles.jsonl"
# The symptom classes some words reader (or the catalog, for vLLM's own text) gives.
READER_CLASSES = frozenset(
    {"oom", "kv", "hang", "memory_taken", "output", "one_gpu_used", "preemption"}
)
_EVENT_CLASS = {
    "cuda_oom": "oom",
    "no_cache_memory": "kv",
    "max_seq_len_exceeds_kv": "kv",
    "preemption": "preemption",
    "dtype_unsupported": "quant",
    "quantization_unsupported": "quant",
    "quant_dtype_unsupported": "quant",
}
_SIZE = re.compile(r"(?<![A-Za-z\d.])(\d+(?:\.\d+)?)\s*[bB](?![A-Za-z])")


@dataclass(frozen=True)
class Reading:
    """What the readers made of one text."""

    cls: str | None  # the symptom class, None when nothing was recognised
    detail: str  # the event kind or fact that gave it
    gpus: int | None  # the most GPUs the words name
    tp: int | None  # a TP / parallel size the hang reader took
    version: str | None  # the release the context reads
    gpu_gib: float | None  # one GPU's memory
    gpu_names: tuple[str, ...]
    model_names: tuple[str, ...]


def read(text: str) -> Reading:
    """The readers' view of `text` given as a log of words."""
    ctx = Context(DoctorInputs(log=digest_text(text + "\n")))
    words = ctx.words
    cls, detail = None, ""
    for event in ctx.events:
        if event.kind in _EVENT_CLASS and event.severity in ("error", "warning"):
            cls, detail = _EVENT_CLASS[event.kind], event.kind
            break
    hang = hang_words(ctx.raw_lines, ctx.events)
    if cls is None and hang is not None:
        cls, detail = "hang", "hang_words" + (" (other stage)" if hang.other_stage else "")
    if cls is None and words is not None:
        for name, flag in (
            ("memory_taken", words.memory_taken),
            ("output", words.nan_output or words.empty_output),
            ("one_gpu_used", words.one_gpu_of_several),
            ("slow", words.structured_slow),
        ):
            if flag:
                cls, detail = name, name
                break
    if cls is None:
        kinds = sorted({e.kind for e in ctx.events if e.severity == "error"})
        detail = ",".join(kinds)  # a catalog error of no class here (not a misread)
    return Reading(
        cls=cls,
        detail=detail,
        gpus=words.gpus_at_hand if words is not None else None,
        tp=hang.tp if hang is not None else None,
        version=ctx.version,
        gpu_gib=words.gpu_memory_gib if words is not None else None,
        gpu_names=words.gpu_names if words is not None else (),
        model_names=words.model_names if words is not None else (),
    )


def load(path: Path = DEFAULT) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def right(label: str, reading: Reading) -> bool:
    if reading.cls is None:
        return label not in READER_CLASSES
    return reading.cls == label


def _numbers(row: dict, reading: Reading) -> dict[str, tuple[bool, bool]]:
    """{number: (carried, read right)} for the numbers the row's words carry."""
    carries = row.get("carries") or {}
    out: dict[str, tuple[bool, bool]] = {}
    if "gpus" in carries:
        out["gpus"] = (True, reading.gpus == carries["gpus"])
    if "gpu_gib" in carries:
        got = reading.gpu_gib
        out["gpu_gib"] = (True, got is not None and abs(got - carries["gpu_gib"]) < 1)
    if "version" in carries:
        want = str(carries["version"])
        out["version"] = (True, reading.version is not None and reading.version.startswith(want))
    if "gpu" in carries:
        want = str(carries["gpu"]).lower()
        out["gpu"] = (True, any(want in g.lower().replace(" ", "") for g in reading.gpu_names))
    size = carries.get("size_b")
    if size is None and carries.get("model"):
        found = _SIZE.findall(str(carries["model"]))
        size = float(found[-1]) if found else None
    if size is not None:
        sizes = {float(s) for n in reading.model_names for s in _SIZE.findall(n)}
        out["model_size"] = (True, float(size) in sizes)
    return out


def survey(rows: list[dict]) -> dict:
    """The figures, and every text that was misread or unread, by family (its label)."""
    readings = [(row, read(row["text"])) for row in rows]
    own = [(r, g) for r, g in readings if r["label"] in READER_CLASSES]
    covered = sum(1 for r, g in own if g.cls == r["label"])
    right_n = sum(1 for r, g in readings if right(r["label"], g))
    misread: dict[str, list] = defaultdict(list)
    unread: dict[str, list] = defaultdict(list)
    numbers: dict[str, Counter] = defaultdict(Counter)
    for row, reading in readings:
        for key, (_, ok) in _numbers(row, reading).items():
            numbers[key]["carried"] += 1
            numbers[key]["read"] += int(ok)
        if right(row["label"], reading):
            continue
        entry = {"id": row["id"], "text": row["text"], "got": reading.cls, "detail": reading.detail}
        if reading.cls is not None:
            misread[row["label"]].append(entry)
        else:
            unread[row["label"]].append(entry)
    return {
        "texts": len(rows),
        "own_class_texts": len(own),
        "covered": covered,
        "right": right_n,
        "false_positives": sum(len(v) for v in misread.values()),
        "by_label": {
            label: {
                "count": sum(1 for r in rows if r["label"] == label),
                "right": sum(1 for r, g in readings if r["label"] == label and right(label, g)),
            }
            for label in sorted({r["label"] for r in rows})
        },
        "numbers": {k: dict(v) for k, v in sorted(numbers.items())},
        "misread": dict(misread),
        "unread": dict(unread),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", type=Path, default=DEFAULT)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--all", action="store_true", help="list every misread / unread text")
    args = parser.parse_args(argv)
    result = survey(load(args.file))
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=1))
        return 0
    own, texts = result["own_class_texts"], result["texts"]
    print(f"texts {texts}; of the {own} whose class a reader has, recognised as it: "
          f"{result['covered']} ({100 * result['covered'] / max(own, 1):.0f} %)")  # fmt: skip
    print(f"right class (none for slow / quant / other): {result['right']} / {texts} "
          f"({100 * result['right'] / max(texts, 1):.0f} %); misread (false positives): "
          f"{result['false_positives']}")  # fmt: skip
    for label, row in result["by_label"].items():
        print(f"  {label:13} {row['right']:3} / {row['count']:3}")
    print("numbers the words carry, read right:")
    for key, row in result["numbers"].items():
        print(f"  {key:11} {row.get('read', 0):3} / {row['carried']:3}")
    limit = None if args.all else 6
    for title, group in (("MISREAD", result["misread"]), ("UNREAD", result["unread"])):
        for label, entries in sorted(group.items(), key=lambda kv: -len(kv[1])):
            print(f"\n{title} {label} ({len(entries)})")
            for e in entries[:limit]:
                print(f"  [{e['got']}: {e['detail']}] {e['text'][:150]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
