"""doctor/rules_hang.py: a multi-GPU start that hangs in communication set-up gets the field's
fixes in the order the input calls for, and nothing else does.

Logs: tests/fixtures/hangs (SOURCES.md there), cut after a line to stand for a start that
stopped there; topologies: tests/fixtures/topo (SOURCES.md there); titles: public issue
threads, named beside each."""

from __future__ import annotations

from pathlib import Path

import pytest

from headroom.doctor import DoctorInputs, diagnose, parse_gpu_spec
from headroom.probes.topology import parse_topo_text
from headroom.probes.vllm_log import digest_text
from headroom.vllm_cmd import parse_command

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
HANGS = FIXTURES / "hangs"


def _log(name: str, cut: str | None = None) -> str:
    lines = (HANGS / name).read_text().splitlines()
    if cut is not None:
        lines = lines[: next(i for i, line in enumerate(lines) if cut in line) + 1]
    return "\n".join(lines) + "\n"


def _diagnose(log: str, argv=None, gpus=None, topo=None, version=None):
    inputs = DoctorInputs(
        log=digest_text(log),
        command=parse_command(argv) if argv else None,
        gpu_spec=parse_gpu_spec(gpus) if gpus else None,
        topology=parse_topo_text((FIXTURES / "topo" / topo).read_text()) if topo else None,
        vllm_version=version,
    )
    return diagnose(inputs).findings


def _hang(findings):
    found = [f for f in findings if f.id == "comms-hang"]
    return found[0] if found else None


def _knobs(finding) -> list[str]:
    return [a.knob for a in finding.actions]


def test_a_start_stopped_in_nccl_set_up_disables_p2p_first():
    findings = _diagnose(_log("vllm-5484-nccl-init-hang-pp2.log"))
    top = findings[0]
    assert top.id == "comms-hang" and top.step is None and top.severity == "error"
    assert _knobs(top)[0] == "NCCL_P2P_DISABLE" and top.actions[0].value == "1"
    assert "disable_custom_all_reduce" in _knobs(top)  # two ranks: the custom kernel is in play
    assert any("2 ranks" in e for e in top.evidence)


def test_a_start_stopped_in_the_custom_all_reduce_p2p_test_disables_that_kernel_first():
    log = _log("blog-0.6-tp2-start-past-weights.log", "reading GPU P2P access cache")
    top = _diagnose(log, ["vllm", "serve", "m", "-tp", "2"])[0]
    assert top.id == "comms-hang"
    assert _knobs(top)[:2] == ["disable_custom_all_reduce", "NCCL_P2P_DISABLE"]


def test_consumer_pcie_gpus_said_to_hang_disable_p2p_first():
    # vllm #2466: 4x RTX 3090, TP 4 (the custom all-reduce is off by itself on >2 PCIe GPUs)
    argv = ["python", "-u", "-m", "vllm.entrypoints.api_server", "--model",
            "mistralai/Mistral-7B-Instruct-v0.2", "--tensor-parallel-size", "4"]  # fmt: skip
    title = "vLLM Distributed Inference stuck when using multi -GPU\n"
    top = _diagnose(title, argv, "4xRTX3090")[0]
    assert top.id == "comms-hang"
    assert _knobs(top)[0] == "NCCL_P2P_DISABLE"
    assert "disable_custom_all_reduce" not in _knobs(top)
    assert any("PCIe" in e for e in top.evidence)


def test_partial_nvlink_keeps_the_nvlink_pairs_first():
    """A100 PCIe boards with NV12 bridge pairs and NODE between them: TP 4 crosses both, so
    P2P only over NVLink keeps the fast pairs."""
    top = _diagnose(
        _log("vllm-5484-nccl-init-hang-pp2.log"),
        ["vllm", "serve", "m", "-tp", "4"],
        topo="a100-pcie-8gpu-nv12-bridge-pairs-empty-cpu-affinity-truncated.txt",
    )[0]
    assert top.id == "comms-hang"
    assert _knobs(top)[:2] == ["NCCL_P2P_LEVEL", "NCCL_P2P_DISABLE"]
    assert top.actions[0].value == "NVL"


def test_volta_at_tp_2_disables_the_custom_kernel_first():
    # 1Cat-vLLM #652: the title names the kernel; #431: the kernel does not converge on SM70
    title = (
        "[Bug]: Engine startup deadlocks on V100 (SM70, TP=2): custom_all_reduce kernel spins "
        "forever (workaround: --disable-custom-all-reduce)\n"
    )
    assert _knobs(_diagnose(title)[0])[0] == "disable_custom_all_reduce"
    said = "[Usage]: tensor-parallel-size=2，The program just kept hanging\n"  # vllm #13273
    assert _knobs(_diagnose(said, gpus="2xV100")[0])[0] == "disable_custom_all_reduce"
    assert _knobs(_diagnose(said, gpus="2xRTX4090")[0])[0] == "NCCL_P2P_DISABLE"


def test_the_custom_kernel_is_not_offered_where_it_is_already_off():
    said = "[Usage]: tensor-parallel-size=2，The program just kept hanging\n"
    argv = ["vllm", "serve", "m", "-tp", "2", "--disable-custom-all-reduce"]
    assert "disable_custom_all_reduce" not in _knobs(_hang(_diagnose(said, argv)))
    # before 0.3.0 vLLM had no custom all-reduce
    assert "disable_custom_all_reduce" not in _knobs(
        _hang(_diagnose(said, ["vllm", "serve", "m", "-tp", "2"], version="0.2.7"))
    )


@pytest.mark.parametrize(
    ("log", "argv"),
    [
        # one GPU by the command line: a hang there is not between GPUs
        ("[Bug]: NCCL hangs and causes timeout\n", ["vllm", "serve", "m"]),
        # the start went on to load weights (the blog's fix was a reboot)
        (_log("blog-0.6-tp2-start-past-weights.log"), ["vllm", "serve", "m", "-tp", "2"]),
        # the groups were ready: the hang is in model loading
        (_log("report-v1-tp2-rtx3090-start.log", "is assigned as DP rank"), None),
        # vllm #1320: a Ray start that stopped, no communication line, no hang word
        ("Started a local Ray instance.\n", None),
        # a hang said to be in the weights' loading, with TP 2
        ("tensor-parallel-size=2: stuck loading the weights forever\n", None),
        # a patch title, not a report
        ("[Bugfix] Fix hang when tensor_parallel_size > 1\n", None),
    ],
)
def test_no_hang_finding(log, argv):
    assert _hang(_diagnose(log, argv)) is None


def test_an_error_line_wins_over_the_set_up_lines():
    log = _log("vllm-5484-nccl-init-hang-pp2.log") + (
        "RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)\n"
    )
    findings = _diagnose(log)
    assert _hang(findings) is None and findings[0].id == "nccl-error"


def test_the_fixes_turn_no_memory_knob():
    top = _hang(_diagnose(_log("vllm-5484-nccl-init-hang-pp2.log")))
    assert top is not None
    assert all(a.direction == "set" for a in top.actions)
    assert set(_knobs(top)) <= {"NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL", "disable_custom_all_reduce"}


def test_a_collective_that_timed_out_at_start_up_gets_the_hang_fixes():
    """tests/fixtures/nccl (vllm #6042): the watchdog caught WorkNCCL(SeqNum=2, ...), one of
    the start's first collectives: on RTX 4090s P2P goes first."""
    log = (FIXTURES / "nccl" / "torch-watchdog-allreduce-timeout-vllm.log").read_text()
    top = _diagnose(log, ["vllm", "serve", "m", "-tp", "2"], "2xRTX4090")[0]
    assert top.id == "nccl-watchdog-timeout"
    assert _knobs(top)[:2] == ["NCCL_P2P_DISABLE", "disable_custom_all_reduce"]


def test_a_collective_that_timed_out_after_days_keeps_the_custom_kernel_first():
    # vllm #3071 (0.3.1, after 7 days of serving; fixed in 0.3.2)
    log = (
        "(RayWorkerVllm pid=1394) [E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=4967570, OpType=ALLREDUCE, NumelIn=73728, "
        "NumelOut=73728, Timeout(ms)=1800000) ran for 1800542 milliseconds before timing out.\n"
    )
    top = _diagnose(log, ["vllm", "serve", "m", "-tp", "4"])[0]
    assert top.id == "nccl-watchdog-timeout"
    assert _knobs(top) == ["disable_custom_all_reduce"]


def test_a_hang_across_nodes_names_the_network_interfaces_first():
    said = "[Bug]: 2 nodes serving hanging\n"  # vllm #8447 (TP 8 x PP 2 over two nodes)
    top = _hang(_diagnose(said))
    assert top is not None
    assert _knobs(top)[:2] == ["NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"]
    assert top.actions[0].value is None  # the NIC is the operator's to name
    # --nodes says so too, for a log that stopped in NCCL's bootstrap
    inputs = DoctorInputs(log=digest_text(_log("vllm-5484-nccl-init-hang-pp2.log")), nodes=2)
    top = _hang(diagnose(inputs).findings)
    assert top is not None and _knobs(top)[0] == "NCCL_SOCKET_IFNAME"


def test_a_start_stopped_in_cuda_graph_capture_across_gpus_runs_eager_first():
    log = _log("lmcache-503-v0-graph-capture-lines.log")
    top = _diagnose(log, ["vllm", "serve", "m", "-tp", "2"])[0]
    assert top.id == "comms-hang" and "CUDA graphs" in top.title
    assert _knobs(top)[:2] == ["enforce_eager", "disable_custom_all_reduce"]
    # on V100 at TP 2 the custom kernel is the known culprit (1Cat-vLLM #652, #431)
    top = _diagnose(log, ["vllm", "serve", "m", "-tp", "2"], "2xV100")[0]
    assert _knobs(top)[:2] == ["disable_custom_all_reduce", "enforce_eager"]
    # already eager: the communication fixes alone
    top = _diagnose(log, ["vllm", "serve", "m", "-tp", "2", "--enforce-eager"])[0]
    assert "enforce_eager" not in _knobs(top)


@pytest.mark.parametrize(
    ("warning", "why"),
    [
        # the catalog's examples (probes/vllm_catalog/runtime.py, custom_all_reduce.py's texts)
        ("Custom allreduce is disabled because it's not supported on more than two PCIe-only "
         "GPUs. To silence this warning, specify disable_custom_all_reduce=True explicitly.",
         "no full NVLink mesh"),
        ("Custom allreduce is disabled because your platform lacks GPU P2P capability or P2P test "
         "failed. To silence this warning, specify disable_custom_all_reduce=True explicitly.",
         "peer-to-peer test"),
    ],
)  # fmt: skip
def test_the_custom_all_reduce_off_note_says_vllms_own_reason(warning, why):
    line = "WARNING 05-25 00:00:25 custom_all_reduce.py:74] " + warning + "\n"
    found = {f.id: f for f in _diagnose(line)}
    assert why in found["custom-allreduce-off"].title
