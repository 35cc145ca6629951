"""An out-of-memory on a unified-memory GPU that the words lay on the host's page cache: no
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

from headroom.doctor.findings import Finding

ID = "unified-memory-page-cache"
_PAGE_CACHE = re.compile(r"page[\s-]?cache|drop_caches|buff/cache", re.IGNORECASE)
_OOM_SAID = re.compile(
    r"\bOOM(?:ed|s|ing)?\b|out[\s-]+of[\s-]+memory|OutOfMemory|not enough memory", re.IGNORECASE
)
_UMA_NAME = re.compile(r"\bGB10\b|DGX[\s_-]?Spark|Jetson|\bOrin\b|\bThor\b", re.IGNORECASE)
_UMA_SAID = re.compile(r"unified[\s-]+memory", re.IGNORECASE)
_SCAN_LINES = 200
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
    lines = ctx.raw_lines[:_SCAN_LINES]
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
    return [Finding(ID, None, "error", title, evidence, ())]


RULES = (page_cache_oom,)
