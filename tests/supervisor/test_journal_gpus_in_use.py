"""The journal records the GPUs a run takes (the first TP x PP x DP visible ones), not every
GPU of the host: a TP 2 sweep row on a 4-GPU host said "4x H100"."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from headroom.supervisor.gpus import GpuAccess
from headroom.supervisor.journal import Journal, RunRecord
from headroom.supervisor.run_journal import RunJournal


class FourGpus:
    def read(self):
        gpus = [
            SimpleNamespace(
                index=i, name="H100", uuid=f"GPU-{i}", memory_total=80 << 30, pci_bus_id=f"0:{i}"
            )
            for i in range(4)
        ]
        return SimpleNamespace(available=True, gpus=gpus)


def _recorded(tmp_path, env: dict[str, str], world: int) -> list[int]:
    journal = Journal(tmp_path / "runs.jsonl")
    records = RunJournal(journal, None, lambda *a, **k: None)
    run_id = records.begin(RunRecord(model=None))
    asyncio.run(records.add_context(run_id, None, GpuAccess(FourGpus()), env, world))
    (record,) = journal.records()
    return [g["index"] for g in record.gpus]


def test_tp_2_on_four_gpus_records_the_first_two(tmp_path) -> None:
    assert _recorded(tmp_path, {}, 2) == [0, 1]


def test_visible_devices_pick_and_order_the_gpus(tmp_path) -> None:
    assert _recorded(tmp_path, {"CUDA_VISIBLE_DEVICES": "3,1,2"}, 2) == [3, 1]


def test_an_unknown_share_keeps_every_visible_gpu(tmp_path) -> None:
    assert _recorded(tmp_path, {}, 0) == [0, 1, 2, 3]


def test_the_local_share_of_a_command_line() -> None:
    from headroom.supervisor.starter import local_world
    from headroom.vllm_cmd import parse_command

    def world(*flags: str) -> int:
        return local_world(parse_command(["vllm", "serve", "m", *flags]))

    assert world() == 1 and world("-tp", "2") == 2
    assert world("-tp", "2", "-pp", "2", "--data-parallel-size", "2") == 8
    assert world("-tp", "8", "--distributed-executor-backend", "ray") == 0  # over nodes
    assert world("-tp", "8", "--nnodes", "2") == 0
