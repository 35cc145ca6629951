"""Catalog entries: the environment vLLM starts in, before any engine setting matters: no GPU
visible to the process, a driver older than the CUDA the wheels were built for, a build without
kernels for this GPU. Not configuration problems: the doctor names which one, and turns no knob.
In match order after `loading`, before `failures` (the generic exception entries are later)."""

from __future__ import annotations

from headroom.probes.vllm_catalog.signature import NOT_CONFIG
from headroom.probes.vllm_catalog.signature import Signature as S

ENTRIES: tuple[S, ...] = (
    # vllm/config (DeviceConfig, 0.6.4+): no platform detected, i.e. no GPU the process can see
    # (vllm#13946: Docker without the GPUs passed in).
    S("device_type_unknown", "environment_problem", "error", ("Failed to infer device type",), origin="raise",
      probe=("Failed to infer device type",),
      feeds=NOT_CONFIG + ": no GPU visible to the process (container GPUs, CUDA_VISIBLE_DEVICES, a CPU-only install)",
      examples=("RuntimeError: Failed to infer device type",
                "RuntimeError: Failed to infer device type, please set the environment variable "
                "`VLLM_LOGGING_LEVEL=DEBUG` to turn on verbose logging to help debug the issue.")),
    S("no_cuda_gpus", "environment_problem", "error",
      ("No CUDA GPUs are available", "Found no NVIDIA driver on your system", "Torch not compiled with CUDA enabled"),
      origin="torch", library="PyTorch (torch.cuda lazy init)",
      feeds=NOT_CONFIG + ": no GPU visible to the process (container GPUs, CUDA_VISIBLE_DEVICES, the driver, "
            "a CPU-only torch)",
      examples=("RuntimeError: No CUDA GPUs are available",
                "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU and "
                "installed a driver from http://www.nvidia.com/Download/index.aspx",
                "AssertionError: Torch not compiled with CUDA enabled")),
    S("driver_too_old", "environment_problem", "error", ("The NVIDIA driver on your system is too old",),
      r"too old \(found version (?P<driver_version>\d+)\)", require_match=False, origin="torch",
      library="PyTorch (torch.cuda lazy init)", fields=("driver_version",),
      feeds=NOT_CONFIG + ": the driver is older than the CUDA of the installed torch (update the driver, or "
            "wheels built for an older CUDA)",
      examples=("RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please update "
                "your GPU driver by downloading and installing a new version from the URL: "
                "http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to install a "
                "PyTorch version that has been compiled with your version of the CUDA driver.",)),
    # The CUDA runtime's error string (cudaErrorNoKernelImageForDevice), through torch or vLLM's
    # kernels (vllm#18841: the 0.9.0 image's FP8 kernels lacked the GPU's architecture).
    S("no_kernel_image", "environment_problem", "error",
      ("no kernel image is available for execution on the device",), origin="torch",
      library="CUDA runtime (cudaErrorNoKernelImageForDevice)",
      feeds=NOT_CONFIG + ": the build has no kernels for this GPU's architecture (a build or release for it)",
      examples=("RuntimeError: CUDA error: no kernel image is available for execution on the device",
                "torch.AcceleratorError: CUDA error: no kernel image is available for execution on the device")),
)  # fmt: skip
