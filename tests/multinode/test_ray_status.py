"""`ray status` of every format generation, the state API's JSON, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.probes.ray_cluster import nodes_from_state_api, placement_groups_from_state_api
from headroom.probes.ray_status import parse_ray_status

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ray"


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_old_format_pending_group_pinned_to_a_dns_name():
    status = parse_ray_status(read("status-2025-02-old-format-pending-pg-2x8xH100-vllm-12670.txt"))
    assert status.format.startswith("usage-demands")
    assert status.node_count == 2
    assert status.gpus_used == 0.0 and status.gpus_total == 16.0
    (demand,) = status.pending_placement_groups
    assert demand.strategy == "PACK"
    assert len(demand.bundles) == 16 and demand.gpus == 16.0
    assert demand.pinned_nodes == ("ec2-<MY ADDRESS>.us-west-2.compute.amazonaws.com",)


def test_old_format_idle_cluster_has_no_demands():
    status = parse_ray_status(read("status-2025-05-old-format-idle-2x8gpu-gpustack-2077.txt"))
    assert status.gpus_total == 16.0 and status.demands == ()
    assert status.resources["memory"][1] > 5 * 2**40


def test_new_format_without_leading_spaces():
    status = parse_ray_status(read("status-2026-new-format-pending-pg-2node-gpustack-5509.txt"))
    assert status.format.startswith("pending-demands")
    assert status.node_count == 2
    assert status.gpus_total == 1.0 and status.resources["TPU"] == (0.0, 1.0)
    (demand,) = status.pending_placement_groups
    assert demand.gpus == 2.0 and demand.pinned_nodes == ()


def test_verbose_output_has_per_node_gpus_and_keeps_the_format():
    status = parse_ray_status(
        read("status-2026-ray-2.60.0-verbose-strict-pack-pending-2x2gpu-loopback.txt")
    )
    assert status.format.startswith(
        "pending-demands"
    )  # the node blocks' Usage: is not the old header
    assert [n.gpus_total for n in status.nodes] == [2.0, 2.0]
    assert status.gpus_total == 4.0
    assert status.pending_placement_groups[0].strategy == "STRICT_PACK"


def test_state_api_nodes_and_groups():
    nodes = nodes_from_state_api(json.loads(read("state-api-nodes-2node-loopback.json")))
    assert [n.is_head for n in nodes] == [False, True]
    assert {n.ip for n in nodes} == {"127.0.0.1"} and all(n.gpus_total == 2.0 for n in nodes)
    (group,) = placement_groups_from_state_api(
        json.loads(read("state-api-placement-groups-pending.json"))
    )
    assert group.state == "PENDING" and group.scheduling_state == "INFEASIBLE"
    assert group.gpus == 3.0 and group.name == "vllm-test"


def test_unreadable_text_says_so():
    status = parse_ray_status("Traceback (most recent call last):\nConnectionError: no cluster")
    assert status.format is None and status.problems


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=2000))
def test_any_text_parses_without_raising(text):
    status = parse_ray_status(text)
    assert status.gpus_total is None or status.gpus_total >= 0


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=12), inner, max_size=5)
    ),
    max_leaves=40,
)


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_state_api_readers_take_any_json(value):
    for node in nodes_from_state_api({"data": {"result": {"result": [value]}}}):
        assert isinstance(node.node_id, str)
    placement_groups_from_state_api({"data": {"result": {"result": value}}})
