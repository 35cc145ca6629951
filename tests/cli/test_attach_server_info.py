"""`attach --once` shows what the server says about itself (max_model_len, root, release),
read from a simulator's /v1/models and /version: not N/A without a log."""

from __future__ import annotations

import json

import pytest
from support.fleet_lab import Lab

from headroom.cli import attach


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    lab = Lab(tmp_path_factory.mktemp("attach-info"))
    try:
        sim = lab.start_sim("box")
        lab.wait_sims()
        yield sim
    finally:
        lab.close()


def test_once_json_and_text_carry_the_servers_own_facts(sim, capsys) -> None:
    assert attach.main([sim.url, "--once", "--json", "--interval", "0.2"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["server_info"]["max_model_len"] == 1024  # the simulator's --max-model-len
    assert data["server_info"]["model_root"] == "tiny-llama"
    assert data["server_info"]["served_models"] == ["tiny-llama"]
    assert data["server_info"]["vllm_version"]
    assert attach.main([sim.url, "--once", "--interval", "0.2"]) == 0
    assert "max_model_len 1,024" in capsys.readouterr().out


def test_server_facts_line_uses_the_reported_length_when_attached() -> None:
    from headroom.probes.server_info import info_from_answers
    from headroom.tui.widgets.server_facts import flag_values

    info = info_from_answers("u", {"data": [{"id": "m", "max_model_len": 4096}]}, {}, None)
    assert flag_values(None, None)["max_model_len"] is None  # N/A before
    assert flag_values(None, None, info)["max_model_len"] == 4096
