"""The Ray nodes panel on the GPUs screen: shown only for a server on Ray, updated when a new
reading arrives (a node dies, the group is placed), and read by LiveSources from the
supervisor's own Ray watch."""

from __future__ import annotations

import dataclasses

from recorded_data import recorded_ray
from recorded_sources import RecordedSources
from tui_helpers import screen_text, settle

from headroom.doctor.rules_multinode import ray_cluster_findings
from headroom.supervisor import Supervisor, SupervisorSettings
from headroom.tui import messages as msg
from headroom.tui.app import HeadroomApp
from headroom.tui.live_sources import LiveSources
from headroom.tui.store import RayReading
from headroom.tui.widgets.ray_panel import RayPanel, node_rows, ray_panel_text
from headroom.vllm_cmd import parse_command


def a_node_died(reading: RayReading) -> RayReading:
    """The same cluster after its worker node died and the group was removed."""
    cluster = reading.cluster
    assert cluster.nodes is not None
    worker = next(n for n in cluster.nodes if not n.is_head)
    dead = dataclasses.replace(worker, state="DEAD", state_message="health check failed")
    nodes = tuple(dead if n is worker else n for n in cluster.nodes)
    after = dataclasses.replace(cluster, nodes=nodes, placement_groups=(), status=None)
    return RayReading(after, tuple(ray_cluster_findings(after, tp=2)))


async def test_panel_shows_the_cluster_and_follows_a_new_reading():
    app = HeadroomApp(RecordedSources(ray=True))
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        await settle(app, pilot)
        text = screen_text(app)
        assert "Ray nodes" in text
        assert "waiting vllm-test (PENDING, INFEASIBLE, STRICT_PACK): 3 bundles {GPU: 1} x3" in text
        assert "cause The placement group asks one node for 3 GPUs" in text
        assert text.count("ALIVE") == 2

        app.post_message(msg.RayRead(a_node_died(app.store.ray)))
        await settle(app, pilot)
        text = screen_text(app)
        assert "DEAD" in text and text.count("ALIVE") == 1
        assert "no placement group waiting" in text
        assert "cause 1 Ray node(s) died" in text
        assert "waiting vllm-test" not in text


async def test_no_panel_without_ray():
    app = HeadroomApp(RecordedSources())
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("2")
        await settle(app, pilot)
        assert app.store.ray is None
        assert not app.screen.query_one(RayPanel).display
        assert "Ray nodes" not in screen_text(app)


def test_status_only_reading_uses_the_verbose_node_blocks():
    reading = recorded_ray(state_api=False)
    rows = node_rows(reading.cluster)
    assert [(r.gpus_used, r.gpus_total) for r in rows] == [(0.0, 2.0), (0.0, 2.0)]
    text = ray_panel_text(reading)
    assert "STRICT_PACK: 3 bundles {GPU: 1} x3" in text


def test_cluster_text_is_escaped():
    reading = recorded_ray()
    cluster = dataclasses.replace(reading.cluster, address="[b]evil[/b]", problems=("[red]x",))
    text = ray_panel_text(RayReading(cluster))
    assert "\\[b]evil" in text and "\\[red]x" in text


class OneReading:
    def __init__(self, reading: RayReading) -> None:
        self.reading = reading
        self.reads = 0
        self.dashboard_url = None

    async def read(self):
        self.reads += 1
        return self.reading.cluster

    async def read_nodes(self):
        return await self.read()


async def test_live_sources_read_the_supervisor_s_cluster(tmp_path):
    probe = OneReading(recorded_ray())
    flags = ["--distributed-executor-backend", "ray", "-tp", "2"]
    command = parse_command(["vllm", "serve", "m", *flags])
    sup = Supervisor(
        command,
        SupervisorSettings(launcher="sim", data_dir=tmp_path),
        nvml_probe=False,
        ray_probe=probe,
    )
    sources = LiveSources(supervisor=sup)
    assert sources.reads_ray
    reading = await sources.read_ray()
    assert reading is not None and probe.reads == 1
    assert await sources.read_ray() is reading and probe.reads == 1  # ray status: seldom
    probe.dashboard_url = "http://127.0.0.1:8265"  # the state API is cheap: every time
    assert await sources.read_ray() is not reading and probe.reads == 2
    assert [f.id for f in reading.findings] == ["ray-bundle-exceeds-node"]
    other = Supervisor(
        parse_command(["vllm", "serve", "m"]),
        SupervisorSettings(launcher="sim", data_dir=tmp_path / "plain"),
        nvml_probe=False,
        ray_probe=probe,
    )
    plain = LiveSources(supervisor=other)
    assert not plain.reads_ray and await plain.read_ray() is None
    assert probe.reads == 2  # not read for a server without Ray
    await sup.close()
    await other.close()
