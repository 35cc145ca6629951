"""The API reader against the real Prometheus (Debian's 2.42): instant and range queries,
the error envelope for bad PromQL and bad ranges, and the targets list."""

from __future__ import annotations

import time

import pytest
from support.fleet_lab import Lab

from headroom.probes.prom_api import PrometheusClient


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    lab = Lab(tmp_path_factory.mktemp("promapi"))
    try:
        lab.start_sim("gpu-a")
        lab.wait_sims()
        lab.start_prometheus()
        lab.wait_until(
            lambda: lab.query("vllm:num_requests_running") and lab.query("DCGM_FI_DEV_FB_USED"),
            what="a scrape of both jobs",
        )
        yield lab
    finally:
        lab.close()


async def test_queries_targets_and_errors(lab) -> None:
    async with PrometheusClient(lab.prom_url) as prom:
        answer = await prom.query("vllm:cache_config_info")
        ((labels, value),) = answer.vector()
        assert value == 1.0 and labels["instance"] == lab.sims[0].instance
        assert labels["hostname"] == "gpu-a"  # the target label joins it to its GPUs

        now = time.time()
        ranged = await prom.query_range("DCGM_FI_DEV_FB_USED", now - 5, now, 1)
        assert len(ranged.matrix()) == 8 and all(points for _, points in ranged.matrix())

        bad = await prom.query("rate(")
        assert not bad.ok and bad.error_type == "bad_data" and bad.http_status == 400
        assert "parse error" in bad.describe()

        too_many = await prom.query_range("up", now - 100000, now, 0.001)
        assert not too_many.ok and "11,000 points" in too_many.describe()

        targets = await prom.targets()
        assert targets.ok
        assert {t.job for t in targets.targets} == {"vllm", "dcgm"}
        assert all(t.health == "up" and t.scrape_interval_s == 1.0 for t in targets.targets)
        assert prom.requests_made == 5
