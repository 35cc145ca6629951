"""Preflight checks and the GPU memory-release wait, against hand-built NVML snapshots."""

from __future__ import annotations

import dataclasses
import socket

from headroom.probes.gpu_processes import GpuProcess
from headroom.probes.nvml_types import GpuSnapshot, lost_reading
from headroom.supervisor.preflight import (
    check_gpus,
    check_port,
    visible_gpu_indices,
    wait_memory_released,
)

GIB = 1024**3


def gpu(index: int, *, total=80, free=79, procs=()):
    base = lost_reading(index, {"name": "NVIDIA H100 80GB HBM3", "uuid": f"GPU-{index}aaa"})
    return dataclasses.replace(
        base,
        lost=False,
        memory_total=total * GIB,
        memory_free=free * GIB,
        memory_used=(total - free) * GIB,
        processes=tuple(procs),
    )


def snap(*gpus, available=True):
    return GpuSnapshot(1.0, available, None if available else "no driver", None, None, gpus, ())


def proc(pid, gib=30, name="python"):
    return GpuProcess(pid, gib * GIB, name, None, None, False)


def test_port_in_use_is_named():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        message = check_port("127.0.0.1", port)
    assert message and f"port {port} is already in use" in message
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        free = sock.getsockname()[1]
    assert check_port("127.0.0.1", free) is None


def test_gpu_held_by_another_process():
    result = check_gpus(
        snap(gpu(0, free=40, procs=[proc(4242, 40, "train.py")]), gpu(1)),
        env={},
        utilization=0.9,
        world_size=2,
    )
    assert not result.ok
    (failure,) = result.failures
    assert "GPU 0 has 40.0 GiB free (held by another process: pid 4242 train.py (40.0 GiB))" in (
        failure
    )
    assert "at most 0.49" in failure


def test_a_holder_that_leaves_enough_free_is_a_note():
    snapshot = snap(gpu(0, free=75, procs=[proc(7, 5)]))
    result = check_gpus(snapshot, env={}, utilization=0.9)
    assert result.ok
    assert "shared with another process (pid 7 python (5.0 GiB))" in result.notes[0]
    sized = check_gpus(snapshot, env={}, utilization=None, kv_cache_memory_bytes=GIB)
    assert "held by another process" in sized.failures[0]


def test_only_the_visible_gpus_are_checked():
    snapshot = snap(gpu(0, free=1, procs=[proc(1)]), gpu(1), gpu(2))
    assert visible_gpu_indices({"CUDA_VISIBLE_DEVICES": "1,GPU-2"}, snapshot) == [1, 2]
    result = check_gpus(
        snapshot, env={"CUDA_VISIBLE_DEVICES": "1,2"}, utilization=0.9, world_size=2
    )
    assert result.ok, result.failures
    short = check_gpus(snapshot, env={"CUDA_VISIBLE_DEVICES": "1"}, utilization=0.9, world_size=2)
    assert "needs 2 GPUs" in short.failures[0]


def test_no_nvml_skips_with_a_note_and_kv_bytes_skip_the_share_check():
    result = check_gpus(snap(available=False), env={}, utilization=0.9)
    assert result.ok and "skipped" in result.notes[0]
    result = check_gpus(snap(gpu(0, free=2)), env={}, utilization=0.9, kv_cache_memory_bytes=GIB)
    assert result.ok


class FakeProbe:
    """Returns the given snapshots one per read, then the last one forever."""

    def __init__(self, *snapshots):
        self.snapshots = list(snapshots)

    def read(self):
        return self.snapshots.pop(0) if len(self.snapshots) > 1 else self.snapshots[0]


async def test_memory_release_wait_until_the_pids_are_gone():
    probe = FakeProbe(snap(gpu(0, procs=[proc(10)])), snap(gpu(0, procs=[proc(10)])), snap(gpu(0)))
    released, message = await wait_memory_released(probe, [10], [0], interval_s=0.01)
    assert released and "released" in message


async def test_memory_release_times_out_with_a_clear_message():
    probe = FakeProbe(snap(gpu(0, procs=[proc(10, 12)])))
    released, message = await wait_memory_released(
        probe, [10], None, timeout_s=0.05, interval_s=0.01
    )
    assert not released
    assert "GPU 0: pid 10 (12.0 GiB)" in message and "nvidia-smi" in message
    assert (await wait_memory_released(None, [10], None))[0]
