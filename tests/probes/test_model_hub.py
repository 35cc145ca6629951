"""Hub model ids not on disk: config.json and the safetensors index read with huggingface_hub
from a loopback stand-in of the Hub (HF_ENDPOINT), cached, with HF_TOKEN and HF_HUB_OFFLINE
honoured; a hub that fails is a `lacking` line, never an exit 2."""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from support.fixtures import FIXTURES

from headroom.cli import doctor
from headroom.probes.model import load_model_shape
from headroom.probes.model_hub import clear_cache, looks_like_repo_id, read_hub_shape
from headroom.probes.model_lookup import ModelShapeProbe, lookup_model

QWEN_MOE = (FIXTURES / "model-configs" / "qwen3-30b-a3b.json").read_bytes()
COMMIT = "0123456789abcdef0123456789abcdef01234567"
TOTAL = 61_064_245_248  # bytes in the stand-in's safetensors index


class Hub(BaseHTTPRequestHandler):
    """`/{org}/{name}/resolve/{rev}/{file}` as the Hub answers it (X-Repo-Commit, ETag)."""

    files: dict[str, bytes] = {}
    gated: set[str] = set()
    seen: list[tuple[str, str, str | None]] = []

    def log_message(self, *args) -> None:  # quiet
        pass

    def _answer(self, body: bool) -> None:
        Hub.seen.append((self.command, self.path, self.headers.get("Authorization")))
        parts = self.path.split("/")
        repo, filename = "/".join(parts[1:3]), "/".join(parts[5:])
        if repo in Hub.gated and self.headers.get("Authorization") != "Bearer hf_secret":
            self.send_response(401)
            self.send_header("X-Error-Code", "GatedRepo")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = Hub.files.get(f"{repo}/{filename}")
        if data is None:
            self.send_response(404)
            self.send_header("X-Error-Code", "EntryNotFound")
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("X-Repo-Commit", COMMIT)
        self.send_header("ETag", '"' + hashlib.sha256(data).hexdigest() + '"')
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if body:
            self.wfile.write(data)

    def do_HEAD(self) -> None:  # noqa: N802 - http.server's names
        self._answer(body=False)

    def do_GET(self) -> None:  # noqa: N802
        self._answer(body=True)


@pytest.fixture
def hub(tmp_path):
    Hub.files = {
        "Qwen/Qwen3-30B-A3B/config.json": QWEN_MOE,
        "Qwen/Qwen3-30B-A3B/model.safetensors.index.json": json.dumps(
            {"metadata": {"total_size": TOTAL}, "weight_map": {}}
        ).encode(),
        "acme/gated-model/config.json": QWEN_MOE,
        "acme/single-file/config.json": QWEN_MOE,
        "acme/single-file/model.safetensors": b"\0" * 4096,
    }
    Hub.gated = {"acme/gated-model"}
    Hub.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    clear_cache()
    env = {"HF_ENDPOINT": f"http://127.0.0.1:{server.server_port}", "HF_HOME": str(tmp_path)}
    yield env
    server.shutdown()
    clear_cache()


def test_repo_ids_and_paths():
    assert looks_like_repo_id("Qwen/Qwen3-30B-A3B") and looks_like_repo_id("a/b.c-d_e")
    for not_an_id in ("/models/tiny", "./x/y", "gpt2", "a/b/c", "~/m/n", ""):
        assert not looks_like_repo_id(not_an_id)


def test_config_and_weight_size_come_from_the_hub_then_from_the_cache(hub):
    found = read_hub_shape("Qwen/Qwen3-30B-A3B", hub)
    shape = found.shape
    assert shape is not None and found.problem is None
    assert (shape.source, shape.num_experts, shape.moe_intermediate_size) == ("hub", 128, 768)
    assert shape.weight_bytes == TOTAL
    gets = [p for m, p, _ in Hub.seen if m == "GET"]
    assert any(p.endswith("/config.json") for p in gets)
    assert not any(p.endswith(".safetensors") for p in gets)  # never a weight file
    # Cached per process: a second read asks nothing.
    before = len(Hub.seen)
    assert read_hub_shape("Qwen/Qwen3-30B-A3B", hub).shape == shape
    assert len(Hub.seen) == before
    # And on disk, in the ordinary HF cache: found offline afterwards without the hub.
    cached = load_model_shape("Qwen/Qwen3-30B-A3B", {"HF_HOME": hub["HF_HOME"]})
    assert cached.source == "hf-cache" and cached.num_experts == 128


def test_a_single_file_checkpoint_is_sized_from_a_head_request(hub):
    shape = read_hub_shape("acme/single-file", hub).shape
    assert shape is not None and shape.weight_bytes == 4096
    assert not any(m == "GET" and p.endswith(".safetensors") for m, p, _ in Hub.seen)


def test_hf_token_is_sent_and_a_gated_model_without_it_is_named(hub):
    refused = read_hub_shape("acme/gated-model", hub)
    assert refused.shape is None and "HF_TOKEN" in (refused.problem or "")
    allowed = read_hub_shape("acme/gated-model", {**hub, "HF_TOKEN": "hf_secret"})
    assert allowed.shape is not None and allowed.shape.num_layers == 48
    assert ("GET", "/acme/gated-model/resolve/main/config.json", "Bearer hf_secret") in Hub.seen


def test_offline_reads_only_the_cache(hub):
    offline = {**hub, "HF_HUB_OFFLINE": "1"}
    missing = read_hub_shape("Qwen/Qwen3-30B-A3B", offline)
    assert missing.shape is None and "HF_HUB_OFFLINE" in (missing.problem or "")
    assert Hub.seen == []  # nothing asked of the hub
    clear_cache()
    assert read_hub_shape("Qwen/Qwen3-30B-A3B", hub).shape is not None  # online: fetched
    clear_cache()
    assert read_hub_shape("Qwen/Qwen3-30B-A3B", offline).shape is not None  # now cached


def test_unknown_model_and_unreachable_hub_are_lacking_lines(hub):
    assert "no config.json" in (read_hub_shape("acme/nothing", hub).problem or "")
    dead = {**hub, "HF_ENDPOINT": "http://127.0.0.1:9"}  # nothing listens on port 9
    found = lookup_model("acme/unreachable", dead, timeout_s=2.0)
    assert found.shape is None and found.problem and not found.unreadable


async def test_the_tui_probe_reads_in_a_thread_and_never_waits(hub):
    probe = ModelShapeProbe(hub)
    assert probe.peek("Qwen/Qwen3-30B-A3B") is None  # started, not waited for
    found = await probe.read("Qwen/Qwen3-30B-A3B")
    assert found.shape is not None and probe.peek("Qwen/Qwen3-30B-A3B") is found


def test_doctor_reads_a_hub_model_and_an_offline_one_is_not_an_error(hub, monkeypatch, capsys):
    for key, value in hub.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("HF_HUB_OFFLINE")
    argv = ["--gpus", "1xH100", "--json", "--", "vllm", "serve", "acme/single-file"]
    code = doctor.main(argv)
    doc = json.loads(capsys.readouterr().out)
    assert code in (0, 1) and doc["steps"][0]["status"] != "unknown"
    clear_cache()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code = doctor.main(["--json", "--", "vllm", "serve", "acme/not-cached"])
    doc = json.loads(capsys.readouterr().out)
    assert code in (0, 1)
    assert any("HF_HUB_OFFLINE" in line for line in doc["lacking"]), doc["lacking"]
    code = doctor.main(["--model-config", "acme/not-cached", "--json"])
    assert code in (0, 1)
    capsys.readouterr()
