"""The simulator's /dcgm-metrics page speaks dcgm-exporter's format: the same HELP/TYPE
lines, label names in the same order, `%f` doubles, as the real captures in
tests/fixtures/dcgm/; and its values are the simulated GPUs' state."""

from __future__ import annotations

import re

import pytest
from support.fixtures import read_fixture

from headroom.simulator.dcgm import DcgmRenderer, parse_faults
from headroom.simulator.hardware import Machine, gpu_model
from headroom.simulator.state import build_state

REAL = read_fixture("dcgm", "k8s-gpu-operator-rtx4000ada-1gpu-full.prom")


def _families(text: str) -> dict[str, tuple[str, str]]:
    helps = dict(re.findall(r"^# HELP (\S+) (.*)$", text, re.M))
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
    return {name: (helps[name], types[name]) for name in helps}


def _label_names(line: str) -> list[str]:
    return re.findall(r'([A-Za-z_]+)="', line[line.index("{") :])


def _state(count: int = 2) -> dict:
    machine = Machine(gpu=gpu_model("H100-SXM"), gpus_per_node=count)
    return build_state(machine, 1234, {0: 40 * 1024**3}, 0.5, "serving", "")


def test_help_type_and_label_order_match_the_real_exporter() -> None:
    ours = DcgmRenderer("node-1", faults=parse_faults("1:xid=79")).render(_state())
    real = _families(REAL)
    for name, (help_text, kind) in _families(ours).items():
        if name in real:
            assert (help_text, kind) == real[name], name
    real_order = _label_names(
        next(x for x in REAL.splitlines() if x.startswith("DCGM_FI_DEV_GPU_UTIL"))
    )
    our_line = next(x for x in ours.splitlines() if x.startswith("DCGM_FI_DEV_GPU_UTIL"))
    ours_order = _label_names(our_line)
    # the real one has pod labels after the driver version; ours has none (no Kubernetes)
    assert ours_order == [n for n in real_order if n in ours_order]
    assert ours_order[:6] == ["gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname"]
    assert re.search(r"DCGM_FI_DEV_POWER_USAGE\{[^}]*\} \d+\.\d{6}$", ours, re.M)
    xid = [x for x in ours.splitlines() if x.startswith("DCGM_FI_DEV_XID_ERRORS")]
    assert xid[0].endswith('err_code="0",err_msg="No Error"} 0')
    assert xid[1].endswith('err_code="79",err_msg="GPU has fallen off the bus"} 79')


def test_values_are_the_state_and_violations_grow_for_faulted_gpus() -> None:
    clock = iter([0.0, 2.5]).__next__
    renderer = DcgmRenderer("n", "hostname", parse_faults("0:thermal,1:power"), clock=clock)
    state = _state()
    text = renderer.render(state)
    gpu0 = state["gpus"][0]
    used = (gpu0["memory_used"] - gpu0["memory_reserved"]) // 1024**2
    assert re.search(
        rf'DCGM_FI_DEV_FB_USED\{{gpu="0"[^}}]*hostname="n"[^}}]*\}} {used}$', text, re.M
    )
    assert 'DCGM_FI_DEV_THERMAL_VIOLATION{gpu="0"' in text
    thermal = re.search(r'DCGM_FI_DEV_THERMAL_VIOLATION\{gpu="0"[^}]*\} (\d+)', text).group(1)
    power1 = re.search(r'DCGM_FI_DEV_POWER_VIOLATION\{gpu="1"[^}]*\} (\d+)', text).group(1)
    power0 = re.search(r'DCGM_FI_DEV_POWER_VIOLATION\{gpu="0"[^}]*\} (\d+)', text).group(1)
    assert (thermal, power1, power0) == ("2500000", "2500000", "0")


@pytest.mark.parametrize("bad", ["x:xid=79", "1:xid=12345", "1:melting", "1"])
def test_bad_fault_specs_are_refused_with_the_item_named(bad: str) -> None:
    with pytest.raises(ValueError, match=re.escape(bad)):
        parse_faults(bad)
