"""The `tp-across-nodes` scenario end to end: the simulator starts Qwen2.5-72B with TP 8 over
two nodes of four GPUs (it starts, but every all-reduce crosses the network); the doctor, from
that log alone or with the GPUs described, names step 3 and proposes the scenario's own fix
(TP 4 x PP 2); the fixed command starts and the doctor then finds nothing at step 3."""

from __future__ import annotations

import pytest

from headroom.doctor import DoctorInputs, diagnose, parse_gpu_spec, plan_to_changes
from headroom.probes.vllm_log import digest_text
from headroom.simulator.scenario import load_scenario
from headroom.vllm_cmd import apply_changes, diff_flags, parse_command, render

SCENARIO = load_scenario("tp-across-nodes")


def _fix_as_changes() -> dict[str, int]:
    flags = list(SCENARIO.fix)
    return {
        flags[i].lstrip("-").replace("-", "_"): int(flags[i + 1]) for i in range(0, len(flags), 2)
    }


@pytest.mark.parametrize(
    ("gpus", "nodes", "with_command"),
    [(None, 1, False), ("4xA100:40", 2, True), (None, 1, True)],
    ids=["log-alone", "gpus-and-nodes", "command-without-gpus"],
)
def test_tp_across_nodes_is_found_and_the_fix_starts(sim, port, gpus, nodes, with_command):
    base = ["vllm", *SCENARIO.serve_argv(port=port), "--host", "127.0.0.1"]
    run = sim.start(base, scenario=SCENARIO.name)
    assert sim.wait_ready(run), run.text()[-3000:]
    sim.stop(run)
    log_text = run.text()

    command = parse_command(base)
    inputs = DoctorInputs(
        command=command if with_command else None,
        log=digest_text(log_text),
        gpu_spec=parse_gpu_spec(gpus) if gpus else None,
        nodes=nodes,
    )
    diagnosis = diagnose(inputs)
    top = diagnosis.findings[0]
    assert top.id == "tp-across-nodes", [(f.id, f.title) for f in diagnosis.findings]
    assert top.step == 3 and diagnosis.steps[2].status == "warn"
    changes = plan_to_changes(top.actions[0])
    assert changes == _fix_as_changes()  # the scenario's own fix: TP 4 x PP 2

    fixed = apply_changes(command, changes)
    assert {c.name for c in diff_flags(command, fixed)} == set(changes)
    fixed_run = sim.start(render(fixed), scenario=SCENARIO.name)
    assert sim.wait_ready(fixed_run), fixed_run.text()[-3000:]
    sim.stop(fixed_run)
    after = diagnose(
        DoctorInputs(
            command=fixed if with_command else None,
            log=digest_text(fixed_run.text()),
            gpu_spec=inputs.gpu_spec,
            nodes=nodes,
        )
    )
    assert "tp-across-nodes" not in {f.id for f in after.findings}
    assert after.steps[2].status == "ok", after.steps[2]
