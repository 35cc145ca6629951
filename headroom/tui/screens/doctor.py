"""Screen 4, the doctor: the five-step table, each finding's evidence, and its actions.
Choosing an action (enter) opens the restart dialog with the flag diff."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, OptionList, Static
from textual.widgets.option_list import Option

from headroom.doctor.findings import Action, Finding, StepStatus
from headroom.tui import format as fmt
from headroom.tui.format import escape_markup as escape
from headroom.tui.screens.base import HeadroomScreen
from headroom.tui.store import Store
from headroom.tui.widgets.finding_line import SEVERITY, action_text
from headroom.tui.widgets.keyed_table import Cell
from headroom.tui.widgets.themed import themed

STATUS_WORD = {
    "ok": ("success", "ok"),
    "warn": ("warning", "warn"),
    "fail": ("error", "fail"),
    "unknown": ("text-muted", "?"),
}


class DoctorScreen(HeadroomScreen):
    """Five steps with ok / warn / fail / unknown, then findings: pick one with the arrows to
    read its evidence; enter on an action proposes the restart."""

    MODE = "doctor"

    def compose_body(self) -> ComposeResult:
        table: DataTable[Cell] = DataTable(id="doctor-steps", cursor_type="none", show_cursor=False)
        # Status before the (long) step name, so it is visible at 80 columns.
        table.add_columns("#", "status", "step", "why")
        yield table
        yield OptionList(id="doctor-findings", classes="panel")
        with VerticalScroll(id="doctor-evidence", classes="panel"):
            yield Static(id="doctor-evidence-text")

    def on_mount(self) -> None:
        self.query_one("#doctor-findings").border_title = "Findings  (enter on an action: restart)"
        self.query_one("#doctor-evidence").border_title = "Evidence"
        self._option_targets: list[tuple[Finding, Action | None]] = []  # (finding, action)
        self._signature: object = None
        super().on_mount()
        self.query_one("#doctor-findings").focus()

    def show_body(self, store: Store, what: str) -> None:
        if what not in {"all", "doctor"}:
            return
        diagnosis = store.diagnosis
        if diagnosis is None:
            reason = store.unavailable.get("doctor") or "no diagnosis yet (waiting for data)"
            self._fill_steps([])
            self._fill_findings([], reason)
            return
        self._fill_steps(list(diagnosis.steps))
        self._fill_findings(list(diagnosis.findings), None)

    def _fill_steps(self, steps: list[StepStatus]) -> None:
        table = self.query_one("#doctor-steps", DataTable)
        with self.app.batch_update():
            for step in steps:
                variable, word = STATUS_WORD.get(step.status, ("text-muted", step.status))
                cells = (str(step.step), themed(self.app, word, variable), step.name, step.why)
                key = str(step.step)
                if key in table.rows:
                    for column, value in zip(table.columns, cells, strict=False):
                        table.update_cell(key, column, value)
                else:
                    table.add_row(*cells, key=key)

    def _fill_findings(self, findings: list[Finding], reason: str | None) -> None:
        options = self.query_one("#doctor-findings", OptionList)
        targets: list[tuple[Finding, Action | None]] = []
        prompts: list[Option] = []
        for finding in findings:
            colour, mark = SEVERITY.get(finding.severity, SEVERITY["info"])
            prompts.append(Option(f"[{colour}]{mark}[/] [b]{escape(finding.title)}[/b]"))
            targets.append((finding, None))
            for action in finding.actions:
                prompts.append(Option(f"    → {escape(action_text(action))}"))
                targets.append((finding, action))
        signature = (targets, reason)
        if signature == self._signature:
            return  # unchanged: keep the highlight where the user left it
        highlighted = options.highlighted
        options.clear_options()
        if not prompts:
            text = reason or "[$success]✔ nothing wrong found[/]"
            options.add_option(Option(escape(text) if reason else text, disabled=True))
        else:
            options.add_options(prompts)
        self._option_targets = targets
        self._signature = signature
        if prompts:
            if highlighted is None:
                # Start on the top finding's first action: enter proposes the fix at once.
                highlighted = next((i for i, (_, a) in enumerate(targets) if a is not None), 0)
            options.highlighted = min(highlighted, len(prompts) - 1)
        self._show_evidence()

    def _target(self) -> tuple[Finding, Action | None] | None:
        index = self.query_one("#doctor-findings", OptionList).highlighted
        if index is None or index >= len(self._option_targets):
            return None
        return self._option_targets[index]

    def _show_evidence(self) -> None:
        text = self.query_one("#doctor-evidence-text", Static)
        target = self._target()
        if target is None:
            text.update("")
            return
        finding, action = target
        lines = [f"[b]{escape(finding.title)}[/b]"]
        # Evidence lines quoted from the log read better without vLLM's "(EngineCore pid=1)
        # ERROR 11-29 12:35:23 [core.py:1510]" prefix; the Logs screen has them whole.
        lines += [f"  • {escape(fmt.short_message(item, 2000) or '')}" for item in finding.evidence]
        chosen = [action] if action is not None else list(finding.actions)
        for item in chosen:
            lines.append(f"[$accent]→ {escape(action_text(item))}[/]")
            if item.why:
                lines.append(f"    why: {escape(item.why)}")
            if item.cost:
                lines.append(f"    cost: {escape(item.cost)}")
        if not finding.actions:
            lines.append("[$text-muted]no knob to change for this one[/]")
        text.update("\n".join(lines))

    @on(OptionList.OptionHighlighted, "#doctor-findings")
    def _on_highlight(self) -> None:
        self._show_evidence()

    @on(OptionList.OptionSelected, "#doctor-findings")
    def _on_select(self) -> None:
        target = self._target()
        if target is None:
            return
        finding, action = target
        if action is None and len(finding.actions) == 1:
            action = finding.actions[0]
        if action is None:
            self.notify("pick one of the actions under the finding", severity="information")
            return
        self.headroom.propose_action(action)
