"""The NVML probe asks fixed facts once per GPU handle and live readings every sample.

`FakeNvml` counts every call by name, so the tests can tell which answers came from NVML and
which from the probe's cache; each cached value is also compared with what a fresh probe
(which has nothing cached) reads from the same machine at the same moment.
"""

from __future__ import annotations

import dataclasses

import pynvml
from nvml_standin import FakeNvml
from nvml_standin.machines import MIB, a100_mig, falling_off_bus, h100_sxm_8, rtx4090_2

from headroom.probes.nvml import NvmlProbe

READS = 3

# Facts that do not move while a GPU stays on the bus: asked on the first sample only.
STATIC = (
    "nvmlDeviceGetName",
    "nvmlDeviceGetUUID",
    "nvmlDeviceGetPciInfo",
    "nvmlDeviceGetMaxClockInfo",
    "nvmlDeviceGetMaxPcieLinkGeneration",
    "nvmlDeviceGetMaxPcieLinkWidth",
    "nvmlDeviceGetEnforcedPowerLimit",
    "nvmlDeviceGetMigMode",
    "nvmlDeviceGetEccMode",
    "nvmlDeviceGetNumaNodeId",
    "nvmlDeviceGetNvLinkRemotePciInfo",
    "nvmlSystemGetDriverVersion",
    "nvmlSystemGetCudaDriverVersion_v2",
)
# Live readings: asked on every sample, the same number of times each sample.
DYNAMIC = (
    "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetUtilizationRates",
    "nvmlDeviceGetTemperature",
    "nvmlDeviceGetPowerUsage",
    "nvmlDeviceGetClockInfo",
    "nvmlDeviceGetCurrentClocksEventReasons",
    "nvmlDeviceGetCurrPcieLinkGeneration",
    "nvmlDeviceGetCurrPcieLinkWidth",
    "nvmlDeviceGetPcieThroughput",
    "nvmlDeviceGetTotalEccErrors",
    "nvmlDeviceGetRemappedRows",
    "nvmlDeviceGetComputeRunningProcesses",
)


def lookup(pid: int) -> tuple[str | None, str | None]:
    return ("python", f"python worker-{pid}.py")


def without_time(snap):
    return dataclasses.replace(snap, taken_at=0.0)


def fresh_read(machine):
    """What a probe with an empty cache reads from this machine right now."""
    probe = NvmlProbe(FakeNvml(machine), process_lookup=lookup)
    try:
        return without_time(probe.read())
    finally:
        probe.close()


def test_static_facts_are_asked_once_and_live_readings_every_sample() -> None:
    fake = FakeNvml(h100_sxm_8())
    probe = NvmlProbe(fake, process_lookup=lookup)
    probe.read()
    after_first = dict(fake.calls)
    per_read: dict[str, int] = {}
    for _ in range(2, READS + 1):
        before = dict(fake.calls)
        probe.read()
        for name in DYNAMIC:
            grew = fake.calls[name] - before.get(name, 0)
            assert grew > 0, name
            assert per_read.setdefault(name, grew) == grew, name  # same cost every sample
    for name in STATIC:
        assert after_first.get(name, 0) > 0, name  # really asked once...
        assert fake.calls[name] == after_first[name], name  # ...and never again
    assert per_read["nvmlDeviceGetMemoryInfo"] == 8  # v2 answers: one call per GPU
    assert per_read["nvmlDeviceGetClockInfo"] == 8 * 2  # SM and memory clock
    # NVLink state is live (a link can drop); only the probe for the link count is not.
    assert fake.calls["nvmlDeviceGetNvLinkState"] == after_first[
        "nvmlDeviceGetNvLinkState"
    ] + 8 * 18 * (READS - 1)


def test_cached_values_equal_a_fresh_read_while_live_values_move() -> None:
    machine = h100_sxm_8()
    probe = NvmlProbe(FakeNvml(machine), process_lookup=lookup)
    assert without_time(probe.read()) == fresh_read(machine)
    for step in range(1, READS + 1):
        for gpu in machine.gpus:
            gpu.memory_used += step * 100 * MIB
            gpu.utilization = (10 * step, 5 * step)
            gpu.temperature = 40 + step
            gpu.power_mw = 300_000 + step * 1000
            gpu.clocks = {1: 1500 + step, 2: 2619}
            gpu.clock_event_reasons = 0x4 if step % 2 else 0x1
            gpu.pcie_throughput_kbps = (step, 2 * step)
            gpu.ecc_errors = (step, 0)
        machine.gpus[2].processes = [(9000 + step, step * MIB)]
        machine.gpus[5].nvlinks[3] = (step % 2 == 0, *machine.gpus[5].nvlinks[3][1:])
        cached = without_time(probe.read())
        assert cached == fresh_read(machine)
        assert cached.gpus[0].temperature_c == 40 + step
        assert cached.gpus[0].power_limit_w == 700.0 and cached.gpus[0].name
        assert cached.gpus[5].nvlinks[3].active is (step % 2 == 0)


def test_notsupported_fields_stay_none_listed_once_and_not_asked_again() -> None:
    for machine in (rtx4090_2(), a100_mig()):
        fake = FakeNvml(machine)
        probe = NvmlProbe(fake, process_lookup=lookup)
        snaps = [without_time(probe.read()) for _ in range(READS)]
        assert snaps[0] == fresh_read(machine)
        assert all(s == snaps[0] for s in snaps[1:])
        unsupported = snaps[-1].unsupported
        assert len(unsupported) == len(set(unsupported)) and unsupported
        first = FakeNvml(machine)
        NvmlProbe(first, process_lookup=lookup).read()
        for name in ("nvmlDeviceGetEccMode", "nvmlDeviceGetMigMode", "nvmlDeviceGetRemappedRows"):
            assert fake.calls[name] == first.calls[name], name  # asked on the first read only


def test_a_transient_failure_of_a_fixed_fact_is_asked_again() -> None:
    class Flaky(FakeNvml):
        failures = 1

        def nvmlDeviceGetEnforcedPowerLimit(self, handle):
            if handle.index == 0 and self.failures:
                self.failures -= 1
                raise pynvml.NVMLError(pynvml.NVML_ERROR_UNKNOWN)
            return FakeNvml.nvmlDeviceGetEnforcedPowerLimit(self, handle)

        nvmlDeviceGetPowerManagementLimit = nvmlDeviceGetEnforcedPowerLimit

    fake = Flaky(rtx4090_2())
    probe = NvmlProbe(fake, process_lookup=lookup)
    assert probe.read().gpus[0].power_limit_w == 450.0  # fallback call answered
    fake.failures = 2  # both the enforced and the management limit fail once
    probe2 = NvmlProbe(fake, process_lookup=lookup)
    assert probe2.read().gpus[0].power_limit_w is None
    assert probe2.read().gpus[0].power_limit_w == 450.0  # not stuck at None
    calls = fake.calls["nvmlDeviceGetEnforcedPowerLimit"]
    probe2.read()
    assert fake.calls["nvmlDeviceGetEnforcedPowerLimit"] == calls  # now cached


def test_a_gpu_back_from_being_lost_has_its_facts_read_again() -> None:
    machine = falling_off_bus(after_calls=10_000)
    fake = FakeNvml(machine)
    probe = NvmlProbe(fake, process_lookup=lookup)
    probe.read()
    names = fake.calls["nvmlDeviceGetName"]
    machine.gpus[1].lost_after_calls = fake._per_gpu[1] + 3  # dies part-way through a sample
    lost = probe.read()
    assert lost.gpus[1].lost and lost.gpus[1].power_w is None and not lost.gpus[0].lost
    assert lost.gpus[1].name == "NVIDIA H100 80GB HBM3"  # identity kept from the cache
    assert probe.read().gpus[1].lost  # stays lost while it does not answer
    machine.gpus[1].lost_after_calls = None  # reset: back on the bus (as another board)
    machine.gpus[1].name = "NVIDIA H100 80GB HBM3 (replaced)"
    machine.gpus[1].power_limit_mw = 500_000
    back = probe.read()
    assert not back.gpus[1].lost
    assert back.gpus[1].name == "NVIDIA H100 80GB HBM3 (replaced)"
    assert back.gpus[1].power_limit_w == 500.0
    assert fake.calls["nvmlDeviceGetName"] == names + 1  # only the returned GPU was re-read
    assert without_time(back) == fresh_read(machine)


def test_restarting_nvml_reads_the_fixed_facts_again() -> None:
    machine = h100_sxm_8()
    fake = FakeNvml(machine)
    probe = NvmlProbe(fake, process_lookup=lookup)
    probe.read()
    probe.close()
    machine.driver = "575.51.03"
    machine.gpus[0].power_limit_mw = 600_000
    snap = probe.read()
    assert fake.calls["nvmlInit"] == 2 and fake.calls["nvmlDeviceGetName"] == 16
    assert snap.driver_version == "575.51.03" and snap.gpus[0].power_limit_w == 600.0
    assert without_time(snap) == fresh_read(machine)


def test_caller_remembers_notsupported_per_gpu_and_arguments() -> None:
    from headroom.probes.nvml_calls import NvmlCaller

    asked: list[tuple[int, int]] = []

    class Links:
        def nvmlDeviceGetNvLinkState(self, handle, link):
            asked.append((handle, link))
            if link >= 2:
                raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
            return 1

        def nvmlDeviceGetEccMode(self, handle):
            asked.append((handle, -1))
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)

    caller = NvmlCaller(Links())
    for _ in range(3):
        assert [caller.call("nvmlDeviceGetNvLinkState", g, n, gpu=g) for g in (0, 1)
                for n in range(3)] == [1, 1, None, 1, 1, None]  # fmt: skip
        assert caller.call("nvmlDeviceGetEccMode", 0, gpu=0) is None
    assert asked.count((0, 2)) == 1 and asked.count((1, 2)) == 1  # unknown link: asked once
    assert asked.count((0, 1)) == 3  # a working link is asked every time
    assert asked.count((0, -1)) == 1 and caller.unsupported == ["nvmlDeviceGetEccMode"]
    caller.forget_gpu(0)  # GPU 0 came back from being lost: ask it afresh, GPU 1 not
    caller.call("nvmlDeviceGetNvLinkState", 0, 2, gpu=0)
    caller.call("nvmlDeviceGetNvLinkState", 1, 2, gpu=1)
    caller.call("nvmlDeviceGetEccMode", 0, gpu=0)
    assert asked.count((0, 2)) == 2 and asked.count((1, 2)) == 1 and asked.count((0, -1)) == 2
