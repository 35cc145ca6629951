"""Machines shaped like real ones (names, sizes, limits, bus ids as NVML reports them).

Values follow gpu-facts.md section 3 and public `nvidia-smi -q` dumps of each model:
H100 SXM 80 GB = 81559 MiB, 700 W, PCIe Gen5 x16, 18 NVLinks to NVSwitches;
RTX 4090 = 24564 MiB, 450 W, Gen4 x16, GeForce: no ECC, remapped rows, NVLink, clock reasons,
MIG; A100 SXM4 80 GB = 81920 MiB, 400 W, with MIG on (utilisation and remapped rows
NotSupported).
"""

from __future__ import annotations

from . import FakeGpu, FakeMachine

MIB = 1024 * 1024
H100_BUSES = ["18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"]
NVSWITCH_BUSES = ["00000000:05:00.0", "00000000:06:00.0", "00000000:07:00.0", "00000000:08:00.0"]
SWITCH = 2  # NVML_NVLINK_DEVICE_TYPE_SWITCH
GPU_PEER = 0  # NVML_NVLINK_DEVICE_TYPE_GPU


def _uuid(seed: int) -> str:
    return f"GPU-{seed:08x}-1f2e-4c3d-9a8b-{seed * 7919:012x}"


VLLM_PIDS = (4101, 4102, 4103, 4104, 4105, 4106, 4107, 4108)


def h100_sxm_8(foreign: tuple[int, int, int] | None = (3, 5555, 2 * 1024 * MIB)) -> FakeMachine:
    """8x H100 SXM on NVSwitch (NV18 every pair), vLLM TP=8 plus one foreign process."""
    gpus = []
    for i, bus in enumerate(H100_BUSES):
        used = 74_000 * MIB
        procs: list[tuple[int, int | None]] = [(VLLM_PIDS[i], 73_500 * MIB)]
        if foreign is not None and foreign[0] == i:
            procs.append((foreign[1], foreign[2]))
        gpus.append(
            FakeGpu(
                name="NVIDIA H100 80GB HBM3",
                uuid=_uuid(0x100 + i),
                bus_id=f"00000000:{bus}:00.0",
                memory_total=81_559 * MIB,
                memory_used=used,
                memory_reserved=510 * MIB,
                utilization=(97, 61),
                temperature=54 + i,
                power_mw=612_000,
                power_limit_mw=700_000,
                clocks={1: 1980, 2: 2619},
                max_clocks={1: 1980, 2: 2619},
                clock_event_reasons=0x0,
                pcie=(5, 5, 16, 16),
                nvlinks=[(True, NVSWITCH_BUSES[link % 4], SWITCH) for link in range(18)],
                processes=procs,
                numa_node=0 if i < 4 else 1,
                cpu_mask=[0xFFFF_FFFF_FFFF, 0] if i < 4 else [0xFFFF_0000_0000_0000, 0xFFFF_FFFF],
            )
        )
    pairs = {frozenset((a, b)) for a in range(8) for b in range(8) if a != b}
    return FakeMachine(gpus=gpus, driver="570.133.20", cuda=12080, nvlink_pairs=pairs)


def rtx4090_2() -> FakeMachine:
    """A 2x RTX 4090 workstation: GeForce says NotSupported to the datacenter calls."""
    gpus = [
        FakeGpu(
            name="NVIDIA GeForce RTX 4090",
            uuid=_uuid(0x4090 + i),
            bus_id=bus,
            memory_total=24_564 * MIB,
            memory_used=22_900 * MIB,
            memory_reserved=None,  # memory v2 not answered: the probe falls back to v1
            utilization=(88, 40),
            temperature=66,
            power_mw=380_000,
            power_limit_mw=450_000,
            clocks={1: 2730, 2: 10501},
            max_clocks={1: 3105, 2: 10501},
            clock_event_reasons=None,
            pcie=(4, 4, 16, 16) if i == 0 else (4, 4, 8, 16),  # second card in an x8 slot
            nvlinks=None,
            ecc_mode=None,
            remapped_rows=None,
            mig_mode=None,
            processes=[(7001 + i, 22_600 * MIB)],
            numa_node=None,
            cpu_mask=[0xFFFF_FFFF],
        )
        for i, bus in enumerate(["00000000:01:00.0", "00000000:41:00.0"])
    ]
    return FakeMachine(
        gpus=gpus,
        driver="550.120",
        cuda=12040,
        ancestor={frozenset((0, 1)): 30},  # PHB
    )


def a100_mig() -> FakeMachine:
    """One A100 SXM4 80GB with MIG on: utilisation and remapped rows are NotSupported."""
    gpu = FakeGpu(
        name="NVIDIA A100-SXM4-80GB",
        uuid=_uuid(0xA100),
        bus_id="00000000:07:00.0",
        memory_total=81_920 * MIB,
        memory_used=40_000 * MIB,
        utilization=None,
        power_mw=180_000,
        power_limit_mw=400_000,
        clocks={1: 1410, 2: 1593},
        max_clocks={1: 1410, 2: 1593},
        pcie=(4, 4, 16, 16),
        nvlinks=[(False, "00000000:00:00.0", GPU_PEER) for _ in range(12)],
        remapped_rows=None,
        mig_mode=(1, 1),
        mig_uuids=[
            "MIG-4f1b2c3d-1111-5a6b-8c9d-0e1f2a3b4c5d",
            "MIG-7e8f9a0b-2222-5c6d-8e9f-1a2b3c4d5e6f",
        ],
        processes=[(9001, None)],  # usedGpuMemory is not reported per process under MIG
    )
    return FakeMachine(gpus=[gpu], driver="535.161.08", cuda=12020)


def falling_off_bus(after_calls: int) -> FakeMachine:
    """Two H100s where GPU1 answers GpuIsLost once it has served `after_calls` calls."""
    machine = h100_sxm_8(foreign=None)
    machine.gpus = machine.gpus[:2]
    machine.gpus[1].lost_after_calls = after_calls
    machine.nvlink_pairs = {frozenset((0, 1))}
    return machine


def no_driver() -> FakeMachine:
    return FakeMachine(gpus=[], init_error=12)  # NVML_ERROR_LIBRARY_NOT_FOUND
