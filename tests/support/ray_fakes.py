"""Recorded Ray answers served without Ray: a fake `ray` executable printing a saved `ray
status`, and a loopback HTTP server answering the state API with saved JSON."""

from __future__ import annotations

import http.server
import os
import shlex
import stat
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

RAY_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ray"
VERBOSE_STATUS = "status-2026-ray-2.60.0-verbose-strict-pack-pending-2x2gpu-loopback.txt"
NODES_JSON = "state-api-nodes-2node-loopback.json"
GROUPS_JSON = "state-api-placement-groups-pending.json"


def fake_ray(tmp_path: Path, status_fixture: str = VERBOSE_STATUS, exit_code: int = 0) -> Path:
    """An executable that answers `ray status ...` with a fixture and records its argv."""
    script = tmp_path / "ray"
    fixture = RAY_FIXTURES / status_fixture
    argv_log = tmp_path / "ray-argv.txt"
    script.write_text(
        f"#!{sys.executable}\n"
        "import sys\n"
        f"open({str(argv_log)!r}, 'a').write(' '.join(sys.argv[1:]) + '\\n')\n"
        f"sys.stdout.write(open({str(fixture)!r}).read())\n"
        f"sys.exit({exit_code})\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def argv_seen(tmp_path: Path) -> list[list[str]]:
    path = tmp_path / "ray-argv.txt"
    if not path.exists():
        return []
    return [shlex.split(line) for line in path.read_text().splitlines()]


class _StateApi(http.server.BaseHTTPRequestHandler):
    bodies: dict[str, bytes] = {}

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        path = self.path.split("?", 1)[0]
        body = self.bodies.get(path)
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body or b"{}")

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def state_api(nodes: str | bytes = NODES_JSON, groups: str | bytes = GROUPS_JSON) -> Iterator[str]:
    """A dashboard on 127.0.0.1 answering /api/v0/nodes and /api/v0/placement_groups with
    fixture files (a name) or given bytes; yields its URL."""

    def body(value: str | bytes) -> bytes:
        return value if isinstance(value, bytes) else (RAY_FIXTURES / value).read_bytes()

    handler = type(
        "Handler",
        (_StateApi,),
        {"bodies": {"/api/v0/nodes": body(nodes), "/api/v0/placement_groups": body(groups)}},
    )
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def env_with_ray(ray: Path) -> dict[str, str]:
    return {**os.environ, "HEADROOM_RAY": str(ray)}
