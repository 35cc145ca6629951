"""Catalog entries the field survey found unread (scripts/log_survey.py over
tests/fixtures/field_logs/excerpts.jsonl): texts of vLLM and of the libraries it runs on
that threads paste and no other entry knew. Each text was found in vLLM's source at the
releases provenance.py lists (library texts: where the library prints it). In match order,
placed before the generic entries: every needle here is specific."""

from __future__ import annotations

from headroom.probes.vllm_catalog.signature import NOT_CONFIG
from headroom.probes.vllm_catalog.signature import Signature as S

ENTRIES: tuple[S, ...] = (
    # --- host memory: Ray's raylet and the kernel's OOM killer --------------------------------
    S("raylet_memory_pressure_kill", "host_oom", "error", ("killed due to memory pressure (OOM)",),
      r"(?P<killed>\d+) Workers \(tasks / actors\) killed due to memory pressure", require_match=False,
      origin="ray", library="Ray's raylet (node_manager.cc: the memory monitor's periodic report)",
      fields=("killed",), feeds=NOT_CONFIG + ": host RAM ran out and Ray's memory monitor killed a worker; "
                                            "no GPU or vLLM knob",
      examples=(  # hiyouga/EasyR1#185, as pasted
          "(raylet) [2025-04-02 15:02:00,117 E 135782 135782] (raylet) node_manager.cc:3069: 1 Workers (tasks / "
          "actors) killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: "
          "351e406b196f66bb45eaad02a3b8b4725babfa8cc12949432f7ad7d8, IP: 10.95.143.76) over the last time period.",)),
    S("raylet_oom_advice", "host_oom", "error", ("how to address the out of memory issue",), origin="ray",
      library="Ray's raylet (the memory monitor's report, its second paragraph: not a CUDA OOM)",
      feeds=NOT_CONFIG + ": host RAM ran out and Ray's memory monitor killed a worker; no GPU or vLLM knob",
      examples=(  # hiyouga/EasyR1#185, as pasted
          "(raylet) Refer to the documentation on how to address the out of memory issue: "
          "https://docs.ray.io/en/latest/ray-core/scheduling/ray-oom-prevention.html. Consider provisioning more "
          "memory on this node or reducing task parallelism by requesting more CPUs per task. To adjust the kill "
          "threshold, set the environment variable `RAY_memory_usage_threshold` when starting Ray. To disable "
          "worker killing, set the environment variable `RAY_memory_monitor_refresh_ms` to zero.",)),
    S("shell_killed", "host_oom", "error", ("Killed",), r"^(?:\[\d+\][+-]?\s+)?Killed(?:\s{2,}\S.*)?\s*$",
      origin="python", library="the shell (bash prints 'Killed' when the kernel's OOM killer SIGKILLs its child)",
      feeds=NOT_CONFIG + ": the process was SIGKILLed, most often by the kernel's OOM killer (host RAM: "
                         "dmesg says); no GPU or vLLM knob",
      examples=("Killed",  # liunian-Jay/MU-GOT#17: the last line after vLLM's start-up lines
                )),
    # --- NCCL: torch's error detail and NCCL's own shared-memory warning --------------------------
    S("nccl_system_error_detail", "nccl_error", "error", ("ncclSystemError: System call",),
      origin="torch", library="PyTorch (c10d NCCLUtils: the detail of an ncclSystemError)",
      feeds="nccl-error (/dev/shm, IPC_LOCK, NCCL env)",
      examples=("ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device "
                "error.",)),  # vllm-project/vllm#6574 (title)
    S("nccl_shm_attach_failed", "nccl_error", "error", ("Error while attaching to shared memory segment",),
      r"segment (?P<path>/dev/shm/\S*)", require_match=False, origin="nccl", library="NCCL (misc/shmutils.cc)",
      fields=("path",), feeds="nccl-error (/dev/shm, IPC_LOCK, NCCL env)",
      examples=(  # vllm-project/vllm#18831, as pasted
          "a100-8:421780:421780 [0] misc/shmutils.cc:129 NCCL WARN Error while attaching to shared memory "
          "segment /dev/shm/nccl- (size 192814336), error: No such file or directory (2)",)),
    # --- start-up environment ------------------------------------------------------------------
    S("triton_no_c_compiler", "environment_problem", "error", ("Failed to find C compiler",),
      origin="triton", library="Triton (runtime/build.py: it compiles a small driver module at start)",
      feeds=NOT_CONFIG + ": Triton finds no C compiler to build its driver (install gcc / build-essential "
                         "in the image, or set CC)",
      examples=("RuntimeError: Failed to find C compiler. Please specify via CC environment variable.",)),
    S("model_inspection_failed", "environment_problem", "error", ("Error in inspecting model architecture",),
      r"Error in inspecting model architecture '(?P<architecture>[^']+)'", require_match=False,
      probe=("Error in inspecting model architecture",), fields=("architecture",),
      feeds=NOT_CONFIG + ": importing the model's code failed in a subprocess (the error below it: a broken "
                         "install, a kernel package built for another torch, a missing dependency)",
      examples=("Error in inspecting model architecture 'LlamaForCausalLM'",)),  # vllm-project/vllm#9713
    S("undefined_symbol", "environment_problem", "error", ("undefined symbol: ",),
      r"(?P<library>[\w./-]+\.so[\w.]*): undefined symbol: (?P<symbol>\S+)", require_match=False,
      origin="python", library="the dynamic loader (an extension module built against another torch or CUDA)",
      fields=("library", "symbol"),
      feeds=NOT_CONFIG + ": a compiled extension (flash-attn, vllm._C, xformers) was built for another "
                         "torch: reinstall it for the installed torch, or a matching vLLM",
      examples=(  # vllm-project/vllm#9377, as pasted
          "ImportError: /usr/local/lib/python3.10/dist-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: "
          "undefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE",)),
    # --- engine death ------------------------------------------------------------------------------
    S("engine_core_proc_died", "engine_dead", "error", ("Engine core proc",),
      r"Engine core proc (?P<process>\S+) died unexpectedly", probe=("Engine core proc %s died unexpectedly",),
      fields=("process",), feeds="engine death (the engine core process died; its root cause is above)",
      examples=("Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.",)),  # vllm#32468
    # --- parallel layout and loading --------------------------------------------------------------
    S("pp_needs_async_engine", "pp_unsupported_release", "error",
      ("Pipeline parallelism is only supported through AsyncLLMEngine",), origin="raise",
      probe=("Pipeline parallelism is only supported through AsyncLLMEngine",),
      feeds=NOT_CONFIG + ": V0's offline LLM class runs no pipeline parallelism (0.5.4-0.10): serve it "
                         "with `vllm serve`, use TP instead of PP, or a V1 release",
      examples=("NotImplementedError: Pipeline parallelism is only supported through AsyncLLMEngine as "
                "performance will be severely degraded otherwise.",)),
    S("weight_shape_mismatch", "checkpoint_weights_mismatch", "error", ("Attempted to load weight (",),
      r"Attempted to load weight \((?P<weight_shape>[^)]*\)?)\) into parameter \((?P<param_shape>[^)]*\)?)\)",
      require_match=False, origin="assert", probe=("Attempted to load weight (",),
      fields=("weight_shape", "param_shape"),
      feeds=NOT_CONFIG + ": a checkpoint tensor's shape is not the one vLLM's model code builds (a modified "
                         "or merged checkpoint, or a vocabulary resized after training)",
      examples=("AssertionError: Attempted to load weight (torch.Size([3600])) into parameter "
                "(torch.Size([3584]))",)),  # verl-project/verl#834 (title)
    S("moe_compressed_float16", "dtype_unsupported", "error", ("float16 is required for MoE compressed models",),
      origin="assert", probe=("float16 is required for MoE compressed models",),
      feeds="dtype-unsupported: --dtype float16 (compressed-tensors' W4A16/W8A16 MoE kernels, 0.7.3-0.8.5)",
      examples=("AssertionError: float16 is required for MoE compressed models. Set dtype=torch.float16",)),
    # --- requests ---------------------------------------------------------------------------------
    S("max_tokens_below_one", "prompt_too_long", "error", ("max_tokens must be at least 1",),
      r"max_tokens must be at least 1, got (?P<max_tokens>-?\d+)", require_match=False, origin="raise", quoted=True,
      probe=("max_tokens must be at least 1, got",), fields=("max_tokens",),
      feeds=NOT_CONFIG + ": a request's max_tokens below 1 (the OpenAI server of 0.2-0.4 derived it as "
                         "max_model_len minus the prompt: a prompt longer than max_model_len)",
      # vllm-project/vllm#4667 pasted it inside the client's JSON body (read too: the survey's
      # excerpt); sampling_params.py raises it as ValueError, with the thread's number
      examples=("ValueError: max_tokens must be at least 1, got -344.",)),
    # --- attention backends and the KV cache dtype -------------------------------------------------
    S("backend_fp8_kv_not_yet", "kv_cache_dtype_refused", "error", ("with FP8 KV cache not yet supported",),
      origin="raise", probe=("with FP8 KV cache not yet supported",),
      feeds="kv-cache-dtype-refused: --kv-cache-dtype auto (this attention backend has no FP8 KV cache here)",
      examples=("NotImplementedError: FlashMLA V1 with FP8 KV cache not yet supported",)),
    S("backend_refuses_kv_dtype", "kv_cache_dtype_refused", "error", ("kv_cache_dtype not supported",),
      origin="raise", quoted=True, probe=("kv_cache_dtype not supported",),
      feeds="kv-cache-dtype-refused: the attention backends refuse this --kv-cache-dtype (auto, or another "
            "--attention-backend)",
      examples=(  # vllm-project/vllm#32795, as pasted
          "ValueError: Selected backend AttentionBackendEnum.TRITON_MLA is not valid for this configuration. "
          "Reason: ['kv_cache_dtype not supported']",)),
    # --- shared memory: a SIGBUS in a container ---------------------------------------------------
    S("python_bus_error", "shm_full", "error", ("Fatal Python error: Bus error", "SIGBUS received"),
      origin="python", library="CPython's faulthandler / Ray's signal handler (a SIGBUS: a page of a "
                               "shared-memory mapping that /dev/shm could not back)",
      feeds="shm-full: a SIGBUS in a container is /dev/shm running out (docker --shm-size / --ipc=host)",
      examples=("Fatal Python error: Bus error",  # vllm-project/vllm#859 and #1771
                "*** SIGBUS received at time=1692931519 on cpu 133 ***")),
)  # fmt: skip
