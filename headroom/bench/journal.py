"""Putting a bench result into the run journal, on the run of the configuration under test.

The run is found by run id, or else as the newest journaled run listening on the bench URL's
port on this host (the one `headroom serve` started). A server Headroom did not start gets a
record of its own, so `headroom runs` still lists the bench. The API key is never stored:
BenchResult does not hold it (the workload records the URL, model and distribution only).
"""

from __future__ import annotations

import time
from urllib.parse import urlsplit

from headroom.supervisor.journal import Journal, RunRecord

_LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}
_LIVE = {"running", "ready", "detached"}
_NEVER_SERVED = {"failed", "rolled_back", "crashed"}


def _port(url: str) -> int | None:
    parts = urlsplit(url)
    try:
        return parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None


def find_run_for_url(journal: Journal, url: str) -> RunRecord | None:
    """The newest journaled run on this host whose port is the URL's port."""
    host = (urlsplit(url).hostname or "").lower()
    if host not in _LOCAL_HOSTS and not host.startswith("127."):
        return None
    port = _port(url)
    on_port = [r for r in journal.records() if r.port == port]
    # The configuration under test is the one serving now: prefer live runs; a run that
    # failed or was rolled back never served this bench.
    live = [r for r in on_port if r.outcome in _LIVE]
    ended = [r for r in on_port if r.outcome not in _NEVER_SERVED]
    candidates = live or ended
    return max(candidates, key=lambda r: r.time) if candidates else None


def record_bench(result, journal: Journal | None = None, run_id: str | None = None) -> str:
    """Store `result` (a BenchResult) in the journal; returns a sentence saying where."""
    journal = journal or Journal()
    data = result.to_json()
    url = str(result.workload.get("url") or "")
    target = journal.get(run_id) if run_id else find_run_for_url(journal, url)
    if run_id and target is None:
        raise KeyError(f"no run {run_id!r} in the journal {journal.path}")
    if target is not None:
        journal.update(target.run_id, bench=data)
        return f"bench added to run {target.run_id} in {journal.path}"
    record = RunRecord(
        model=result.workload.get("model"),
        outcome="detached",
        reason="bench of a server Headroom did not start",
        port=_port(url),
        bench=data,
        notes=f"benched at {url}",
        ended_at=time.time(),
    )
    journal.append(record)
    return f"bench recorded as run {record.run_id} in {journal.path}"
