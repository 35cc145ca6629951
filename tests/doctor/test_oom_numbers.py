"""PyTorch's OOM message in every wording it has printed (headroom/doctor/oom_numbers.py), read
from the threads' own pastes (tests/fixtures/incidents, train split; gpu-startup-logs), and
the memory it says other processes hold."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.fixtures import read_fixture

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.doctor.oom_numbers import parse_oom


def _incident_log(name: str) -> str:
    incident = json.loads(read_fixture("incidents", f"{name}.json"))
    assert incident["split"] == "train"
    return incident["log"]


# PyTorch <= 2.0: "(GPU 0; T total capacity; A already allocated; F free; R reserved ...)"
OLD = _incident_log("allenai--open-instruct--163")
# 2.1 ("capacty" sic), this process named among "Process P has" lines, container PIDs
V21_ONE = _incident_log("meetkai--functionary--88")
# 2.1 with "this process has" and two other processes
V21_THIS = _incident_log("vllm-project--vllm--2666--icefairy")
# 2.2+, no process named at all (ROCm: "HIP out of memory")
NO_PROCESS = _incident_log("kyuz0--amd-strix-halo-vllm-toolboxes--2")
# 2.2+, CUDA-graph private pools
POOLS = read_fixture("gpu-startup-logs", "h100-gpt-oss-120b-sampler-warmup-oom.log")


def test_old_wording_gives_total_free_and_reserved():
    n = parse_oom(OLD)
    assert n.tried == pytest.approx(446 / 1024, abs=1e-5)
    assert (n.total, n.torch_allocated, n.torch_reserved) == (47.53, 31.11, 31.19)
    assert n.free == pytest.approx(3 / 1024, abs=1e-5)
    # 47.53 - 0.003 - 31.19 reserved by this process's PyTorch, less 2 GiB of its own
    # non-PyTorch memory: the maintainer's "other processes taking up GPU memory"
    assert n.foreign == pytest.approx(14.34, abs=0.01)


def test_21_wording_with_one_process_is_this_process():
    n = parse_oom(V21_ONE)
    assert (n.total, n.listed, n.this_process) == (47.54, (47.32,), None)
    assert n.torch_reserved == pytest.approx(46.89 + 9.18 / 1024, abs=1e-5)
    assert n.foreign == 0.0


def test_21_wording_with_this_process_lists_the_others():
    n = parse_oom(V21_THIS)
    assert n.this_process == 22.30 and n.listed == pytest.approx((176 / 1024, 250 / 1024), abs=1e-5)
    assert n.foreign == pytest.approx((176 + 250) / 1024, abs=1e-5)


def test_no_process_named_counts_pytorchs_reserved_memory():
    n = parse_oom(NO_PROCESS)
    assert (n.total, n.torch_allocated) == (61.35, 57.83)
    assert n.foreign == 0.0  # 61.35 - 0.64 - 60.36 is this process's own context


def test_private_pools_do_not_hide_the_unallocated_part():
    n = parse_oom(POOLS)
    assert n.torch_reserved == pytest.approx(68.83 + 331.08 / 1024, abs=1e-5)
    assert n.foreign == 0.0


def test_memory_no_listed_process_holds_is_anothers():
    """2.1 lists the processes its container sees; 30 GiB that none of them holds belong to
    a job the container cannot see."""
    hidden = V21_ONE.replace("Process 3034125 has 47.32 GiB", "Process 3034125 has 17.32 GiB")
    assert parse_oom(hidden).foreign == pytest.approx(47.54 - 215.88 / 1024 - 17.32 - 0.5, abs=1e-4)


def test_a_cut_message_says_what_it_can():
    cut = _incident_log("vllm-project--vllm--12030")  # "... this process has 11." (title cut)
    n = parse_oom(cut)
    assert (n.total, n.this_process, n.foreign) == (11.53, None, None)
    assert parse_oom("torch.OutOfMemoryError: CUDA out of memory").foreign is None


def test_the_old_wording_now_names_the_other_processes():
    """Before: a bare OOM of unknown phase (lower utilization by 0.05). Now: the 14 GiB no
    PyTorch of this process holds, and a utilization that leaves them room."""
    d = diagnose(DoctorInputs(log=OLD, gpu_spec=parse_gpu_spec("1xA6000")))
    top = d.findings[0]
    assert top.id == "cuda-oom-foreign-process"
    assert any("14.34 GiB" in e for e in top.evidence)
    act = top.actions[0]
    assert (act.knob, act.direction) == ("gpu_memory_utilization", "lower")
    assert act.value <= (47.53 - 14.34) / 47.53


_SIZES = st.tuples(st.floats(0, 4096, allow_nan=False), st.sampled_from(["MiB", "GiB"]))


@settings(max_examples=150, deadline=None)
@given(tried=_SIZES, total=_SIZES, free=_SIZES, procs=st.lists(_SIZES, max_size=4))
def test_any_numbers_in_the_22_wording_come_back(tried, total, free, procs):
    def text(size):
        return f"{size[0]:.2f} {size[1]}"

    def gib(size):
        return round(float(f"{size[0]:.2f}") * (1 / 1024 if size[1] == "MiB" else 1.0), 6)

    others = "".join(f"Process {i} has {text(p)} memory in use. " for i, p in enumerate(procs))
    line = (
        f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {text(tried)}. GPU 0 "
        f"has a total capacity of {text(total)} of which {text(free)} is free. {others}"
        f"Including non-PyTorch memory, this process has {text(total)} memory in use."
    )
    n = parse_oom(line)
    assert (n.tried, n.total, n.free) == (gib(tried), gib(total), gib(free))
    assert n.listed == tuple(gib(p) for p in procs)
    assert n.foreign is not None and n.foreign >= 0.0


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_any_text_parses_without_raising(text):
    n = parse_oom("CUDA out of memory. " + text)
    assert n.foreign is None or n.foreign >= 0.0


def test_the_finding_says_this_processs_memory_against_the_budget():
    from headroom.doctor.oom_numbers import own_memory

    assert own_memory(parse_oom(V21_THIS), 0.9) == [
        "this process holds 22.30 GiB, above vLLM's budget of 21.28 GiB (0.9 x 23.64 GiB)"
    ]
    assert own_memory(parse_oom(V21_ONE), 0.95)[0].startswith("PyTorch in this process holds")
    assert "within" in own_memory(parse_oom(NO_PROCESS), 1.0)[0]
    assert own_memory(parse_oom("torch.OutOfMemoryError: CUDA out of memory"), 0.9) == []
    top = diagnose(DoctorInputs(log=V21_THIS)).findings[0]
    assert any("vLLM's budget" in e for e in top.evidence)
