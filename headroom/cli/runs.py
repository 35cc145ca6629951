"""`headroom runs [--csv|--json|--markdown] [--last N] [--model M]`: the run journal as the
configuration comparison table, the same one `headroom bench --compare` prints
(headroom.bench.compare): the single-GPU benched baseline first, each benched
row's throughput as a ratio to it, comparability notes, and the runs without a bench with
what the supervisor measured while they served."""

from __future__ import annotations

import argparse
import json
import sys
import warnings


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="headroom runs",
        description="The run journal as a configuration comparison table: the single-GPU "
        "baseline first, throughput as a ratio to it, notes when runs are not comparable.",
        epilog="journal: $HEADROOM_DATA_DIR/runs.jsonl or ~/.local/share/headroom/runs.jsonl",
    )
    fmt = parser.add_mutually_exclusive_group()
    fmt.add_argument("--csv", action="store_true", help="CSV (raw numbers)")
    fmt.add_argument("--json", action="store_true", help="JSON (table rows and full records)")
    fmt.add_argument("--markdown", action="store_true", help="a Markdown table")
    parser.add_argument("--last", type=int, metavar="N", help="only the newest N runs")
    parser.add_argument("--model", help="only runs of this model")
    parser.add_argument("--journal", help="read this journal file instead")
    args = parser.parse_args(argv)

    from pathlib import Path

    from headroom.bench import compare as bench_compare
    from headroom.bench import compare_table
    from headroom.probes.safe_text import safe_text
    from headroom.supervisor.journal import Journal, JournalWarning

    journal = Journal(Path(args.journal) if args.journal else None)
    if args.journal and not journal.path.is_file():  # a path typed wrong is no empty journal
        print(f"headroom runs: no journal file at {journal.path}", file=sys.stderr)
        return 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JournalWarning)
        try:
            records = journal.records()
        except OSError as exc:
            print(f"headroom runs: cannot read {journal.path}: {exc.strerror}", file=sys.stderr)
            return 1
    for why in journal.skipped:
        print(f"headroom runs: warning: {safe_text(why)}", file=sys.stderr)
    in_all = len(records)
    if args.model:
        records = [r for r in records if r.model == args.model]
    records.sort(key=lambda r: r.time if isinstance(r.time, int | float) else 0)
    if args.last:
        records = records[-args.last :]
    rows = bench_compare.compare_runs(records, benched_only=False)
    if args.csv:
        out = compare_table.comparison_csv(rows)
    elif args.json:
        by_id = {str(r.run_id): r for r in records}
        out = json.dumps(
            [
                {"row": row, "record": by_id[str(row["run_id"])].to_json()}
                for row in compare_table.comparison_to_json(rows)
            ],
            indent=1,
            default=str,
        )
    elif args.markdown:
        out = compare_table.comparison_markdown(rows)
    else:
        empty = "no runs in the journal yet (headroom serve records each run)"
        if in_all and args.model:
            empty = f"no runs of model {args.model!r} among the journal's {in_all} runs"
        out = compare_table.render_comparison(rows, empty=empty)
    try:
        if not args.json:  # JSON escapes control characters itself
            out = safe_text(out, multiline=True)  # models, reasons: the journal is editable
        sys.stdout.write(out if out.endswith("\n") else out + "\n")
    except BrokenPipeError:
        pass
    return 0
