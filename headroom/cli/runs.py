"""`headroom runs [--csv|--json|--markdown] [--last N] [--model M]`: the run journal as the
configuration comparison table (configuration, GPUs/topology, throughput, p95 latency, TTFT,
memory peak, notes)."""

from __future__ import annotations

import argparse
import sys
import warnings


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="headroom runs",
        description="The run journal as a configuration comparison table.",
        epilog="journal: $HEADROOM_DATA_DIR/runs.jsonl or ~/.local/share/headroom/runs.jsonl",
    )
    fmt = parser.add_mutually_exclusive_group()
    fmt.add_argument("--csv", action="store_true", help="CSV")
    fmt.add_argument("--json", action="store_true", help="JSON (table rows and full records)")
    fmt.add_argument("--markdown", action="store_true", help="a Markdown table")
    parser.add_argument("--last", type=int, metavar="N", help="only the newest N runs")
    parser.add_argument("--model", help="only runs of this model")
    parser.add_argument("--journal", help="read this journal file instead")
    args = parser.parse_args(argv)

    from pathlib import Path

    from headroom.supervisor import journal_table
    from headroom.supervisor.journal import Journal, JournalWarning

    journal = Journal(Path(args.journal) if args.journal else None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JournalWarning)
        try:
            records = journal.records()
        except OSError as exc:
            print(f"headroom runs: cannot read {journal.path}: {exc.strerror}", file=sys.stderr)
            return 1
    for why in journal.skipped:
        print(f"headroom runs: warning: {why}", file=sys.stderr)
    if args.model:
        records = [r for r in records if r.model == args.model]
    records.sort(key=lambda r: r.time or 0)
    if args.last:
        records = records[-args.last :]
    if args.csv:
        out = journal_table.to_csv(records)
    elif args.json:
        out = journal_table.to_json(records)
    elif args.markdown:
        out = journal_table.to_markdown(records)
    else:
        out = journal_table.to_text(records)
    try:
        sys.stdout.write(out if out.endswith("\n") else out + "\n")
    except BrokenPipeError:
        pass
    return 0
