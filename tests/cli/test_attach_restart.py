"""`headroom attach URL --launched-with ...`: restarting a server Headroom did not start.

The server is the simulator, started by the test as an unmanaged process (its own session,
as a systemd unit or a shell would) on a free port; every process is stopped at the end."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import psutil
import pytest

from headroom.cli import attach
from headroom.supervisor.adopt import listener_pid
from headroom.supervisor.attached import (
    NOT_TOLD,
    AttachRestartError,
    attach_supervisor,
    parse_change,
    parse_launch,
)
from headroom.supervisor.journal import Journal
from headroom.supervisor.settings import SupervisorSettings
from headroom.vllm_cmd import REMOVE

MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_healthy(url: str, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"{url} never became healthy")


def _kill_group(pid: int) -> None:
    try:
        os.killpg(os.getpgid(pid), signal.SIGKILL)
    except OSError:
        pass


@pytest.fixture
def unmanaged_sim(tmp_path, monkeypatch):
    """A simulator serving MODEL with --max-num-seqs 16, started outside Headroom."""
    monkeypatch.setenv("HEADROOM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("HEADROOM_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("HEADROOM_SIM_TIME_SCALE", "50")
    port = _free_port()
    argv = [sys.executable, "-m", "headroom.simulator", "serve", MODEL, "--port", str(port)]
    argv += ["--max-num-seqs", "16"]
    with open(tmp_path / "outside.log", "wb") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    started: list[int] = [proc.pid]
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url)
        yield proc, url, argv, started
    finally:
        now = listener_pid(port)
        procs = []
        for pid in {*started, *([now] if now else [])}:
            try:
                procs += [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
            except psutil.Error:
                pass
            _kill_group(pid)
        proc.wait(timeout=10)
        _, alive = psutil.wait_procs(procs, timeout=10)  # also reaps our own children
        assert not alive, f"processes outlived the test: {alive}"


@pytest.mark.slow
def test_restart_with_launch_line_replaces_the_server(unmanaged_sim, capsys):
    proc, url, argv, started = unmanaged_sim
    # Without the launch line: refused, clearly, and the server is untouched.
    assert attach.main([url, "--restart-with", "max_num_seqs=8"]) == 2
    assert "was not told how it was launched" in capsys.readouterr().err
    assert proc.poll() is None

    launched_with = " ".join(argv)
    code = attach.main([url, "--launched-with", launched_with, "--restart-with", "max_num_seqs=8"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "max_num_seqs" in out and "restarted: ready" in out
    # The old process (and its group) is gone; a new one serves the port with the new flag.
    assert proc.wait(timeout=10) is not None
    port = int(url.rsplit(":", 1)[1])
    new_pid = listener_pid(port)
    assert new_pid is not None and new_pid != proc.pid
    started.append(new_pid)
    cmdline = psutil.Process(new_pid).cmdline()
    assert cmdline[cmdline.index("--max-num-seqs") + 1] == "8"
    assert httpx.get(f"{url}/health", timeout=2).status_code == 200
    # Journaled: the server as found, then the restart as its child with the change.
    records = {r.trigger: r for r in Journal().records()}
    found, new = records["attached"], records["restart (attached)"]
    assert found.outcome == "restarted" and "16" in found.flags
    assert new.parent_run_id == found.run_id and new.changes == {"max_num_seqs": 8}
    assert new.outcome in ("ready", "running")


@pytest.mark.slow
def test_dashboard_gets_a_supervisor_only_with_the_launch_line(unmanaged_sim, monkeypatch):
    proc, url, argv, _ = unmanaged_sim
    import headroom.tui.app as app

    seen: list[dict] = []

    def fake_run_attach(
        url, interval=1.0, theme=None, log_from=None, log_cmd=None, supervisor=None
    ):
        seen.append({"url": url, "supervisor": supervisor})
        return 0

    monkeypatch.setattr(app, "run_attach", fake_run_attach)
    assert attach.main([url]) == 0
    assert attach.main([url, "--launched-with", " ".join(argv)]) == 0
    assert seen[0]["supervisor"] is None
    sup = seen[1]["supervisor"]
    assert sup.pid == proc.pid and sup.adopted and sup.command.get("max_num_seqs") == 16
    assert proc.poll() is None  # attaching alone touches nothing
    assert attach.main([url, "--launched-with", " ".join(argv)]) == 0
    assert seen[2]["supervisor"].run_id == sup.run_id  # one journal record per server
    assert [r.trigger for r in Journal().records()] == ["attached"]


def test_launch_line_forms_give_their_own_launcher():
    cmd, template = parse_launch("vllm serve m --port 8001 --max-num-seqs 4")
    assert template == "vllm serve {model} {flags}" and cmd.model == "m"
    _, template = parse_launch(
        "/opt/v/bin/python -m vllm.entrypoints.openai.api_server --model /models/tiny"
    )
    assert (
        template
        == "/opt/v/bin/python -m vllm.entrypoints.openai.api_server --model {model} {flags}"
    )
    _, template = parse_launch("vllm serve m", launcher="docker run x {model} {flags}")
    assert template == "docker run x {model} {flags}"
    for bad, why in (
        ("--max-num-seqs 4", "names no model"),
        ("ls -l", "not a vLLM command line"),
        ("vllm serve m", "unknown launcher"),
    ):
        with pytest.raises(AttachRestartError, match=why):
            parse_launch(bad, launcher="nope" if why == "unknown launcher" else None)


def test_port_mismatch_and_nothing_listening_are_refused(tmp_path):
    with pytest.raises(AttachRestartError, match="at port 9"):
        attach_supervisor("http://127.0.0.1:9", "vllm serve m --port 8000")
    with pytest.raises(AttachRestartError, match="no --port"):
        attach_supervisor("http://127.0.0.1:9", "vllm serve m")
    port = _free_port()
    with pytest.raises(AttachRestartError, match="listens on port"):
        attach_supervisor(
            f"http://127.0.0.1:{port}",
            f"vllm serve m --port {port}",
            settings=SupervisorSettings(data_dir=tmp_path, state_dir=tmp_path / "state"),
        )


def test_change_parsing_and_cli_refusals(capsys):
    assert parse_change("max_num_seqs=8") == ("max_num_seqs", 8)
    assert parse_change("--gpu-memory-utilization=0.85") == ("gpu_memory_utilization", 0.85)
    assert parse_change("enforce_eager=true") == ("enforce_eager", True)
    assert parse_change("enforce_eager=remove") == ("enforce_eager", REMOVE)
    assert parse_change("NCCL_P2P_DISABLE=1") == ("NCCL_P2P_DISABLE", "1")
    with pytest.raises(AttachRestartError):
        parse_change("max_num_seqs")
    assert attach.main(["http://127.0.0.1:9", "--once", "--launched-with", "vllm serve m"]) == 2
    assert attach.main(["http://127.0.0.1:9", "--launcher", "sim"]) == 2
    assert "needs --launched-with" in capsys.readouterr().err
    assert "launched" in NOT_TOLD and "--launched-with" in NOT_TOLD
