"""The fleet table (Pilot + SVG snapshot) and a fleet server opened in the existing
dashboard, read from the same fleet source. A fake source returns hand-built snapshots:
no network, fixed values, so the drawing is the only thing that can change."""

from __future__ import annotations

from dataclasses import replace

import pytest
from tui_helpers import screen_text

from headroom.fleet.doctor import diagnose_fleet
from headroom.fleet.model import FleetServer, FleetSnapshot
from headroom.probes.dcgm import gpus_from_samples
from headroom.probes.metrics_types import EngineMetrics, ServerMetrics
from headroom.probes.metrics_window import Latency
from headroom.probes.server_info import info_from_answers
from headroom.tui.app import HeadroomApp
from headroom.tui.fleet_app import FleetApp, FleetServerSources, dcgm_snapshot


def gpus(host: str, xid: int = 0):
    samples = []
    for i in range(8):
        labels = {
            "gpu": str(i),
            "UUID": f"GPU-{host}-{i}",
            "Hostname": host,
            "modelName": "NVIDIA H100 80GB HBM3",
            "instance": f"{host}:9400",
        }
        samples += [
            ("DCGM_FI_DEV_GPU_UTIL", labels, 90.0 if host == "busy" else 3.0),
            ("DCGM_FI_DEV_FB_USED", labels, 70000.0),
            ("DCGM_FI_DEV_FB_FREE", labels, 11000.0),
            ("DCGM_FI_DEV_POWER_USAGE", labels, 650.0),
            ("DCGM_FI_DEV_XID_ERRORS", labels, float(xid if i == 2 else 0)),
        ]
    return gpus_from_samples(samples)


def server(instance: str, host: str, usage: float, preempt: float, waiting: float, xid=0):
    total = replace(
        EngineMetrics.empty("meta-llama/Llama-3.1-8B-Instruct"),
        kv_cache_usage=usage,
        kv_capacity_tokens=400_000,
        kv_free_tokens=int(400_000 * (1 - usage)),
        headroom_requests=400_000 * (1 - usage) / 1500,
        requests_running=60.0,
        requests_waiting=waiting,
        preemptions_per_s=preempt,
        preemptions_total=10 * preempt,
        generation_tokens_per_s=4200.0,
        ttft=Latency(0.2, 0.9, None, None, 0, False),
        itl=Latency(0.02, 0.045, None, None, 0, False),
        block_size=16,
        gpu_memory_utilization=0.9,
        cache_dtype="auto",
    )
    metrics = ServerMetrics(0.0, f"http://{instance}", "up", None, total, (total,), (total,))
    info = info_from_answers(
        instance,
        {"data": [{"id": total.model_name, "max_model_len": 131072, "root": "/models/llama"}]},
        {"version": "0.32.0"},
        None,
    )
    return FleetServer(instance, f"http://{instance}", "vllm", host, metrics, info, gpus(host, xid))


async def wait_for_text(app, pilot, needle: str, tries: int = 40) -> str:
    """The live loops never finish (unlike recorded data): poll the screen instead."""
    text = ""
    for _ in range(tries):
        await pilot.pause(0.1)
        text = screen_text(app)
        if needle in text:
            return text
    raise AssertionError(f"{needle!r} never shown:\n{text}")


class FakeSource:
    def __init__(self, snapshots):
        self.snapshots, self.calls, self.closed = list(snapshots), 0, 0
        self.description = "prometheus http://prom:9090"

    async def refresh(self) -> FleetSnapshot:
        snap = self.snapshots[min(self.calls, len(self.snapshots) - 1)]
        self.calls += 1
        return snap

    async def aclose(self) -> None:
        self.closed += 1


def fleet(busy_first: bool = True) -> FleetSnapshot:
    rows = [
        server("10.0.0.1:8000", "busy", 0.97, 3.5, 12.0),
        server("10.0.0.2:8000", "idle", 0.12, 0.0, 0.0),
        server("10.0.0.3:8000", "xid", 0.30, 0.0, 0.0, xid=79 if busy_first else 0),
    ]
    servers, findings = diagnose_fleet(rows, [])
    return FleetSnapshot(
        1.0, "prometheus http://prom:9090", servers, findings=findings, requests_made=7
    )


async def test_table_sorted_by_trouble_and_enter_opens_the_cursor_server() -> None:
    source = FakeSource([fleet()])
    app = FleetApp(source, interval=60)
    async with app.run_test(size=(200, 30)) as pilot:
        await pilot.pause(0.2)
        text = screen_text(app)
        assert "3/3 servers up, 24 GPUs, 7 requests" in text
        rows = [line for line in text.splitlines() if "10.0.0." in line]
        assert [r.split()[0].strip("│ ") for r in rows][:1] == ["10.0.0.3:8000"]  # XID first
        assert "XID79@2" in text and "fleet-uneven-load" in text
        await pilot.press("down")
        await pilot.press("enter")
    assert app.return_value == app.snapshot.sorted_servers()[1].instance
    assert source.closed == 1


async def test_cursor_stays_on_its_server_when_the_order_changes() -> None:
    source = FakeSource([fleet(True), fleet(False)])
    app = FleetApp(source, interval=60)
    async with app.run_test(size=(200, 30)) as pilot:
        await pilot.pause(0.2)
        await pilot.press("down")  # the busy server (second by trouble)
        chosen = app._cursor_instance()
        await app.refresh_once()  # the XID clears: the busy server moves to the top
        await pilot.pause()
        assert app._cursor_instance() == chosen
        assert app.snapshot.sorted_servers()[0].instance == chosen


def test_fleet_table_snapshot(snap_compare) -> None:
    async def run_before(pilot):
        await pilot.pause(0.2)

    assert snap_compare(
        FleetApp(FakeSource([fleet()]), interval=60), terminal_size=(160, 24), run_before=run_before
    )


async def test_a_fleet_server_in_the_existing_dashboard_from_the_same_source() -> None:
    source = FakeSource([fleet()])
    app = HeadroomApp(FleetServerSources(source, "10.0.0.1:8000"), interval=0.2)
    async with app.run_test(size=(160, 48)) as pilot:
        text = await wait_for_text(app, pilot, "97%")  # its KV usage, from the fleet snapshot
        assert "131072" in text.replace(",", "")  # max_model_len from /v1/models, not N/A
        await pilot.press("2")
        assert "H100" in await wait_for_text(app, pilot, "H100")
    assert source.calls >= 1


@pytest.mark.parametrize(
    "throttle,expected", [(None, None), (("thermal",), ("thermal_violation",))]
)
def test_dcgm_gpus_become_gpu_readings(throttle, expected) -> None:
    gpu = replace(gpus("h")[0], throttle=throttle, fb_reserved_mib=512.0)
    (reading,) = dcgm_snapshot((gpu,)).gpus
    assert reading.memory_used == 70000 * 1024 * 1024
    assert reading.memory_total == (70000 + 11000 + 512) * 1024 * 1024
    assert reading.throttle_reasons == expected and reading.index == 0


async def test_server_strings_are_text_not_markup() -> None:
    snap = fleet()
    hostile = replace(
        snap.servers[0],
        metrics=replace(
            snap.servers[0].metrics, total=replace(snap.servers[0].total, model_name="[b]x[/b]")
        ),
    )
    rows = [hostile, *snap.servers[1:]]
    servers, findings = diagnose_fleet(rows, [])
    app = FleetApp(FakeSource([replace(snap, servers=servers, findings=findings)]), interval=60)
    async with app.run_test(size=(200, 30)) as pilot:
        await pilot.pause(0.2)
        text = screen_text(app)
        assert "[error] XID errors" in text  # brackets are shown, not eaten as markup
        assert "[b]x[/b]" in text
