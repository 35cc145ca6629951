"""Blackwell-era platforms (SM12x: RTX 50xx, RTX PRO 6000, GB10 / DGX Spark): the NVFP4 MoE
kernel path and unified memory's page cache.

Nvfp4 moe. FlashInfer's CUTLASS grouped GEMM failing on an SM12x Blackwell GPU: run the NVFP4 MoE on
Marlin.

The text is TensorRT-LLM's MoE kernel check that FlashInfer's CUTLASS fused MoE carries:
"Failed to initialize cutlass TMA WS grouped gemm. Error: %s" (MOE_CHECK_WITH_INFO in the
TRT-LLM moe_kernels), printed by FlashInfer's autotuner as "[Autotuner]: Skipping tactic ...
due to failure while profiling: [TensorRT-LLM][ERROR] ... Failed to initialize cutlass TMA WS
grouped gemm", with a kernel file "cutlass_kernel_file_gemm_grouped_sm120_..." where it says
one. On SM120/SM121 (RTX 50xx, RTX PRO 6000 Blackwell, GB10 / DGX Spark) every TMA
warp-specialized grouped-GEMM tactic fails (CUTLASS #3096, as the field reports it).

vLLM picks that path itself: its NVFP4 MoE oracle (fused_moe/oracle/nvfp4.py, 0.20.2) tries
FlashInfer TRT-LLM, CuteDSL, then FlashInfer CUTLASS, whose _supports_current_device admits
is_device_capability_family(120), before vLLM CUTLASS and Marlin. The way round it is Marlin:
- `--moe-backend marlin` (KernelConfig.moe_backend, a choice from 0.17.1 on: config/kernel.py
  0.17.1, 0.20.2, 0.25.1);
- before that, or with the release unknown, VLLM_TEST_FORCE_FP8_MARLIN=1, which the oracle
  reads to return MARLIN (0.16.0, 0.17.1, 0.20.2, 0.25.1; 0.14.1 takes CUTLASS only "if
  cutlass_fp4_supported() and not envs.VLLM_TEST_FORCE_FP8_MARLIN"); envs.py has it from 0.9.2
  to 0.25.1, so an older release ignores it rather than refusing the launch, as it would an
  unknown --moe-backend.
Before 0.14.1 nothing forces Marlin for NVFP4 MoE (nvfp4_moe_support.py 0.12.0 falls back to
it only without CUTLASS FP4): named, no knob. The field's fix (NVIDIA forum 365119, DGX Spark:
VLLM_USE_FLASHINFER_MOE_FP4=0, VLLM_NVFP4_GEMM_BACKEND=marlin, VLLM_TEST_FORCE_FP8_MARLIN=1;
discuss.vllm.ai 2536, RTX PRO 6000: --moe-backend marlin) is the same.

The same answer where a CUTLASS NVFP4 MoE backend is in force and the output is garbage: vLLM's
own "Using 'FLASHINFER_CUTLASS' NvFp4 MoE backend out of potential backends: [...]" (or
'VLLM_CUTLASS'; oracle/nvfp4.py 0.17.1, 0.20.2, 0.25.1), or those backend names in the words,
beside garbage, garbled or empty output said (probes.symptom_output): on SM120 both CUTLASS
paths gave garbage in the field's reports (discuss.vllm.ai 2536, RTX PRO 6000: "~5 tok/s with
garbage output"; a DGX Spark build journal: "FlashInfer CUTLASS FP4 GEMM output still
garbage"), Marlin correct output.

Silent without either text, and without an SM12x GPU (its name, or sm120/sm121 in the log): the
same assertion on other GPUs has other causes (FlashInfer's min-latency mode on SM100).

Unified memory. An out-of-memory on a unified-memory GPU that the words lay on the host's page
cache: no
engine setting; free the cache.

On a UMA device (GB10 / DGX Spark, Jetson Orin and Thor: the GPU's memory is the host's) the
OS page cache, the previous model's weights read from disk among it, sits in the same pool
the engine allocates from. vLLM says so itself: "On UMA (Unified Memory Architecture) platforms
where CPU and GPU share physical memory (e.g. GH200, DGX Spark, Jetson Orin), cudaMemGetInfo
underreports free memory because it does not account for reclaimable OS memory (page cache,
buffers)." (vllm/utils/mem_utils.py MemorySnapshot.measure, 0.20.2, 0.25.1, 0.33.0, which then
counts psutil's available memory instead; 0.17.1 has no such branch and takes
cudaMemGetInfo's free memory as it is). The field's answer is the host's, not vLLM's: drop the
cache before the launch (`sync; echo 3 > /proc/sys/vm/drop_caches`, the DGX Spark postmortems'
fix before every model swap). Lowering gpu_memory_utilization would only shrink the KV cache
of a launch whose memory the cache, not the engine, holds.

Fires when the words name the page cache (or drop_caches, buff/cache) beside an out-of-memory
said in words, on a GPU known as UMA (by name, or the words say "unified memory"). Silent on
any other GPU and where no OOM is said.
"""

from __future__ import annotations

import re

from headroom.doctor.findings import Action, Finding
from headroom.doctor.versions import parse_version
from headroom.probes.symptom_output import empty_output

__all__ = []


# --- nvfp4 moe ------------------------------------------------------------------------------------

NVFP4_MOE_ID = "nvfp4-moe-grouped-gemm-sm12x"

_TMA_FAILED = re.compile(r"Failed to initialize cutlass TMA WS grouped gemm", re.IGNORECASE)

# SM12x Blackwell: GB10 (DGX Spark, sm_121), GeForce RTX 50xx and RTX PRO 6000 Blackwell (sm_120).
_SM12X_NAME = re.compile(
    r"\bGB10\b|DGX[\s_-]?Spark|\bRTX[\s_-]?50[5-9]0\b|\b50[5-9]0\b|RTX[\s_-]?PRO[\s_-]?[456]000",
    re.IGNORECASE,
)

# vLLM's NvFp4 MoE selection log naming a CUTLASS backend, or the backend's id in the words.
_CUTLASS_MOE = re.compile(
    r"Using '(?:FLASHINFER|VLLM)_CUTLASS' NvFp4 MoE backend|\b(?:FLASHINFER|VLLM)_CUTLASS\b"
)

_SM12X_LOG = re.compile(r"(?<![a-z0-9])sm_?12[01]a?(?![0-9])", re.IGNORECASE)  # "_sm120_" too

_MOE_BACKEND_FROM = (0, 17, 1)

_FORCE_MARLIN_FROM = (0, 14, 1)

_FORCE_MARLIN_UNTIL = (0, 25, 1)  # the last release read whose envs.py defines it

_SCAN_LINES = 400


def _sm12x(ctx, lines: list[str]) -> str | None:
    gpu = ctx.gpu
    names = [getattr(gpu, "name", "") or ""] if gpu is not None else []
    snap = ctx.inputs.gpus
    names += [str(getattr(g, "name", "")) for g in (getattr(snap, "gpus", None) or ())]
    for name in names:
        if _SM12X_NAME.search(name):
            return f"{name} is an SM12x Blackwell GPU"
    for line in lines:
        found = _SM12X_LOG.search(line)
        if found:
            return f"the log names {found.group(0)}"
    return None


def _actions(version: tuple[int, int, int] | None) -> tuple[Action, ...]:
    why = "Marlin's FP4 MoE kernels run on SM12x; the CUTLASS grouped GEMM's tactics do not"
    cost = "Marlin is weight-only (W4A16): activations stay 16-bit"
    force = Action("VLLM_TEST_FORCE_FP8_MARLIN", "set", "1", why, cost)
    backend = Action("moe_backend", "set", "marlin", why, cost)
    if version is None:
        return (force, backend)
    if version >= _MOE_BACKEND_FROM:
        return (backend,)
    if _FORCE_MARLIN_FROM <= version <= _FORCE_MARLIN_UNTIL:
        return (force,)
    return ()


def nvfp4_moe_grouped_gemm(ctx) -> list[Finding]:
    """The TMA WS grouped-GEMM failure on SM12x: Marlin for the MoE (module doc)."""
    lines = ctx.raw_lines[:_SCAN_LINES]
    said = next((line for line in lines if _TMA_FAILED.search(line)), None)
    if said is None and any(empty_output(line) for line in lines):
        said = next((line for line in lines if _CUTLASS_MOE.search(line)), None)
    if said is None:
        return []
    gpu = _sm12x(ctx, lines)
    if gpu is None:
        return []
    version = parse_version(ctx.version)
    evidence = [
        said.strip()[:400],
        gpu,
        "vLLM's NVFP4 MoE selection takes FlashInfer CUTLASS on SM12x (capability family 120) "
        "before Marlin; its grouped GEMM fails or gives garbage there in the field's reports",
    ]
    acts = _actions(version)
    if not acts:
        evidence.append(f"vLLM {ctx.version} has no switch that forces Marlin for NVFP4 MoE")
    title = "The CUTLASS NVFP4 MoE path fails on this SM12x GPU: run the MoE on Marlin"
    return [Finding(NVFP4_MOE_ID, None, "error", title, tuple(evidence), acts)]


# --- unified memory -------------------------------------------------------------------------------

UNIFIED_MEMORY_ID = "unified-memory-page-cache"

_PAGE_CACHE = re.compile(r"page[\s-]?cache|drop_caches|buff/cache", re.IGNORECASE)

_OOM_SAID = re.compile(
    r"\bOOM(?:ed|s|ing)?\b|out[\s-]+of[\s-]+memory|OutOfMemory|not enough memory", re.IGNORECASE
)

_UMA_NAME = re.compile(r"\bGB10\b|DGX[\s_-]?Spark|Jetson|\bOrin\b|\bThor\b", re.IGNORECASE)

_UMA_SAID = re.compile(r"unified[\s-]+memory", re.IGNORECASE)

_UNIFIED_MEMORY_SCAN_LINES = 200

_VLLM_SAYS = (
    "vLLM (utils/mem_utils.py, 0.20.2+): 'On UMA (Unified Memory Architecture) platforms where "
    "CPU and GPU share physical memory (e.g. GH200, DGX Spark, Jetson Orin), cudaMemGetInfo "
    "underreports free memory because it does not account for reclaimable OS memory (page "
    "cache, buffers).'"
)


def _uma(ctx, lines: list[str]) -> str | None:
    names = [getattr(ctx.gpu, "name", "") or ""] if ctx.gpu is not None else []
    snap = ctx.inputs.gpus
    names += [str(getattr(g, "name", "")) for g in (getattr(snap, "gpus", None) or ())]
    for name in names:
        if _UMA_NAME.search(name):
            return f"{name} shares the host's memory (unified memory)"
    if any(_UMA_SAID.search(line) for line in lines):
        return "the words say the memory is unified"
    return None


def page_cache_oom(ctx) -> list[Finding]:
    """The page cache blamed for an OOM on unified memory: no engine knob (module doc)."""
    lines = ctx.raw_lines[:_UNIFIED_MEMORY_SCAN_LINES]
    said = next((ln for ln in lines if _PAGE_CACHE.search(ln) and _OOM_SAID.search(ln)), None)
    if said is None:
        cached = next((ln for ln in lines if _PAGE_CACHE.search(ln)), None)
        oom = any(_OOM_SAID.search(ln) for ln in lines)
        said = cached if oom else None
    if said is None:
        return []
    uma = _uma(ctx, lines)
    if uma is None:
        return []
    evidence = (
        said.strip()[:400],
        uma,
        _VLLM_SAYS,
        "free the page cache before the launch (sync; echo 3 > /proc/sys/vm/drop_caches): "
        "not an engine setting",
    )
    title = "The host's page cache holds the unified memory this launch needs"
    return [Finding(UNIFIED_MEMORY_ID, None, "error", title, evidence, ())]


RULES = (
    nvfp4_moe_grouped_gemm,
    page_cache_oom,
)
