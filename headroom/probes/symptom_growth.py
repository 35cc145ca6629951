"""Words that say vLLM's memory keeps growing while it serves: a leak, not a reservation.

"While using vLLM versions 0.10.*, I encountered the problem that the memory of my GPUs is
rapidly clogging up during inference" (zai-org/GLM-V#165), "[Bug]: 0.8.0 ram leakage"
(vllm-project/vllm#15085), "Critical Memory Leak in vLLM V1 Engine: 200+ GB RAM Usage from
Image Inference" (vllm#15294), "vllm==0.8.5.post1 OOM memory leak" (JIA-Lab-research/Seg-Zero#38),
"内存泄漏" (vllm#15597). GPU or host memory alike: what the words report is growth over time.

Not it: memory said to be large at start-up (probes.symptom_usage: vLLM reserves its share up
front), an OOM alone, a fix's title ("fix memory leak", "修复内存泄漏"), a question whether
there is one, and a negation. Never raises; bounded.
"""

from __future__ import annotations

import re

from headroom.probes.prose_lines import said_unnegated

__all__ = ["memory_grows"]

_IA = re.IGNORECASE | re.ASCII
_MAX_CHARS = 2000

_GROWS = (
    r"(?:keeps?|kept|is|are|was|were)?\s*(?:rapidly\s+|slowly\s+|gradually\s+|steadily\s+|"
    r"constantly\s+|continuously\s+)?(?:clogging|filling|growing|increasing|rising|climbing|"
    r"creeping|accumulating|leaking)(?:\s+up)?"
)
_EN = (
    r"\b(?:memory|ram|vram)\s+leak(?:s|age|ing)?\b",
    r"\bleak(?:s|ing)?\s+(?:gpu\s+|host\s+|cpu\s+)?(?:memory|ram|vram)\b",
    # "the memory of my GPUs is rapidly clogging up", "GPU memory keeps growing"
    rf"\b(?:memory|ram|vram|memory\s+usage)\b(?:\s+(?:of|on)\s+(?:my\s+|the\s+)?\w+)?\s+{_GROWS}\b",
)
_ZH = (
    r"(?:内存|显存)(?:泄漏|泄露)",
    r"(?:内存|显存)(?:占用)?(?:一直|不断|持续|逐渐|慢慢)(?:增长|增加|上涨|上升|变大)",
)
_SAID = re.compile("|".join(f"(?:{p})" for p in (*_EN, *_ZH)), _IA)
# A fix, a question or a negation before the words: "fix memory leak", "is there a memory
# leak", "no memory leak", "修复内存泄漏", "是否有内存泄漏".
_NOT_REPORTED = re.compile(
    r"\b(?:fix(?:es|ed|ing)?|resolve[sd]?|avoid(?:s|ed|ing)?|prevent(?:s|ed|ing)?|no|not|"
    r"without|whether|is\s+there|are\s+there|any)\b[^.;!?]{0,30}$|(?:修复|解决|避免|是否|没有|无)[^。；！？]{0,8}$",
    _IA,
)


def memory_grows(text: object) -> bool:
    """Whether a sentence of the text reports memory growing while vLLM serves (module doc).
    Never raises."""
    return said_unnegated(text, _SAID, _NOT_REPORTED, max_chars=_MAX_CHARS)
