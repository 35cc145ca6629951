"""Adopting a server that shares its process group with other programs (servers started side by
side by one script share its group): a stop takes that server down, never its neighbours."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time

import psutil

from headroom.supervisor.adopt import group_is_the_servers, group_to_stop
from headroom.supervisor.process import ManagedProcess, process_create_time

SCRIPT = """
import signal, subprocess, sys, time
# Servers a script starts take SIGINT (a test run in the background may inherit it ignored).
signal.signal(signal.SIGINT, signal.SIG_DFL)
kids = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) for _ in range(2)]
print(" ".join(str(k.pid) for k in kids), flush=True)
time.sleep(60)
"""


def _children(script: subprocess.Popen) -> list[int]:
    line = script.stdout.readline()
    return [int(x) for x in line.split()]


def test_a_stop_of_one_server_in_a_shared_group_spares_the_other():
    script = subprocess.Popen(
        [sys.executable, "-c", SCRIPT], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        one, other = _children(script)
        group = os.getpgid(one)
        assert group == script.pid == os.getpgid(other)
        assert not group_is_the_servers(one, group)  # the script and `other` are in it
        assert group_is_the_servers(script.pid, group)  # the whole tree is the script's
        assert group_to_stop(one) == one and group_to_stop(script.pid) == group
        proc = ManagedProcess.adopt(one, group_to_stop(one), process_create_time(one))
        assert proc is not None
        report = asyncio.run(proc.stop(grace_int_s=3.0, grace_term_s=3.0))
        assert report.signals == ("SIGINT",)  # reached it: no escalation to SIGKILL
        time.sleep(0.2)
        assert not psutil.pid_exists(one) or psutil.Process(one).status() == "zombie"
        assert psutil.Process(other).is_running() and psutil.Process(script.pid).is_running()
    finally:
        os.killpg(script.pid, 9)
        script.wait(5)
