"""Words that say vLLM serves too few requests at once: a throughput or concurrency limit.

Threads and pull requests say it in a few ways: the throughput is low or regressed ("Restore
max_num_seqs to 32 to fix throughput regression", vllm-project/vllm-omni#5071; "Seeing perf
regression using chunked_prefill on VLLM 0.5.4", vllm#7604), the GPU's compute is not busy
("Low GPU utilization when running Deepseek-r1-distill-llama-8B", vllm#14022), or more
concurrency is wanted ("enable 27b vLLM fan-out — 6 seqs + raise concurrency gates",
joryirving/home-ops#10027), in English and Chinese ("吞吐量很低", "并发上不去").

Not it: one request's speed alone ("13 tokens/s vs 20 tokens/s" compares single streams: a
batch cap does not make one stream faster), a kernel said to be slower than another, the
memory share ("GPU memory utilization" is the KV budget, not the compute load), a question
about what the knobs do, and a negation ("throughput is not low"). Never raises; bounded.
"""

from __future__ import annotations

import re

from headroom.probes.prose_lines import said_unnegated

__all__ = ["throughput_limited"]

_IA = re.IGNORECASE | re.ASCII
_MAX_CHARS = 2000

_LOW = r"(?:low|poor|bad|reduced|lower|limited|degraded|terrible|horrible|disappointing|capped)"
_FELL = (
    r"(?:low|poor|bad|lower|worse|limited|capped|drops?|dropped|decreas(?:es|ed|ing)|"
    r"degrad(?:es|ed|ing)|regress(?:es|ed|ing)?|falls?|fell|plateau(?:s|ed)?|halved)"
)
_EN = (
    # "low throughput", "poor generation throughput", "lower overall throughput"
    rf"\b{_LOW}\s+(?:(?:output|generation|decode|decoding|token|overall|total|serving|"
    r"inference|request)\s+)?throughput\b",
    # "throughput is low", "throughput dropped", "the throughput regressed"
    rf"\bthroughput\s+(?:is\s+|was\s+|gets?\s+|got\s+|becomes?\s+|became\s+|seems?\s+|"
    rf"remains?\s+|stays?\s+)?(?:very\s+|so\s+|too\s+|much\s+|quite\s+|really\s+)?{_FELL}\b",
    # "perf regression", "throughput regression", "performance degradation"
    r"\b(?:perf(?:ormance)?|throughput)\s+(?:regression|drop|degradation|decrease|loss)s?\b",
    # the GPU's compute load said to be low: "Low GPU utilization" (never the memory share)
    r"\b(?:low|poor)\s+GPU\s+(?:compute\s+)?(?:utili[sz]ation|usage|util|load)\b",
    r"\bGPU\s+(?:compute\s+)?(?:utili[sz]ation|usage|util|load)\s+(?:is\s+|was\s+|stays?\s+)?"
    r"(?:very\s+|so\s+|too\s+|quite\s+)?(?:low|only\s+\d{1,2}\s*%)",
    # a compute load measured well below full: "| GPU utilization (node 2) | 37% |" (a
    # two-node DGX Spark write-up's table at --max-num-seqs 1); 0 % is an idle or hung GPU
    r"\bGPU\s+(?:compute\s+)?utili[sz]ation\b[^%\n]{0,24}?(?<![\d.])(?:[1-9]|[1-4]\d)\s*%",
    # more concurrency wanted, or said to be capped
    r"\b(?:raise|raises|raising|increase|increases|increasing|more|higher|boost|improve|"
    r"improves)\s+(?:the\s+)?concurrency\b",
    r"\bconcurrency\s+(?:is\s+|was\s+)?(?:very\s+|too\s+|so\s+)?(?:low|limited|capped|stuck)\b",
    r"\b(?:requests?|prompts?)\s+(?:are\s+|were\s+|get\s+)?(?:processed|handled|served|run|"
    r"executed)\s+(?:one\s+(?:at\s+a\s+time|by\s+one)|sequentially|serially)\b",
)
_ZH = (
    r"吞吐(?:量|率)?(?:很|太|非常|比较|特别)?(?:低|小|差|下降|降低|上不去|不高|慢)",
    r"并发(?:量|数|能力)?(?:很|太|非常|比较)?(?:低|差|上不去|不高|不够|提不上去|提不起来)",
    r"(?:提高|提升|增加|加大)(?:了)?(?:\s*vllm\s*的?)?并发",
    # "GPU利用率很低": nvidia-smi's compute load; the memory share is "显存利用率"
    r"(?<!显存)(?:GPU|gpu|显卡)\s*(?:的)?\s*利用率(?:很|太|非常|比较|特别)?(?:低|不高|上不去)",
)
_SAID = re.compile("|".join(f"(?:{p})" for p in (*_EN, *_ZH)), _IA)
_MEMORY_SHARE = re.compile(r"gpu[\s_-]*memory[\s_-]*utili[sz]ation", _IA)
# A negation just before the words: "not low throughput", "throughput is not low", "没有下降".
_NEGATED = re.compile(
    r"\b(?:not|n't|never|no|without)\s+(?:\w+\s+){0,2}$|(?:不|没有|没|并未)$", _IA
)


def throughput_limited(text: object) -> bool:
    """Whether a sentence of the text says the server's throughput or concurrency is
    limited (module doc). Never raises."""
    return said_unnegated(
        text,
        _SAID,
        _NEGATED,
        max_chars=_MAX_CHARS,
        keep=lambda match: not _MEMORY_SHARE.search(match.group(0)),
    )
