"""The restart dialog shows exactly what the supervisor then launches (issue 11).

For every action the doctor offers on the recorded start-up logs (tests/fixtures), plus
environment-variable changes, and on the incident corpus, the dialog's diff (the supervisor's preview, as the dialog
renders it) is compared with the diff between the command line and environment before the
restart and those the supervisor really hands to the process launcher. The launcher is
replaced by a recorder that refuses to start anything, so no server runs.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from headroom.doctor import Action, DoctorInputs, diagnose, parse_gpu_spec
from headroom.probes.vllm_log import digest_text
from headroom.supervisor import supervisor as supervisor_module
from headroom.supervisor.process import LaunchError
from headroom.supervisor.settings import SupervisorSettings
from headroom.supervisor.states import RELEVANT_ENV
from headroom.supervisor.supervisor import Supervisor
from headroom.tui.screens.restart import diff_markup, restart_plan
from headroom.vllm_cmd import VllmCommand, parse_command, redact_env

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
BASE_ENV = {"VLLM_LOGGING_LEVEL": "DEBUG", "NCCL_DEBUG": "WARN"}


def _command_from_log(facts) -> VllmCommand | None:
    """The command line a start-up log was printed for: its model and scalar non-default
    args (what the doctor sees when a user pastes the log with `vllm serve ...`)."""
    model = facts.model or facts.non_default_args.get("model")
    if not isinstance(model, str):
        return None
    argv = ["vllm", "serve", model]
    for name, value in facts.non_default_args.items():
        if name in {"model", "model_tag", "api_key"} or isinstance(value, dict | list):
            continue
        flag = "--" + name.replace("_", "-")
        if value is True:
            argv.append(flag)
        elif isinstance(value, int | float | str) and value is not False:
            argv += [flag, str(value)]
    try:
        return parse_command(argv)
    except ValueError:
        return None


def _incidents():
    """(name, command, log digest, GPU spec) of each incident with a command line."""
    for path in sorted((FIXTURES / "incidents").glob("*.json")):
        incident = json.loads(path.read_text(encoding="utf-8"))
        if not incident.get("command"):
            continue
        try:
            command = parse_command(shlex.split(incident["command"]))
            gpus = parse_gpu_spec(incident["gpus"]) if incident.get("gpus") else None
        except ValueError:
            continue
        yield path.stem, command, digest_text(incident.get("log") or ""), gpus


def _logs():
    for path in sorted(FIXTURES.glob("*/*.log")):
        digest = digest_text(path.read_text(encoding="utf-8", errors="replace"))
        command = _command_from_log(digest.facts())
        if command is not None:
            yield path.stem, command, digest, None


def doctor_cases() -> list:
    cases = []
    for name, command, digest, gpus in [*_logs(), *_incidents()]:
        diagnosis = diagnose(DoctorInputs(command=command, log=digest, gpu_spec=gpus))
        seen = set()
        for finding in diagnosis.findings:
            for action in finding.actions:
                key = (action.knob, repr(action.value), action.also)
                if not action.applicable or key in seen:
                    continue
                seen.add(key)
                case_id = f"{name[:40]}-{action.knob}={action.value}"
                cases.append(pytest.param(command, action, id=case_id))
    return cases


def env_cases() -> list:
    command = parse_command(["vllm", "serve", "Qwen/Qwen2.5-7B-Instruct", "--port", "8000"])
    actions = [
        Action("NCCL_P2P_DISABLE", "set", "1", "PCIe peer-to-peer is broken here"),
        Action("VLLM_LOGGING_LEVEL", "set", "INFO", "quieter log"),
        Action("max_num_seqs", "lower", 32, "fewer sequences", also=(("NCCL_DEBUG", "INFO"),)),
        Action(
            "CUDA_VISIBLE_DEVICES", "set", "0,1", "two GPUs", also=(("tensor_parallel_size", 2),)
        ),
    ]
    return [pytest.param(command, a, id=f"env-{a.knob}") for a in actions]


def unset_cases() -> list:
    """Removals (a doctor "unset"): the flag in each spelling vLLM's parser takes (bare,
    `=true`, the `--no-x` form of a BooleanOptionalAction, a `--disable-x`), and one of
    Headroom's environment overrides."""
    model = ["vllm", "serve", "Qwen/Qwen2.5-7B-Instruct", "--port", "8000"]
    lines = {
        "enforce_eager": [*model, "--enforce-eager", "--max-model-len", "4096"],
        "enforce_eager_eq": [*model, "--enforce-eager=true"],
        "disable_custom_all_reduce": [
            *model,
            "--tensor-parallel-size",
            "2",
            "--disable-custom-all-reduce",
        ],
        "enable_chunked_prefill": [*model, "--no-enable-chunked-prefill"],
    }
    cases = []
    for case_id, argv in lines.items():
        knob = case_id.removesuffix("_eq")
        action = Action(knob, "unset", None, "the flag costs speed here")
        cases.append(pytest.param(parse_command(argv), action, id=f"unset-{case_id}"))
    env = Action("VLLM_LOGGING_LEVEL", "unset", None, "back to vLLM's default level")
    cases.append(pytest.param(parse_command(model), env, id="unset-env-override"))
    return cases


DOCTOR_CASES = doctor_cases()


def test_the_fixtures_give_the_doctor_plenty_to_offer():
    knobs = {case.values[1].knob for case in DOCTOR_CASES}
    assert len(DOCTOR_CASES) >= 15, len(DOCTOR_CASES)
    assert {"max_model_len", "gpu_memory_utilization", "tensor_parallel_size"} <= knobs, knobs


def _hashable(value: object) -> object:
    """A list value (nargs="+" flags: --served-model-name A B) as a tuple, so rows can be a set."""
    return tuple(value) if isinstance(value, list) else value


def _engine_rows(before: VllmCommand, after: VllmCommand) -> set[tuple[str, object, object]]:
    old, new = before.engine_args(), after.engine_args()
    return {
        (k, _hashable(old.get(k)), _hashable(new.get(k)))
        for k in {*old, *new}
        if old.get(k) != new.get(k)
    }


def _env_rows(before: dict[str, str], after: dict[str, str]) -> set[tuple[str, object, object]]:
    old = redact_env({k: v for k, v in before.items() if RELEVANT_ENV.match(k)})
    new = redact_env({k: v for k, v in after.items() if RELEVANT_ENV.match(k)})
    return {(f"env {k}", old.get(k), new.get(k)) for k in {*old, *new} if old.get(k) != new.get(k)}


@pytest.mark.parametrize(("command", "action"), DOCTOR_CASES + env_cases() + unset_cases())
async def test_the_dialog_shows_what_the_supervisor_launches(
    command, action, tmp_path, monkeypatch
):
    launched: list[tuple[list[str], dict[str, str]]] = []

    def record_instead_of_launching(argv, env, log_path, cwd=None):
        launched.append((list(argv), dict(env)))
        raise LaunchError("test: recorded, not launched")

    monkeypatch.setattr(supervisor_module.ManagedProcess, "spawn", record_instead_of_launching)
    settings = SupervisorSettings(data_dir=tmp_path, preflight=False)
    sup = Supervisor(command, settings, env=BASE_ENV, nvml_probe=False)
    before_argv, before_env = sup.argv(), sup.child_env()

    plan = restart_plan(action, sup.preview)  # what the dialog is built from
    if plan.error:  # the dialog refuses: so must the supervisor, launching nothing
        outcome = await sup.restart(plan.changes)
        assert not outcome.ok and not launched, (plan.error, outcome)
        return
    shown = diff_markup(plan.diff)
    outcome = await sup.restart(plan.changes, expected=plan.preview)
    assert not outcome.ok and "recorded, not launched" in (outcome.reason or "")
    assert len(launched) == 1, launched
    argv, env = launched[0]

    assert argv[:2] == ["vllm", "serve"]
    launched_rows = _engine_rows(parse_command(before_argv), parse_command(argv))
    launched_rows |= _env_rows(before_env, env)
    dialog_rows = {(c.name, _hashable(c.old), _hashable(c.new)) for c in plan.diff}
    assert dialog_rows == launched_rows
    assert dialog_rows, "an action that changes nothing"
    for name, _, _ in dialog_rows:
        assert name in shown  # and the dialog draws every row
    assert list(plan.new_argv or []) == argv  # "restart it yourself with" is the same line


@pytest.mark.parametrize(("command", "action"), unset_cases())
async def test_an_unset_removes_the_knob_from_what_is_launched(
    command, action, tmp_path, monkeypatch
):
    """The launched line has no token of the flag left, or the child no such variable."""
    launched: list[tuple[list[str], dict[str, str]]] = []

    def record_instead_of_launching(argv, env, log_path, cwd=None):
        launched.append((list(argv), dict(env)))
        raise LaunchError("test: recorded, not launched")

    monkeypatch.setattr(supervisor_module.ManagedProcess, "spawn", record_instead_of_launching)
    monkeypatch.delenv(action.knob, raising=False)
    settings = SupervisorSettings(data_dir=tmp_path, preflight=False)
    sup = Supervisor(command, settings, env=BASE_ENV, nvml_probe=False)
    plan = restart_plan(action, sup.preview)
    assert plan.error is None and "unset" in plan.title
    await sup.restart(plan.changes, expected=plan.preview)
    argv, env = launched[0]
    if action.knob.isupper():
        assert action.knob in sup.child_env(BASE_ENV) and action.knob not in env
        assert [(c.name, c.new) for c in plan.diff] == [(f"env {action.knob}", None)]
        return
    assert not parse_command(argv).has(action.knob)
    spelled = action.knob.replace("_", "-")
    assert not [t for t in argv if spelled in t], argv
    assert [(c.name, c.new) for c in plan.diff] == [(action.knob, None)]


async def test_an_unset_of_an_inherited_variable_is_refused(tmp_path, monkeypatch):
    """VLLM_USE_V1=0 exported before Headroom started is not Headroom's to take away: the
    dialog says so and the supervisor launches nothing."""
    launched: list[list[str]] = []

    def record_instead_of_launching(argv, env, log_path, cwd=None):
        launched.append(list(argv))
        raise LaunchError("test: recorded, not launched")

    monkeypatch.setattr(supervisor_module.ManagedProcess, "spawn", record_instead_of_launching)
    monkeypatch.setenv("VLLM_USE_V1", "0")
    command = parse_command(["vllm", "serve", "Qwen/Qwen2.5-7B-Instruct"])
    sup = Supervisor(
        command,
        SupervisorSettings(data_dir=tmp_path, preflight=False),
        env=BASE_ENV,
        nvml_probe=False,
    )
    plan = restart_plan(Action("VLLM_USE_V1", "unset", None, "V1 back"), sup.preview)
    assert plan.error is not None and "unset VLLM_USE_V1" in plan.error
    outcome = await sup.restart(plan.changes)
    assert not outcome.ok and not launched
