"""The doctor's top finding on one line, with its first action."""

from __future__ import annotations

from textual.widgets import Static

from headroom.doctor.findings import Action, Diagnosis, action_words
from headroom.tui.format import escape_markup as escape
from headroom.tui.widgets.cheap_update import set_markup

SEVERITY = {"error": ("$error", "✖"), "warning": ("$warning", "▲"), "info": ("$primary", "●")}


def action_text(action: Action) -> str:
    """ "raise gpu_memory_utilization to 0.95"; a byte count also in MiB/GiB, and an action
    without a value (advice the doctor cannot turn into a flag) says so."""
    value = action.value
    if action.direction == "unset":
        return action_words(action)
    if value is None:
        return f"{action.direction} {action.knob} (advice: no value to apply)"
    text = f" to {value}"
    if action.knob.endswith("_bytes") and isinstance(value, int) and value >= 2**20:
        text += f" ({value / 2**30:.1f} GiB)" if value >= 2**30 else f" ({value / 2**20:.1f} MiB)"
    return f"{action.direction} {action.knob}{text}"


class FindingLine(Static):
    """Top doctor finding and what to change; points at the Doctor screen (key 4)."""

    DEFAULT_CSS = """
    FindingLine { height: auto; max-height: 2; }
    """

    def show(self, diagnosis: Diagnosis | None, unavailable: str | None) -> None:
        if diagnosis is None:
            reason = f"unavailable: {unavailable}" if unavailable else "no diagnosis yet"
            set_markup(self, f"[b]Doctor[/b] [$text-muted]{escape(reason)}[/]")
            return
        findings = [f for f in diagnosis.findings if f.severity in {"error", "warning"}]
        if not findings:
            set_markup(self, "[b]Doctor[/b] [$success]✔ nothing wrong found[/]")
            return
        top = findings[0]
        colour, mark = SEVERITY.get(top.severity, SEVERITY["info"])
        fix = f" → {escape(action_text(top.actions[0]))}" if top.actions else ""
        more = f" (+{len(findings) - 1} more)" if len(findings) > 1 else ""
        set_markup(
            self,
            f"[b]Doctor[/b] [{colour}]{mark} {escape(top.title)}[/]{fix}{more}  [$text-muted]4: details[/]",
        )
