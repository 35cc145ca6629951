"""The numbers and statements a person's sentence carries, for a log that is only words.

An issue title or one sentence is often all a thread gives ("OOM when 1 gpu, even though I
have multi-gpu", "GLM-4.5v ... 固定12头, 导致只能4卡部署", "gpu利用率默认参数为0.61导致rtx3060
用不起", "... 2x3080 using turboquant - working with fp8_e5m2"). symptom_text names the
symptom (an OOM, a KV shortage); this module reads what the doctor needs beside it to name a
cause, in English and in Chinese (many public vLLM threads are Chinese):

- GPU counts: "8 GPUs", "2x3080", "8xA100", "one GPU", "single-GPU", "4卡", "8张卡", "单卡",
  "双卡", and whether the text says "several" without a count ("multi-gpu", "多卡")
  (probes.symptom_counts);
- attention heads: "12 heads", "固定12头", "12个注意力头";
- gpu_memory_utilization: "gpu_memory_utilization=1", "mem-util 0.82", "gpu利用率默认参数为0.61",
  and whether the sentence blames that value ("导致", "too low", "causes");
- a setting the person says works ("working with fp8_e5m2", "works with --enforce-eager");
- whether it says memory is short ("显存较少", "less VRAM") or the model does not run
  ("无法部署", "用不起", "cannot load", "fails to start").

Conservative: a number is read only beside the word that says what it counts; two different
head counts are no head count. Never raises on any input (the text is untrusted).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from headroom.probes.symptom_counts import gpu_counts, one_gpu_in_use, several_gpus
from headroom.probes.symptom_fixes import StatedFix, graph_capture_failed, stated_fixes
from headroom.probes.symptom_fixes import length_blamed as blames_length
from headroom.probes.symptom_layout import length_wanted, placement_named
from headroom.probes.symptom_output import (
    empty_output,
    fp16_unstable_name,
    nan_output,
    structured_backend_named,
    structured_output_slow,
)
from headroom.probes.symptom_setup import gpu_memory_gib, gpu_names, model_names
from headroom.probes.symptom_text import WORDS_BUDGET as _WORDS_BUDGET
from headroom.probes.symptom_usage import memory_taken as says_memory_taken
from headroom.probes.vllm_log_patterns import LogEvent, is_client_text, split_prefix

__all__ = ["WordFacts", "facts_of_text", "text_facts"]

# ASCII word classes: a Chinese character beside an English word ("报错OOM", "会OOM",
# "有8 GPUs") is not a word character that blocks \b or a lookaround.
_IA = re.IGNORECASE | re.ASCII

_MAX_CHARS = 2000  # a sentence or a title, as in symptom_text
_MAX_HEADS = 1024

_HEADS = re.compile(
    r"(?<![\w.])(\d{1,4})\s*(?:attention\s+|attn\s+|vision\s+|query\s+)?heads?\b|"
    r"\b(?:num_attention_heads|attention\s+heads|number\s+of\s+(?:attention\s+)?heads)"
    r"\W{0,4}(\d{1,4})\b|"
    r"(?<![A-Za-z0-9.])(\d{1,4})\s*个?\s*(?:注意力)?头(?!部|像|发)",
    _IA,
)
_KV_HEADS = re.compile(r"(?:KV|key[- ]value|num_key_value)[\s_-]*heads", _IA)
# The value after the word, a few words later at most ("gpu利用率默认参数为0.61",
# "gpu_memory_utilization=1", "mem-util 0.82", "utilization of 0.3"). A percentage only after
# words that name memory: "GPU utilization 100%" / "GPU利用率100%" is nvidia-smi's compute load.
_MEMORY_UTIL_WORD = (
    r"(?:gpu[\s_-]*memory[\s_-]*utili[sz]ation|mem(?:ory)?[\s_-]*util(?:i[sz]ation)?|显存利用率)"
)
_UTIL_WORD = rf"(?:{_MEMORY_UTIL_WORD}|gpu[\s_-]*util(?:i[sz]ation)?|gpu\s*利用率|利用率)"
_FRACTION = r"(?<![\d.])(0?\.\d{1,3}|1(?:\.0+)?)(?![\d.%])"
_UTILIZATION = re.compile(
    rf"{_UTIL_WORD}[^\d\n.%]{{0,12}}?{_FRACTION}|"
    rf"{_MEMORY_UTIL_WORD}[^\d\n.%]{{0,12}}?(?<![\d.])(\d{{2}})\s*%",
    _IA,
)
# The sentence blames the value: cause words after it, or "too low / too small" before it.
_BLAME = re.compile(
    r"导致|造成|引起|太低|太小|过低|过小|偏低|不够|\btoo\s+(?:low|small)|\bcaus(?:es?|ing)\b|"
    r"\bleads?\s+to\b|\bmakes?\b|\bresults?\s+in\b",
    _IA,
)
# "too high" blames the value the other way: the sentence then names no low value to raise.
_TOO_HIGH = re.compile(r"太高|过高|偏高|太大|过大|\btoo\s+(?:high|large|big|much)\b", _IA)
# Words that say something went wrong, for a sentence that names a working setting.
_TROUBLE = re.compile(
    r"\bbug\b|\berrors?\b|\bfail|\bcrash|\bbroken\b|\bcliff\b|报错|错误|失败|崩溃|出错",
    _IA,
)
_KV_DTYPES = r"fp8_e5m2|fp8_e4m3|fp8"
# "working with fp8_e5m2", "works fine with --kv-cache-dtype fp8", "ok with enforce_eager",
# "fixed by using --enforce-eager", "用fp8_e5m2正常/可以".
_WORKS = (
    r"(?:works?|working|worked|runs?|running|ok|okay|fine|fixed|solved|succeeds?|succeeded)"
    r"(?:\s+(?:fine|well|ok|okay))?\s+(?:with|using|by\s+(?:using|setting|adding)|after\s+"
    r"(?:setting|adding|using))\s+"
)
_WORKS_KV = re.compile(
    rf"{_WORKS}(?:(?:--kv[-_]cache[-_]dtype|kv_cache_dtype)[\s=]*)?({_KV_DTYPES})\b|"
    rf"(?:用|使用|改成|改为|设置)\s*(?:--kv[-_]cache[-_]dtype[\s=]*)?({_KV_DTYPES})\s*(?:后)?\s*"
    r"(?:就)?(?:可以|正常|能跑|成功|解决)",
    _IA,
)
_WORKS_EAGER = re.compile(
    rf"{_WORKS}(?:--enforce[-_]eager|enforce_eager(?:\s*=\s*True)?|eager\s+mode)|"
    r"(?:加上?|用|使用|设置)\s*(?:--enforce[-_]eager|enforce_eager)\s*(?:后)?\s*(?:就)?"
    r"(?:可以|正常|能跑|成功|解决)",
    _IA,
)
_NEGATED = re.compile(r"\b(?:not|n't|never|no longer|still\s+fails?)\s*$|不$|没$", _IA)
_MEMORY_SHORT = re.compile(
    r"显存(?:较少|少|小|不足|不够|有限|太小|不大|炸了|爆了)|爆显存|\bless\s+(?:GPU\s+)?(?:memory|VRAM)|"
    r"\b(?:small|smaller|limited|low)\s+(?:GPU\s+memory|VRAM)\b|\bnot\s+enough\s+(?:GPU\s+memory|VRAM)|"
    r"(?<![\w-])OOM|out\s+of\s+memory|\bdoes(?:n't|\s+not)\s+fit|放不下|装不下",
    _IA,
)
_CANNOT_RUN = re.compile(
    r"无法(?:部署|运行|启动|加载|使用)|用不起|用不了|跑不起来|跑不了|起不来|启动失败|部署失败|加载失败|"
    r"\b(?:cannot|can't|can\s?not|unable\s+to|fails?\s+to|failed\s+to)\s+(?:be\s+)?"
    r"(?:run|deploy|load|start|serve|launch|use|fit)|\bdoes(?:n't|\s+not)\s+(?:run|start|fit|load)",
    _IA,
)
_CODE = re.compile(r"""^\s*(?:File\s+"|#|def\s|import\s|from\s\S+\s+import|raise\s|return\b)""")


@dataclass(frozen=True)
class WordFacts:
    """What a person's words say about the setup; None / empty / False when they say nothing."""

    gpu_counts: tuple[int, ...] = ()  # every count named, in order, once each
    several_gpus: bool = False  # "multi-gpu", "多卡": more than one, no count
    one_gpu_in_use: bool = False  # "1 gpu", "single GPU", "only the first GPU", "第一张卡"
    heads: int | None = None  # attention heads named (one value, else None)
    utilization: float | None = None  # gpu_memory_utilization named (one value, else None)
    utilization_blamed: bool = False  # the sentence names that value as the cause
    works_with: tuple[tuple[str, object], ...] = ()  # (engine arg, value) said to work
    memory_short: bool = False  # GPU memory said to be short
    cannot_run: bool = False  # the model said not to run / deploy / start
    trouble: bool = False  # something said to go wrong ("[bug]", "error", "fails", "报错")
    fixes: tuple[StatedFix, ...] = ()  # knobs said to have fixed it (probes.symptom_fixes)
    length_blamed: bool = False  # the context length named as the cause
    graph_capture_failed: bool = False  # CUDA-graph capture said to fail
    memory_taken: bool = False  # vLLM said to take too much GPU memory (probes.symptom_usage)
    # the output said to be NaN / "!!!!" (strong) or empty / garbled (weak), and whether the
    # words name a family vLLM keeps out of float16 (probes.symptom_output)
    nan_output: bool = False
    empty_output: bool = False
    fp16_unstable: bool = False
    structured_slow: bool = False  # structured (guided) output said to be slow
    structured_backend: str | None = None  # the one guided-decoding backend the words name
    # the context length a sizing question asks for, 0 = the model's own (symptom_layout)
    length_wanted: int | None = None
    placement_named: bool = False  # HF's device_map / max_memory named (symptom_layout)
    text: str = ""  # the words read (first line that had any of the above)
    # The setup named (probes.symptom_setup), from any line of the words: candidate model
    # names, GPU names as written, one GPU's memory in GB.
    model_names: tuple[str, ...] = ()
    gpu_names: tuple[str, ...] = ()
    gpu_memory_gib: float | None = None

    @property
    def gpus_at_hand(self) -> int | None:
        """The most GPUs the text says the machine has (None when it names no count)."""
        return max(self.gpu_counts) if self.gpu_counts else None

    @property
    def one_gpu_of_several(self) -> bool:
        """The text contrasts one GPU in use with several at hand ("OOM when 1 gpu, even
        though I have multi-gpu", "第一张卡的显存...溢出，其他卡的显存不变")."""
        return self.one_gpu_in_use and (self.several_gpus or any(n > 1 for n in self.gpu_counts))

    def __bool__(self) -> bool:
        return self.states_more or self.names_setup

    @property
    def states_more(self) -> bool:
        """The words state something beside the setup (a count, a symptom's detail, ...)."""
        return bool(
            self.gpu_counts
            or self.several_gpus
            or self.one_gpu_in_use
            or self.heads is not None
            or self.utilization is not None
            or self.works_with
            or self.memory_short
            or self.cannot_run
            or self.trouble
            or self.fixes
            or self.length_blamed
            or self.graph_capture_failed
            or self.memory_taken
            or self.nan_output
            or self.empty_output
            or self.structured_slow
            or self.length_wanted is not None
            or self.placement_named
        )

    @property
    def names_setup(self) -> bool:
        """The words name a model or a GPU."""
        return bool(self.model_names or self.gpu_names or self.gpu_memory_gib)


def _heads(text: str) -> int | None:
    values = set()
    for match in _HEADS.finditer(text):
        if _KV_HEADS.search(text[max(0, match.start() - 20) : match.end()]):
            continue  # KV heads set another limit; not the attention heads
        raw = next(g for g in match.groups() if g is not None)
        value = int(raw)
        if 0 < value <= _MAX_HEADS:
            values.add(value)
    return values.pop() if len(values) == 1 else None


def _utilization(text: str) -> tuple[float | None, bool]:
    values: set[float] = set()
    blamed = False
    for match in _UTILIZATION.finditer(text):
        fraction, percent = match.groups()
        value = float(fraction) if fraction is not None else float(percent) / 100
        if 0 < value <= 1:
            values.add(round(value, 3))
            around = text[max(0, match.start() - 12) : match.end() + 16]
            blamed = blamed or bool(_BLAME.search(around))
    if len(values) != 1:
        return None, False
    return values.pop(), blamed and not _TOO_HIGH.search(text)


def _affirmed(pattern: re.Pattern[str], text: str) -> list[re.Match[str]]:
    """Matches not negated just before ("not working with fp8", "没用")."""
    return [m for m in pattern.finditer(text) if not _NEGATED.search(text[: m.start()].rstrip())]


def _works_with(text: str) -> tuple[tuple[str, object], ...]:
    out: list[tuple[str, object]] = []
    kv = [next(g for g in m.groups() if g) for m in _affirmed(_WORKS_KV, text)]
    if len({v.lower() for v in kv}) == 1:
        out.append(("kv_cache_dtype", kv[0].lower()))
    if _affirmed(_WORKS_EAGER, text):
        out.append(("enforce_eager", True))
    return tuple(out)


def facts_of_text(text: object) -> WordFacts:
    """The facts one piece of human text states. Never raises: anything not a str, a vLLM
    log line (its logger prefix), a client's quoted text or a line of code states nothing."""
    return _read_words(text)[0]


def _read_words(text: object) -> tuple[WordFacts, int]:
    """facts_of_text's facts, and how many characters the readers ran over (0 for a text
    they do not read: vLLM's own line, a client's, code)."""
    if not isinstance(text, str) or not text.strip():
        return WordFacts(), 0
    words = text[:_MAX_CHARS]
    try:
        if split_prefix(words)[0] is not None or is_client_text(words) or _CODE.match(words):
            return WordFacts(), 0
        return _facts_of_words(words), len(words)
    except Exception:  # a reader of untrusted text must not stop the doctor
        return WordFacts(), len(words)


def _facts_of_words(words: str) -> WordFacts:
    """The readers run over one text that reads as words (see _read_words)."""
    utilization, blamed = _utilization(words)
    counts = gpu_counts(words)
    return WordFacts(
        gpu_counts=counts,
        several_gpus=several_gpus(words),
        one_gpu_in_use=one_gpu_in_use(words, counts),
        heads=_heads(words),
        utilization=utilization,
        utilization_blamed=blamed,
        works_with=_works_with(words),
        memory_short=bool(_MEMORY_SHORT.search(words)),
        cannot_run=bool(_CANNOT_RUN.search(words)),
        trouble=bool(_TROUBLE.search(words)),
        fixes=stated_fixes(words),
        length_blamed=blames_length(words),
        graph_capture_failed=graph_capture_failed(words),
        memory_taken=says_memory_taken(words),
        nan_output=nan_output(words),
        empty_output=empty_output(words),
        fp16_unstable=fp16_unstable_name(words),
        structured_slow=structured_output_slow(words),
        structured_backend=structured_backend_named(words),
        length_wanted=length_wanted(words),
        placement_named=placement_named(words),
        text=words.strip(),
        model_names=model_names(words),
        gpu_names=gpu_names(words),
        gpu_memory_gib=gpu_memory_gib(words),
    )


# A log of this many lines or fewer is a title or a sentence, not a pasted log (as in
# doctor/context.py): its setup is read even from a line vLLM's catalog recognised.
_WORDS_MAX_LINES = 3


def _setup_only(facts: WordFacts) -> WordFacts:
    """The setup a line names (model, GPU, its memory, GPU counts) and nothing it says."""
    return WordFacts(gpu_counts=facts.gpu_counts, text=facts.text, model_names=facts.model_names,
                     gpu_names=facts.gpu_names, gpu_memory_gib=facts.gpu_memory_gib)  # fmt: skip


def _names_gpus(facts: WordFacts) -> bool:
    return bool(facts.gpu_names or facts.gpu_memory_gib or facts.gpu_counts)


def text_facts(
    lines: Iterable[object], events: Sequence[LogEvent] = (), first_lineno: int = 1
) -> WordFacts | None:
    """The facts of the first line of words that states any, only when the log reader's
    `events` hold no error (a real vLLM error line always wins, as in symptom_text) and the
    line is not one the log reader recognised; the setup (model, GPU) from the first line
    that names it, when another line holds the rest. None when no line states anything.

    A title or a sentence (at most three lines) that holds vLLM's own error text ("[Usage]:
    A100 vllm部署Qwen2.5-VL-3B-Instruct，load模型之后报错No available memory for the cache
    blocks", "CUDA out of memory when runing X with vllm 0.10.1 on GPU L40S") still names
    its setup: then only the setup is read (the model, the GPU, its memory and count), from
    any line, and nothing else the words say."""
    lines = list(lines)
    errors = any(getattr(e, "severity", None) == "error" for e in events)
    short = len(lines) <= _WORDS_MAX_LINES
    if errors and not short:
        return None
    known = {getattr(e, "lineno", None) for e in events}
    found: WordFacts | None = None
    setup: WordFacts | None = None
    read: set[object] = set()
    budget = _WORDS_BUDGET
    for offset, line in enumerate(lines):
        recognised = first_lineno + offset in known
        if (recognised and not short) or (isinstance(line, str) and line in read):
            continue
        if budget <= 0:
            break
        # A line read once says the same again (facts_of_text is pure) and what it said has
        # already been weighed: a flood of one repeated line is read once. (A recognised line
        # of a short text is read for its setup only, so a repeat elsewhere is read again.)
        if isinstance(line, str) and not recognised:
            read.add(line)
        facts, cost = _read_words(line)
        budget -= cost
        if found is None and not errors and not recognised and facts.states_more:
            found = facts
        if setup is None and (_names_gpus(facts) if errors else facts.names_setup):
            setup = facts
        if found is not None and setup is not None:
            break
    if errors:
        # the GPUs only: a model named beside vLLM's own error is the catalog rules' to read
        # (rules_long_context weighs the name as written, not the table's shape)
        return replace(_setup_only(setup), model_names=()) if setup is not None else None
    if found is None:
        return setup
    if setup is None or setup is found or found.names_setup:
        return found
    return replace(found, model_names=setup.model_names, gpu_names=setup.gpu_names,
                   gpu_memory_gib=setup.gpu_memory_gib)  # fmt: skip
