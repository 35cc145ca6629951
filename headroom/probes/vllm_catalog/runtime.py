"""Catalog entries: NCCL/Gloo/Ray/shared memory, engine and worker death, generic Python
errors, and the request log (client text, never an event). In match order."""

from __future__ import annotations

from headroom.probes.vllm_catalog.signature import NOT_CONFIG
from headroom.probes.vllm_catalog.signature import Signature as S

ENTRIES: tuple[S, ...] = (
    # --- shared memory, NCCL, Gloo, Ray -----------------------------------------------------
    S("nccl_shm_full", "shm_full", "error", ("No space left on device", "Error while creating shared memory segment",
                                            "failed to extend /dev/shm"),
      r"(?P<path>/dev/shm/[^\s,]+|nccl-shm[^\s,]*)", require_match=False, origin="nccl", library="NCCL (shmutils.cc)",
      fields=("path",), feeds="shm-full (docker --shm-size / --ipc=host)",
      examples=("mt-l-x86-runner:202016:202235 [0] misc/shmutils.cc:132 NCCL WARN Error while creating shared memory "
                "segment /dev/shm/nccl-WU88OE (size 9637888), error: No space left on device (28)",
                "gpu2-ru7:2143:2561 [1] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device")),
    S("ray_shm_small", "ray_shm_small", "warning", ("because /dev/shm has only",),
      r"/dev/shm has only (?P<shm_bytes>\d+) bytes available", origin="ray", library="Ray (_private/services.py)",
      fields=("shm_bytes",), feeds="shm-small: Ray's object store fell back to /tmp (docker --shm-size)",
      examples=("WARNING: The object store is using /tmp instead of /dev/shm because /dev/shm has only 67108864 bytes "
                "available. This will harm performance! You may be able to free up space by deleting files in "
                "/dev/shm. If you are inside a Docker container, you can increase /dev/shm size by passing "
                "'--shm-size=9.92gb' to 'docker run' (or add it to the run_options list in a Ray cluster config). "
                "Make sure to set this to more than 30% of available RAM.",)),
    S("torch_watchdog_timeout", "watchdog_timeout", "error", ("Watchdog caught collective operation timeout",),
      r"OpType=(?P<op>\w+).*?Timeout\(ms\)=(?P<timeout_ms>\d+)\) ran for (?P<ran_ms>\d+) milliseconds",
      origin="torch", library="PyTorch (ProcessGroupNCCL.cpp)", fields=("op", "timeout_ms", "ran_ms"),
      feeds="watchdog-timeout (a rank hung: interconnect, NCCL env)",
      examples=("[rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: "
                "WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=134217728, NumelOut=134217728, Timeout(ms)=600000) "
                "ran for 600059 milliseconds before timing out.",)),
    S("rpc_timeout", "watchdog_timeout", "error", ("RPC call to",), r"RPC call to (?P<method>\S+) timed out",
      origin="raise", probe=("RPC call to",), fields=("method",), feeds="watchdog-timeout (executor RPC, TP > 1)",
      examples=("TimeoutError: RPC call to execute_model timed out.",)),
    S("shm_broadcast_wait", "shm_broadcast_wait", "warning", ("No available shared memory broadcast block",),
      r"broadcast block found in (?P<waited_s>\d+) seconds?", probe=("No available shared memory broadcast block",),
      fields=("waited_s",), feeds="evidence for watchdog/hang findings (a slow start prints it too)",
      examples=("No available shared memory broadcast block found in 60 seconds. This typically happens when some "
                "processes are hanging or doing some time-consuming work (e.g. compilation, weight/kv cache "
                "quantization).",)),
    S("graph_capture_nccl", "graph_capture_failed", "error", ("operation not permitted when stream is capturing",),
      origin="torch", library="PyTorch ProcessGroupNCCL watchdog (CUDA error during graph capture)",
      feeds=NOT_CONFIG + ": NCCL inside CUDA-graph capture (old vLLM/NCCL); upgrade, or --enforce-eager to start",
      examples=("[E ProcessGroupNCCL.cpp:915] [Rank 0] NCCL watchdog thread terminated with exception: CUDA error: "
                "operation not permitted when stream is capturing",)),
    S("cuda_illegal_memory", "cuda_illegal_memory", "error", ("an illegal memory access was encountered",),
      origin="torch", library="PyTorch / CUDA runtime (cudaErrorIllegalAddress)",
      feeds=NOT_CONFIG + ": a kernel bug; upgrade vLLM, or --enforce-eager to rule out CUDA graphs",
      examples=("RuntimeError: CUDA error: an illegal memory access was encountered",)),
    S("pynccl_error", "nccl_error", "error", ("NCCL error", "NCCL Error", "unhandled system error", "unhandled cuda error"),
      r"(?:NCCL [Ee]rror:? (?P<reason>[^(]+?)(?: \(run with|, Traceback|\s*$)|(?P<reason2>unhandled (?:system|cuda) error))",
      "nccl_error", origin="raise", probe=("NCCL error",), fields=("reason",), feeds="nccl-error (/dev/shm, IPC_LOCK, NCCL env)",
      examples=("RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)",
                "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, "
                "unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5")),
    S("nccl_transport", "nccl_transport", "info", ("NCCL INFO",),
      r"(?:Channel|Ring) (?P<channel>\d+)(?:/\d+)? : (?P<src>\d+)\[\w+\] -> (?P<dst>\d+)\[\w+\]"
      r"(?: \[(?P<direction>send|receive)\])? via (?P<transport>P2P/CUMEM|P2P/IPC|P2P/direct pointer"
      r"|SHM/direct/direct|SHM|direct shared memory|NET/Socket|NET/IB)(?P<detail>/\S+)?", "nccl_transport",
      origin="nccl", library="NCCL_DEBUG=INFO", fields=("channel", "src", "dst", "transport", "path"),
      feeds="topology: slow TP paths (SHM/sockets inside a node)",
      examples=("ip-172-31-13-247:50202:50264 [2] NCCL INFO Channel 00/0 : 2[2] -> 3[3] via P2P/CUMEM",
                "babel-12-29:256516:256516 [1] NCCL INFO Channel 00 : 1[1] -> 0[0] via SHM/direct/direct")),
    S("nccl_no_ib", "nccl_no_ib", "warning", ("NET/IB : No device found",), origin="nccl", library="NCCL",
      feeds="topology: inter-node traffic over sockets",
      examples=("gpu1:1234:1234 [0] NCCL INFO NET/IB : No device found.",)),
    S("nccl_warn", "nccl_warn", "warning", ("NCCL WARN",), r"NCCL WARN (?P<message>.*)$", origin="nccl",
      generic=True,  # any NCCL warning: a specific NCCL text, even cut, is worth more
      library="NCCL", fields=("message",), feeds="nccl-warn (evidence; P2P between PCIe GPUs: NCCL_P2P_DISABLE=1)",
      examples=("transport/shm.cc:590 NCCL WARN Cuda failure 217 'peer access is not supported between these two "
                "devices'",)),
    S("gloo_connect_failed", "gloo_error", "error", ("Gloo connectFullMesh failed",), origin="torch",
      library="PyTorch ProcessGroupGloo", feeds="gloo-error: wrong NIC for the CPU group (GLOO_SOCKET_IFNAME on every node)",
      examples=("[rank8]:[E ProcessGroupGloo.cpp:144] Gloo connectFullMesh failed with "
                "[../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error",)),
    S("custom_allreduce_disabled", "custom_allreduce_disabled", "warning",
      ("Custom allreduce is disabled", "CustomAllreduce is disabled", "CustomAllReduceV2 is disabled"),
      r"is disabled (?:because |due to )(?P<reason>.+?)(?:\. To silence|\s*$)", probe=("Custom allreduce is disabled",),
      fields=("reason",), feeds="custom-allreduce-disabled (PCIe-only TP > 2: keep TP small)",
      examples=("Custom allreduce is disabled because it's not supported on more than two PCIe-only GPUs. To "
                "silence this warning, specify disable_custom_all_reduce=True explicitly.",
                "Custom allreduce is disabled because your platform lacks GPU P2P capability or P2P test failed. To "
                "silence this warning, specify disable_custom_all_reduce=True explicitly.")),
    # --- engine and worker death --------------------------------------------------------------
    S("engine_core_failed", "engine_core_failed", "error", ("EngineCore failed to start", "Engine core initialization failed"),
      r"Failed core proc\(s\): (?P<procs>.*)", require_match=False, origin="raise",
      probe=("EngineCore failed to start", "Engine core initialization failed"), fields=("procs",),
      feeds="engine death (echo of the root cause above it)",
      examples=("EngineCore failed to start.",
                "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): "
                "{'EngineCore_DP0': 1}")),
    S("engine_dead", "engine_dead", "error", ("EngineCore encountered a fatal error", "EngineDeadError",
                                              "engine core exited unexpectedly", "EngineCore encountered an issue"),
      origin="raise", probe=("EngineCore encountered a fatal error", "engine core exited unexpectedly",
                             "EngineCore encountered an issue"),
      feeds="engine death (the supervisor acts on exit or /health)",
      examples=("EngineCore encountered a fatal error.",
                "[shutdown] MPClient: engine core exited unexpectedly; starting cleanup",
                "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) "
                "for the root cause.")),
    S("worker_died", "worker_died", "error", ("died unexpectedly", "died, exit code", "WorkerProc hit an exception",
                                              "WorkerProc failed", "Worker failed with error"),
      r"(?:Worker proc (?P<process>\S+) died unexpectedly \(exit code: (?P<exit_code>-?\w+)\)"
      r"|Worker (?P<process2>\S+) pid (?P<pid>\d+) died, exit code: (?P<exit_code2>-?\d+)"
      r"|Worker failed with error '(?P<message>.*)')", "worker_died", require_match=False, origin="raise",
      probe=("died unexpectedly", "died, exit code", "WorkerProc hit an exception", "WorkerProc failed",
             "Worker failed with error"),
      fields=("process", "pid", "exit_code", "message"), feeds="engine death (a worker's root cause is above it)",
      examples=("Worker VllmWorkerProcess pid 1159 died, exit code: -6",
                "Worker proc VllmWorker-1 died unexpectedly, shutting down executor.",
                "RuntimeError: Worker failed with error 'CUDA out of memory', please check the stack trace above "
                "for the root cause")),
    S("v0_worker_exception", "worker_exception", "error", ("Exception in worker ",),
      r"Exception in worker (?P<process>\S+) while processing method (?P<method>\w+)", origin="log",
      probe=("Exception in worker",), fields=("process", "method"),
      feeds="engine death (the worker's traceback follows)",
      examples=("Exception in worker VllmWorkerProcess while processing method determine_num_available_blocks.",)),
    S("ray_error_executing", "worker_exception", "error", ("Error executing method",),
      r"Error executing method '?(?P<method>\w+)'?", origin="log", probe=("Error executing method",),
      fields=("method",), feeds="engine death (the Ray worker's traceback follows)",
      examples=("Error executing method determine_num_available_blocks. This might cause deadlock in distributed "
                "execution.",
                "Error executing method 'execute_model'. This might cause deadlock in distributed execution.")),
    # vllm/entrypoints/openai/serving_engine.py _check_model (0.2.7+; serve/engine/serving.py in
    # 0.25+): a request names a model the server does not serve, the 404 body a client prints
    # (QwenLM/Qwen#87: served from a local path, requested by its hub name).
    S("model_not_served", "model_not_served", "error", ("` does not exist.",),
      r"The model `(?P<model>[^`]{1,300})` does not exist\.", origin="raise", quoted=True,
      probe=("` does not exist.",), fields=("model",),
      feeds="model-not-served: --served-model-name the name clients send (or send the served name)",
      examples=('{"object":"error","message":"The model `Qwen/Qwen1.5-7B-Chat` does not exist.","type":'
                '"NotFoundError","param":null,"code":404}',
                "ValueError: The model `gpt-3.5-turbo` does not exist.")),
    S("traceback", "traceback", "error", ("Traceback (most recent call last)",), origin="python", library="Python",
      generic=True,
      feeds="evidence (the exception line names the cause)", examples=("Traceback (most recent call last):",)),
    S("exception", "exception", "error", ("Error: ", "Exception: ", "Error(", "Interrupt: "),
      r"^\s*(?P<type>(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Interrupt))(?:: |\()(?P<message>.*)$",
      origin="python", library="Python", fields=("type", "message"), feeds="exception (ranked below specific causes)",
      generic=True,
      examples=("OSError: [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address already in use",
                "KeyError: 'model.layers.0.mlp.experts.w2_weight'")),
)  # fmt: skip
