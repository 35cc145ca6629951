"""`headroom fleet --once` exit status: 0 when something was read, 1 when nothing was."""

from __future__ import annotations

import socket

from headroom.cli.fleet import main


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_every_direct_server_down_is_exit_1_with_its_row(capsys) -> None:
    gone = f"http://127.0.0.1:{_free_port()}"
    rc = main(["--url", gone, "--once", "--interval", "0.1", "--timeout", "2"])
    out, err = capsys.readouterr()
    assert rc == 1
    assert " down " in out and "fleet-target-down" in out  # the row is still printed
    assert "no server read" in err and "no server answered" in err
