"""Restarting a server Headroom did not start (`headroom attach URL --launched-with ...`).

Headroom can only restart what it knows how to start again, so the operator says how the
server was launched: its command line (`vllm serve MODEL --flags...`, `python -m
vllm.entrypoints.openai.api_server --model M ...`, `python -m headroom.simulator serve ...`)
and, when that line alone is not enough (a container), a launcher name or template. The
running process is found by the port it listens on (supervisor.adopt.adopt_unmanaged), or
by its state file when an earlier Headroom did start it (adopt.find_adoptable). The first
restart then stops its process group, waits for the GPU memory, and starts the new command
under Headroom, journaled like any run; from then on the server is an ordinary managed one.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import replace
from urllib.parse import urlsplit

from headroom.supervisor.adopt import AdoptError, adopt, adopt_unmanaged, find_adoptable
from headroom.supervisor.journal import Journal, RunRecord
from headroom.supervisor.launcher import LauncherError, describe, flag_tokens, resolve_template
from headroom.supervisor.settings import SupervisorSettings
from headroom.supervisor.states import RestartOutcome
from headroom.supervisor.supervisor import EventListener, Supervisor
from headroom.vllm_cmd import (
    REMOVE,
    CommandLineError,
    VllmCommand,
    parse_command,
    redact_argv,
)
from headroom.vllm_cmd.config_file import with_config_file_if_readable

NOT_TOLD = (
    "Headroom did not start this server and was not told how it was launched, so it cannot "
    "restart it: restart it yourself with the new flags, or attach with "
    '--launched-with "vllm serve MODEL --flags..." (and --launcher for a container)'
)


class AttachRestartError(ValueError):
    """The launch line or launcher cannot describe the server at the URL, with the reason."""


def template_for(command: VllmCommand) -> str:
    """The launcher template that starts `command` the way it was started: its own program
    and module words, then the model and the flags."""
    if not command.launcher:
        raise AttachRestartError(
            "the launch line has no program (flags only): give --launcher NAME or a template "
            "such as 'docker run ... vllm/vllm-openai {model} {flags}'"
        )
    if any("{" in part or "}" in part for part in command.launcher):
        raise AttachRestartError("the launch line's program contains braces; use --launcher")
    model = "{model}" if command.model_is_positional else "--model {model}"
    return f"{shlex.join(command.launcher)} {model} {{flags}}"


def parse_launch(launched_with: str | Sequence[str], launcher: str | None = None):
    """(command, launcher template) from the launch line and an optional --launcher."""
    try:
        command = parse_command(launched_with)
    except CommandLineError as exc:
        raise AttachRestartError(f"--launched-with: {exc}") from exc
    command = with_config_file_if_readable(command)
    if command.model is None:
        raise AttachRestartError("--launched-with: the launch line names no model")
    try:
        template = resolve_template(launcher) if launcher else template_for(command)
    except LauncherError as exc:
        raise AttachRestartError(str(exc)) from exc
    return command, template


def url_port(url: str) -> int | None:
    parts = urlsplit(url if "//" in url else f"http://{url}")
    try:
        return parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None


def _check_port(command: VllmCommand, url: str) -> None:
    """The launch line must serve the URL's port, or the wrong process would be stopped."""
    port = url_port(url)
    serves = command.get_int("port", 8000)
    if port is not None and serves != port:
        said = "says --port" if command.has("port") else "has no --port (vLLM's default is"
        close = "" if command.has("port") else ")"
        raise AttachRestartError(
            f"the launch line {said} {serves}{close} but the server is at port {port}: "
            "give the launch line exactly as the server was started"
        )


def attach_supervisor(
    url: str,
    launched_with: str | Sequence[str],
    *,
    launcher: str | None = None,
    settings: SupervisorSettings | None = None,
    journal: Journal | None = None,
    on_event: EventListener | None = None,
    nvml_probe: object | None = None,
) -> Supervisor:
    """A Supervisor that can restart the server at `url`; call `await sup.start()` to
    begin watching it (it is running already). Raises AttachRestartError with the reason."""
    command, template = parse_launch(launched_with, launcher)
    _check_port(command, url)
    port = url_port(url)
    settings = replace(settings or SupervisorSettings(), launcher=template)
    record = find_adoptable(port, settings.state_dir)
    try:
        if record is not None:  # an earlier Headroom started it: its own log and run
            sup = adopt(record, settings, journal=journal, on_event=on_event, nvml_probe=nvml_probe)
            sup.command, sup.template = command, template
            sup.launcher_name = describe(template)
            return sup
        sup = adopt_unmanaged(
            command, settings, journal=journal, on_event=on_event, nvml_probe=nvml_probe
        )
    except AdoptError as exc:
        raise AttachRestartError(str(exc)) from exc
    _journal_adopted(sup, url)
    return sup


def _journal_adopted(sup: Supervisor, url: str) -> None:
    """A run record for the server as found, so the restart's record has a parent and
    `headroom runs` lists the configuration Headroom took over."""
    flags = redact_argv(flag_tokens(sup.command))
    try:  # attached before to the same server: that record, not a duplicate per attach
        same = [
            r
            for r in sup.journal.records()
            if r.trigger == "attached" and r.port == sup.port and r.outcome == "detached"
        ]
    except OSError:
        same = []
    if same and same[-1].flags == flags and f"(pid {sup.pid})" in (same[-1].notes or ""):
        sup.run.run_id = same[-1].run_id
        return
    record = RunRecord(
        model=sup.command.model,
        command=redact_argv(sup.argv()),
        flags=flags,
        launcher=sup.launcher_name,
        port=sup.port,
        outcome="detached",
        trigger="attached",
        notes=f"started outside Headroom (pid {sup.pid}); attached at {url}",
    )
    try:
        sup.journal.append(record)
    except OSError:
        return  # a full disk must not stop the attach
    sup.run.run_id = record.run_id


async def restart_attached(sup: Supervisor | None, changes: Mapping[str, object]) -> RestartOutcome:
    """Restart with `changes`; refuses (RestartOutcome ok=False, reason NOT_TOLD) when
    Headroom was not told how the server was launched (sup is None)."""
    if sup is None:
        return RestartOutcome(ok=False, reason=NOT_TOLD)
    return await sup.restart(changes, reason="restart (attached)")


def parse_change(text: str) -> tuple[str, object]:
    """'max_num_seqs=8' -> ('max_num_seqs', 8); values are read as int, float, true/false
    or text; 'enforce_eager=remove' drops a flag."""
    name, sep, raw = text.partition("=")
    name = name.strip().removeprefix("--").replace("-", "_")
    if not sep or not name:
        raise AttachRestartError(f"--restart-with {text!r}: expected KNOB=VALUE")
    if name.upper() == name and name[:1].isalpha():
        return name, raw  # an environment variable keeps its text
    value: object = raw
    lowered = raw.strip().lower()
    if lowered == "remove":
        value = REMOVE
    elif lowered in ("true", "false"):
        value = lowered == "true"
    else:
        for kind in (int, float):
            try:
                value = kind(raw)
                break
            except ValueError:
                continue
    return name, value
