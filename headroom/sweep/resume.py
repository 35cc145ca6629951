"""Resuming a sweep: the rows an earlier, interrupted run of the same sweep id finished are
read back from the journal (each run's record carries {"sweep": {"id", "label", "row"}};
a run stopped before its row was written has no row and is run again)."""

from __future__ import annotations

from headroom.supervisor.journal import Journal
from headroom.sweep.table import SweepRow

__all__ = ["finished_rows"]


def finished_rows(journal: Journal, sweep_id: str) -> dict[str, SweepRow]:
    """Rows an earlier, interrupted run of this sweep already finished, by label."""
    done: dict[str, SweepRow] = {}
    for record in journal.records():
        sweep = record.extra.get("sweep")
        if not isinstance(sweep, dict) or sweep.get("id") != sweep_id:
            continue
        row = sweep.get("row")
        if isinstance(row, dict) and row.get("outcome") == "done":
            fields = {k: v for k, v in row.items() if k in SweepRow.__dataclass_fields__}
            fields["notes"] = tuple(fields.get("notes") or ())
            try:
                done[str(sweep.get("label"))] = SweepRow(**fields)
            except TypeError:
                continue
    return done
