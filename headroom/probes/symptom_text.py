"""Symptoms a person wrote in words, for a log that holds no vLLM error line at all.

An incident often comes as an issue title or one sentence ("Runing API OOM", "Gemma OOM",
"OOM when 1 gpu, even though I have multi-gpu", "显存不足") instead of vLLM's own error
text. The catalog (vllm_catalog) knows vLLM's and PyTorch's wordings; this module knows the
few words people use for the same failures, and yields the event the log reader gives for a
real line whose phase the log does not say:

- running out of GPU memory ("OOM", "CUDA OOM", "out of GPU memory", "not enough VRAM", ...)
  -> a `cuda_oom` event, as PyTorch's "CUDA out of memory" line gives;
- too little KV cache in words ("not enough KV cache", "KV cache too small")
  -> a `no_cache_memory` event, as vLLM's "No available memory for the cache blocks" gives.
- requests preempted, or the KV cache full under load, in words ("frequently preempting",
  "被抢占", "GPU KV cache usage: 100.0%以后就卡住") -> a `preemption` warning, as the
  scheduler's "is preempted by PreemptionMode" gives.

A hang is not recognised: it has no one cause (NCCL, Ray, loading, compiling) and so no
knob the table would turn for it.

Conservative by design, because a wrong symptom turns knobs: only when the catalog found no
error (`text_symptoms`), never on a line with vLLM's logger prefix (vLLM's own hints say
"This may cause OOM", "to avoid RAM OOM"), never on a client's quoted text, code, a hedge
("may OOM", "to avoid OOM", "without OOM") or a host-memory OOM (RAM, the kernel's
OOM killer, /dev/shm), which no GPU knob fixes. Never raises on any input.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from headroom.probes.vllm_log_patterns import LogEvent, is_client_text, split_prefix

__all__ = ["symptom_of_line", "text_symptoms"]

# ASCII word classes: a Chinese character beside an English word ("报错OOM", "会OOM",
# "有8 GPUs") is not a word character that blocks \b or a lookaround.
_IA = re.IGNORECASE | re.ASCII

_MAX_CHARS = 2000  # a sentence or a title; the rest of a pasted megabyte line is not words
# The words readers (this module's and symptom_facts' two dozen) are built for a thread's
# words: a title and a few sentences. The training incidents and fixture logs give them at
# most 5,858 characters of words in all, and the longest line that stated anything has 757.
# Past this many characters of text that reads as words (vLLM's own lines, a client's, code
# and lines no needle names cost nothing and count nothing) a log is a program's output, and
# the readers, several quadratic on a long word, cost ~5 ms a 1 KB line (4,000 distinct lines
# of one long word took 22 s). So they stop there: what they answer is what the first lines say.
WORDS_BUDGET = 64_000

# "OOM", "OOMs", "OOM'd", "OOMing", "CUDA OOM", "GPU-OOM": the word alone, not "OOMKilled",
# "oom_score_adj" or "OOM-killer" (the kernel's, host memory).
_OOM_WORD = r"(?<![\w-])(?:(?:CUDA|GPU|VRAM)[ _-]?)?OOM(?:s|'?d|'?ed|ing)?(?![\w-])"
_GPU_MEMORY = r"(?:GPU|CUDA|device|video|graphics(?: card)?)\s+memory|VRAM|GPU\s+RAM"
_OOM_PHRASES = (
    _OOM_WORD,
    r"\bout[ -]of[ -]memory\b",
    r"\bOutOfMemory",
    rf"\bout\s+of\s+(?:{_GPU_MEMORY})",
    rf"\b(?:not\s+enough|insufficient|no\s+more|ran\s+out\s+of|runs?\s+out\s+of)\s+(?:free\s+)?(?:{_GPU_MEMORY})",
    rf"(?:{_GPU_MEMORY})\s+(?:is\s+|was\s+)?(?:not\s+enough|insufficient|exhausted)",
    # Chinese: 显存 is the GPU's own memory ("显存不足", "显存爆了", "显存增加直到溢出", "爆显存");
    # 内存 is host memory unless CUDA / GPU / 显卡 says whose ("CUDA内存不足").
    # ("显存炸了", "blew up": opendatalab/MinerU#3992)
    r"显存[^。，,.;；:：!！?？\n]{0,8}?(?:不足|不够|溢出|爆|炸|耗尽|占满|满了)|爆显存|炸显存|"
    r"(?:CUDA|GPU|显卡)\s*内存(?:不足|不够|溢出|耗尽)",
    # a GPU's size said not to be enough: "16G都不够" (QwenLM/Qwen3-VL#1224), "24GB is not
    # enough" (a size of RAM is host memory: _HOST_MEMORY rules the line out)
    r"(?<![\d.])\d{1,3}(?:\.\d)?\s*(?:G|GB|GiB)\s*(?:的)?\s*(?:显存|VRAM)?\s*(?:都|也|还|完全)?\s*"
    r"(?:不够|不足)",
    r"(?<![\d.])\d{1,3}(?:\.\d)?\s*(?:G|GB|GiB)\s+(?:of\s+)?(?:VRAM\s+|GPU\s+memory\s+)?"
    r"(?:is|are|was|were)\s+not\s+enough\b",
)
_KV_CACHE = r"KV[ -]?cache"
_KV_PHRASES = (
    rf"\b(?:not\s+enough|insufficient)\s+(?:GPU\s+)?(?:memory\s+for\s+(?:the\s+)?)?{_KV_CACHE}",
    rf"\bno\s+(?:available\s+)?(?:memory|space|room)\s+(?:left\s+)?for\s+(?:the\s+)?{_KV_CACHE}",
    # "KV cache too small", "kv cache is to small" / "10MiB to small KV cache" (a common typo:
    # SergiioB/intel-arc-pro-b70-inference-cookbook#4), "too little KV cache"
    rf"\b{_KV_CACHE}\s+(?:memory\s+)?(?:is\s+|was\s+)?(?:too?\s+small|not\s+enough|insufficient)",
    rf"\btoo?\s+(?:small|little)\s+(?:a\s+)?(?:GPU\s+)?{_KV_CACHE}",
    # Chinese: "KV cache不足", "KV缓存空间不够", "kv cache 太小"
    rf"(?:{_KV_CACHE}|KV\s*缓存)\s*的?\s*(?:空间|内存|显存|容量)?\s*(?:不足|不够|太小|过小)",
)
# Requests preempted, said in words ("performance regression caused by frequently preempting
# and resuming a request", vllm#25538; "Preemptions detected: 24. KV Cache size likely needs
# to be increased", tenstorrent/tt-xla#5864; "请求被抢占"): vLLM preempts a request when the KV
# cache has no block left for it, the event its scheduler's warning gives. The flag
# (--preemption-mode, preemption_mode) is a setting, not the symptom.
# A KV cache said to be full under load is the same state: the scheduler preempts or queues
# requests once no block is free ("GPU KV cache usage: 100.0%以后就卡住", vllm#1206; "Hitting
# close to 100% cache causes spike in waiting and kills throughput", vllm#23444; "GPU KV cache
# usage持续升高一直接近100%", vllm#27073). The usage is the figure vLLM's stats line prints.
_KV_USE = r"KV[ -]?cache(?:\s+(?:usage|useage|utili[sz]ation))?"
_PREEMPT_PHRASES = (
    # the verb reports it; the noun only with a count or an event ("24 preemptions",
    # "frequent preemption", "preemptions detected"): "how does preemption work" asks
    r"\bpreempt(?:s|ed|ing)\b",
    r"\b(?:\d+|many|frequent|constant|repeated|lots\s+of|too\s+many)\s+preemptions?\b(?![-_]mode)|"
    r"\bpreemptions?\s+(?:detected|happen(?:s|ed|ing)?|occur(?:s|red|ring)?|keep)\b",
    r"被抢占|抢占(?:了|请求|频繁)|频繁抢占",
    rf"\b{_KV_USE}[^.;!?。；！？\n\d]{{0,24}}?(?<![\d.])100(?:\.0+)?\s*%",
    rf"\b{_KV_USE}\s+(?:is\s+|was\s+|gets\s+|getting\s+)?(?:completely\s+)?(?:full|exhausted)\b",
    r"(?<![\d.])100(?:\.0+)?\s*%\s+(?:of\s+(?:the\s+)?)?(?:KV\s+)?cache\b",
    rf"\b(?:full|exhausted)\s+(?:GPU\s+)?{_KV_USE}",
    rf"{_KV_USE}[^。，；！？\n]{{0,12}}?(?:满了|占满|打满|用满|耗尽)",
)
_PREEMPTED = re.compile("|".join(f"(?:{p})" for p in _PREEMPT_PHRASES), _IA)
# Titles of vLLM's pull requests and feature requests name preemption as the code they change
# ("[Scheduler] Warning upon preemption", "[Core] ...", "[Feature]: ..."), not a symptom.
_DEV_TITLE = re.compile(
    r"^\s*\[(?:Core|Perf|Kernel|Bugfix|BugFix|Feature|RFC|Scheduler|Misc|CI|Doc|Docs|Refactor|"
    r"V1|Observability|Optimization|Test|Build|CI/Build)\]",
    _IA,
)
_OOM = re.compile("|".join(f"(?:{p})" for p in _OOM_PHRASES), _IA)
_KV_SHORT = re.compile("|".join(f"(?:{p})" for p in _KV_PHRASES), _IA)

# Host memory, the kernel's OOM killer or a JVM's heap: no GPU knob fixes these.
_HOST_MEMORY = re.compile(
    r"(?<!GPU )(?<!video )\bRAM\b|\bCPU\b|\bhost\s+memory|\bsystem\s+memory|\bSMEM\b|"
    r"shared\s+memory|/dev/shm|\bshm\b|\bswap\b|\bdisk\b|oom[-_ ]?kill|\bKilled\b|"
    r"exit\s+code\s+137|\bcgroup|java\.lang|\bheap\b|(?<!CUDA)(?<!GPU)(?<!显卡)(?<!CUDA )(?<!GPU )内存|"
    # Ray's OOM is its memory monitor killing workers on host memory ("ray OOM in tensor
    # parallel", vllm#322): "Ray OOM", "raylet ... out of memory", "memory monitor"
    r"\bray(?:let)?\s+(?:OOM|out[ -]of[ -]memory)|\bmemory\s+monitor\b",
    _IA,
)
# A hedge or a negation in the clause before the symptom: advice or a wish, not a report.
_HEDGE = re.compile(
    r"\b(?:may|might|could|would|can|cannot|can't|avoid(?:s|ed|ing)?|prevent(?:s|ed|ing)?|"
    r"risk(?:s|ed|ing)?|if|whether|without|no|not|never|reduce[sd]?|reducing)\b[^.;:!?]*$",
    _IA,
)
# The same in Chinese, within the clause: "如何避免显存不足" (how to avoid), "是否会爆显存"
# (whether), "可能显存不够" (may), "不会显存溢出" (will not).
_ZH_HEDGE = re.compile(
    r"(?:避免|防止|是否|如何|怎么|怎样|可能|会不会|不会|以免|有没有|不再)[^。；：！？]*$"
)
_CODE = re.compile(
    r"""^\s*(?:File\s+"|#|if\s|elif\s|except\b|raise\s|def\s|return\b|import\s|from\s\S+\s+import|"""
    r"""assert\s|[\w.]+\s*=[^=])""",
)
_URL = re.compile(r"\S+://\S+")
# Every OOM phrase above holds one of these (lower case); every KV phrase holds "kv" and one
# of the second: the cheap test before any regex (a healthy log's lines name "memory" and
# "KV cache" all the time, and none of these words).
_OOM_NEEDLES = ("oom", "out of", "out-of", "outofmemory", "enough", "insufficient", "no more",
                "exhausted", "显存", "内存", "不够", "不足")  # fmt: skip
_KV_NEEDLES = ("enough", "insufficient", "small", "little", "no ", "不足", "不够", "太小", "过小")
_PREEMPT_NEEDLES = ("preempt", "抢占", "100", "full", "exhausted", "满", "耗尽")


def _might_name(low: str) -> bool:
    if any(n in low for n in _OOM_NEEDLES) or any(n in low for n in _PREEMPT_NEEDLES):
        return True
    return "kv" in low and any(n in low for n in _KV_NEEDLES)


def _clause_before(text: str, start: int) -> str:
    """The words of the symptom's own clause before it (a hedge further back is another
    sentence: "Can I use model parallelism? I faced a problem that OOM ...")."""
    before = text[:start]
    cut = max(before.rfind(c) for c in ".;:!?\n。；！？")
    return before[cut + 1 :]


# A yes/no question asks whether it would happen ("Will vLLM OOM with 128k?", "我的4090 24G不够
# 吗？"); a "why" question reports what did ("Why does vLLM OOM on my 4090?").
_EN_YES_NO = re.compile(
    r"^\W*(?:is|are|was|were|will|would|can|could|does|do|did|should|shall|may|might|has|have)\b",
    _IA,
)
_ZH_YES_NO = re.compile(r"(?:吗|么|不)\s*[?？]\s*$")


def _part(text: str, match: re.Match[str], stops: str) -> str:
    """The sentence (or clause) of `text` holding the match, with its closing mark."""
    start = max(text[: match.start()].rfind(c) for c in stops) + 1
    ends = [i for i in (text.find(c, match.end()) for c in stops) if i >= 0]
    end = min(ends) if ends else len(text)
    return text[start : end + 1].strip()


def _yes_no_question(text: str, match: re.Match[str]) -> bool:
    sentence = _part(text, match, ".;!?\n。；！？")
    if sentence.endswith(("?", "？")) and _EN_YES_NO.search(sentence):
        return True
    # Chinese asks clause by clause: "16G都不够，能限制它在16G以内吗？" reports, then asks
    return bool(_ZH_YES_NO.search(_part(text, match, ".;!?\n。；！？，,")))


def _reported(pattern: re.Pattern[str], text: str) -> bool:
    """Whether a match of `pattern` in `text` reads as a report (no hedge before it, not a
    yes/no question)."""
    for match in pattern.finditer(text):
        clause = _clause_before(text, match.start())
        if _HEDGE.search(clause) or _ZH_HEDGE.search(clause) or _yes_no_question(text, match):
            continue
        return True
    return False


def symptom_of_line(line: object, lineno: int | None = None) -> LogEvent | None:
    """The symptom one line of human text names, as the log reader's event, or None.
    Never raises: anything not a non-empty str is None."""
    return _read_line(line, lineno)[0]


def _read_line(line: object, lineno: int | None) -> tuple[LogEvent | None, int]:
    """symptom_of_line's event, and how many characters its patterns ran over (0 for a line
    no needle names, vLLM's own, a client's or code: those cost a substring search)."""
    if not isinstance(line, str) or not line.strip():
        return None, 0
    text = line[:_MAX_CHARS]
    low = text.lower()
    if not _might_name(low):
        return None, 0  # most lines: no regex at all
    try:
        if split_prefix(text)[0] is not None or is_client_text(text) or _CODE.match(text):
            return None, 0  # vLLM's own log line, a client's text, or a line of code
    except Exception:  # a reader of untrusted text must not stop the doctor
        return None, 0
    return _symptom_of_words(line, text, lineno), len(text)


def _symptom_of_words(line: str, text: str, lineno: int | None) -> LogEvent | None:
    words = _URL.sub(" ", text)
    if _HOST_MEMORY.search(words):
        return None
    if _reported(_KV_SHORT, words):
        return LogEvent("no_cache_memory", "error", line.strip(), {"from_words": True},
                        lineno, signature="words_kv_cache_short")  # fmt: skip
    if _reported(_OOM, words):
        return LogEvent("cuda_oom", "error", line.strip(), {"from_words": True}, lineno,
                        signature="words_gpu_oom")  # fmt: skip
    if not _DEV_TITLE.match(words) and _reported(_PREEMPTED, words):
        return LogEvent("preemption", "warning", line.strip(), {"from_words": True}, lineno,
                        signature="words_preempted")  # fmt: skip
    return None


def text_symptoms(
    lines: Iterable[object], events: Sequence[LogEvent] = (), first_lineno: int = 1
) -> list[LogEvent]:
    """The symptoms named in words, one event per kind (the first line that names it), only
    when the log reader's `events` hold no error: a real vLLM error line always wins, and a
    line the catalog recognised (a pasted preemption warning says "not enough KV cache
    space") is vLLM's, not words. `first_lineno` numbers the first of `lines` (a digest that
    kept only its tail)."""
    if any(getattr(e, "severity", None) == "error" for e in events):
        return []
    known = {getattr(e, "lineno", None) for e in events}
    found: dict[str, LogEvent] = {}
    read: set[str] = set()
    budget = WORDS_BUDGET
    for offset, line in enumerate(lines):
        if first_lineno + offset in known:
            continue
        if budget <= 0:
            break  # past a thread's words: a program's output (WORDS_BUDGET)
        # A repeated line names the symptom its first copy named (symptom_of_line reads the
        # text alone) and only a kind's first line is kept: a flood is read once.
        if isinstance(line, str):
            if line in read:
                continue
            read.add(line)
        event, cost = _read_line(line, first_lineno + offset)
        budget -= cost
        if event is not None:
            found.setdefault(event.kind, event)
    return list(found.values())
