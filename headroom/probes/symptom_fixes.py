"""What a person's words say fixed the failure, or caused it: for a log that is only words.

Titles and first sentences often carry the answer themselves: "OOM during verify-stress.sh
until reduce max_model_len to 188000", "After setting --max-model-len 8192 the OOM went away",
"reducing gpu_memory_utilization to 0.8 fixed it", "max_model_len设置为8192后就可以了". Others
name the cause: "using default value [of max_model_len] caused OOM", "Too large model length
will cause memory out of bound", "128k context OOM", "上下文太长导致爆显存". This module reads:

- stated fixes: an engine knob the words say was turned (reduce / lower / increase / set ...)
  when the failure went away, with the value when one is given; the direction is the verb's
  ("reduce" lowers), or None for "set X to N" (the doctor compares N with what ran);
- a length blamed: the words tie the memory failure to the context length (max_model_len,
  "long context", a context of 32K tokens or more) as its cause.

Conservative by design (a wrong reading turns a knob): a sentence that is a question, advice
("try reducing ..."), or that says the change did not help ("even after reducing ...", "still
OOM", "didn't help", "没用", "还是") states no fix and blames nothing. Never raises; bounded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from headroom.probes.prose_lines import sentences

__all__ = ["StatedFix", "graph_capture_failed", "length_blamed", "stated_fixes"]

# ASCII word classes: a Chinese character beside an English word ("报错OOM", "会OOM",
# "有8 GPUs") is not a word character that blocks \b or a lookaround.
_IA = re.IGNORECASE | re.ASCII

_MAX_CHARS = 2000

_KNOB_WORDS = {
    "max_model_len": (
        r"max[_\s-]?model[_\s-]?len(?:gth)?|max[_\s-]?seq(?:uence)?[_\s-]?len(?:gth)?|"
        r"vllm[_-]maxlen|context[\s_-]?(?:length|len|window|size)|上下文长度|上下文"
    ),
    "gpu_memory_utilization": (
        r"gpu[_\s-]?mem(?:ory)?[_\s-]?util(?:i[sz]ation)?|mem(?:ory)?[_\s-]util(?:i[sz]ation)?|"
        r"显存利用率|显存占用比例"
    ),
    "max_num_seqs": r"max[_\s-]?num[_\s-]?seqs",
    "max_num_batched_tokens": r"max[_\s-]?num[_\s-]?batched[_\s-]?tokens",
    "tensor_parallel_size": r"tensor[_\s-]?parallel(?:[_\s-]?size)?|(?<![A-Za-z])tp(?:[_\s-]?size)?(?![A-Za-z])",
}
# A knob as written: bare, as a flag, or quoted ("`max_num_seqs`", "'--max-model-len'").
_KNOB = (
    "[`'\"]?(?:"
    + "|".join(f"(?P<k_{k}>(?:--?)?(?:{v}))" for k, v in _KNOB_WORDS.items())
    + ")[`'\"]?"
)
_NUM = r"(?P<value>\d+(?:\.\d+)?\s*[kKmM]?)(?![\w.])"
_LOWER = (
    r"reduc(?:e|ed|es|ing)|lower(?:ed|s|ing)?|decreas(?:e|ed|es|ing)|drop(?:ped|s|ping)?|"
    r"shrink(?:ing)?|shrunk|cut(?:ting)?|limit(?:ed|ing)?|capp?(?:ed|ing)?"
)
_RAISE = r"increas(?:e|ed|es|ing)|rais(?:e|ed|es|ing)|bump(?:ed|ing)?|enlarg(?:e|ed|ing)|doubl(?:e|ed|ing)"
_SET = r"set(?:ting)?|chang(?:e|ed|ing)|us(?:e|ed|ing)|add(?:ed|ing)?|pass(?:ed|ing)?|specif(?:y|ied|ying)"
_VERB_KNOB = (
    rf"(?P<verb>{_LOWER}|{_RAISE}|{_SET})\s+(?:(?:the|my|our|its|vllm|vllm's)\s+){{0,2}}"
    rf"(?:maximum\s+|max\s+)?(?:{_KNOB})"
    rf"(?:\s*(?:to|=|:|from\s+(?P<before>\d+(?:\.\d+)?\s*[kKmM]?)\s+to|\s)\s*{_NUM})?"
)
_DONE = (
    r"fixed|solved|resolved|fix(?:es)?|solves?|resolves?|works?|worked|working|went\s+away|"
    r"goes\s+away|is\s+gone|was\s+gone|disappear(?:s|ed)?|succeed(?:s|ed)?|runs?|ran|starts?|"
    r"started|loads?|loaded|helped|helps|did\s+the\s+trick|ok|okay|fine"
)
_FIX_EN = tuple(
    re.compile(p, _IA)
    for p in (
        rf"\buntil\s+(?:i\s+|we\s+|you\s+)?{_VERB_KNOB}",
        rf"\b(?:{_DONE})\s+(?:it\s+|fine\s+|well\s+|now\s+)?(?:by|after|when|once)\s+{_VERB_KNOB}",
        rf"{_VERB_KNOB}[^.;!?\n]{{0,40}}?\b(?:{_DONE})\b",
        # a change made for the failure, as a pull request's title says it: "change vllm
        # gpu_memory_utilization from 0.7 to 0.6 to avoid OOM" (hiyouga/EasyR1#1)
        rf"{_VERB_KNOB}[^.;!?\n]{{0,40}}?\bto\s+(?:avoid|fix|prevent|solve|resolve)\b",
    )
)
# "works with --max-model-len 4096", "runs fine with max_model_len=8192": a value said to work
_WORKS_WITH = re.compile(
    rf"\b(?:works?|worked|working|runs?|running|ok|okay|fine|starts?|started)\s+(?:fine\s+|well\s+)?"
    rf"(?:with|using)\s+(?:{_KNOB})\s*(?:=|:|\s)\s*{_NUM}",
    _IA,
)
_ZH_LOWER = r"减小|降低|调小|调低|减少|改小|缩小|降到|减到|降为|下调"
_ZH_RAISE = r"增大|提高|调大|调高|增加|改大|上调"
_FIX_ZH = re.compile(
    rf"(?P<verb>{_ZH_LOWER}|{_ZH_RAISE}|设置|设为|修改|指定|加上)?\s*(?:把|将)?\s*(?:{_KNOB})\s*(?:参数)?\s*"
    rf"(?P<verb2>{_ZH_LOWER}|{_ZH_RAISE}|设置|设|改|调)?\s*(?:为|成|到|=)?\s*{_NUM}?\s*"
    r"(?:后|之后|以后)?\s*[，,]?\s*(?:就|便|才)?\s*"
    r"(?:可以了?|正常|解决|好了|成功|能跑|跑起来了?|没问题|能启动|启动成功|能用)",
    _IA,
)
# A sentence that says the change did not help, asks, or advises: no fix, no blame.
_NOT_A_REPORT = re.compile(
    r"\beven\b|\bstill\b|\bdespite\b|\bregardless\b|\bdid(?:n't|\s+not)\b|\bdoes(?:n't|\s+not)\b|"
    r"\bdo(?:n't|\s+not)\b|\bno\s+(?:effect|luck|help|difference)|\bnot\s+help|\bwithout\s+"
    r"(?:success|luck)|\bno\s+avail|\bnothing\s+(?:helps|helped|works|worked)|\bnot\s+work|"
    r"\bnever\b|\btry\b|\btrying\b|\bshould\b|\bwould\b|\bcould\b|\bmight\b|\bmaybe\b|"
    r"\bcan\b|\bmay\b|\bneed\s+to\b|\bplease\b|"
    r"\bhow\s+(?:to|do|can|should)\b|\bwhether\b|\bif\b|\bwhy\b|"
    r"无效|没用|没有用|仍然|依然|还是|也不行|都不行|不管用|无法解决|并没有|如何|怎么|是否|能否|为什么|试试|尝试|吗",
    _IA,
)
# A sentence ends at ;!? (and their Chinese forms), a line break, or a full stop before a
# space: "0.8", "verify-stress.sh" and "Qwen2.5" stay whole.


def _sentences(text: str) -> list[str]:
    return sentences(text)


@dataclass(frozen=True)
class StatedFix:
    """A knob the words say was turned when the failure went away."""

    knob: str  # engine-arg name
    direction: str | None  # "lower" | "raise", None when the words only say "set to N"
    value: float | None  # the value named, if any ("65K" = 65 x 1024)
    text: str  # the sentence that says it


def _number(raw: str | None) -> float | None:
    if not raw:
        return None
    raw = raw.strip().lower().replace(" ", "")
    scale = 1024 if raw.endswith("k") else 1024 * 1024 if raw.endswith("m") else 1
    try:
        return float(raw.rstrip("km")) * scale
    except ValueError:
        return None


def _knob_of(match: re.Match[str]) -> str | None:
    for name in _KNOB_WORDS:
        if match.groupdict().get(f"k_{name}"):
            return name
    return None


def _direction(verb: str | None) -> str | None:
    if not verb:
        return None
    if re.fullmatch(_LOWER, verb, _IA) or re.fullmatch(_ZH_LOWER, verb):
        return "lower"
    if re.fullmatch(_RAISE, verb, _IA) or re.fullmatch(_ZH_RAISE, verb):
        return "raise"
    return None


def _plausible(knob: str, value: float | None) -> bool:
    if value is None:
        return True
    limits = {
        "max_model_len": (16, 2**24),
        "gpu_memory_utilization": (0.01, 1.0),
        "max_num_seqs": (1, 65536),
        "max_num_batched_tokens": (16, 2**24),
        "tensor_parallel_size": (1, 1024),
    }
    low, high = limits[knob]
    return low <= value <= high


def _reports(sentence: str) -> bool:
    return not _NOT_A_REPORT.search(sentence) and not sentence.rstrip().endswith(("?", "？"))


def stated_fixes(text: object) -> tuple[StatedFix, ...]:
    """The fixes the text states (see the module doc), one per knob, in order. Never raises."""
    if not isinstance(text, str) or not text.strip():
        return ()
    try:
        out: dict[str, StatedFix] = {}
        for sentence in _sentences(text[:_MAX_CHARS]):
            if not _reports(sentence):
                continue
            for pattern in (*_FIX_EN, _WORKS_WITH, _FIX_ZH):
                for match in pattern.finditer(sentence):
                    knob = _knob_of(match)
                    if knob is None or knob in out:
                        continue
                    groups = match.groupdict()
                    verb = groups.get("verb") or groups.get("verb2")
                    value = _number(groups.get("value"))
                    before = _number(groups.get("before"))
                    if pattern is _FIX_ZH and not (verb or value is not None):
                        continue  # "max_model_len 可以" names no change
                    if not _plausible(knob, value):
                        continue
                    way = _direction(verb)
                    if way is None and before is not None and value is not None and before != value:
                        way = "lower" if value < before else "raise"  # "from 0.7 to 0.6"
                    out[knob] = StatedFix(knob, way, value, sentence.strip()[:400])
        return tuple(out.values())
    except Exception:  # a reader of untrusted text must not stop the doctor
        return ()


_LENGTH_WORD = re.compile(
    rf"(?:{_KNOB_WORDS['max_model_len']}|derived_max_model_len|model\s+length|"
    r"\b(?:long|large|big|huge|longer|larger|full|whole)\s+(?:context|ctx|sequence\s+length))",
    _IA,
)
# The length named as the cause: cause words in the sentence, "too long / too large", the
# default length the model declares, or a context of 32K tokens or more named beside it.
_CAUSE = re.compile(
    r"\bcaus(?:e|es|ed|ing)\b|\bdue\s+to\b|\bbecause\b|\bleads?\s+to\b|\bresults?\s+in\b|"
    r"\btoo\s+(?:long|large|big|high)\b|\bdefault\b|导致|引起|造成|太长|过长|太大|过大|默认",
    _IA,
)
_LONG_CONTEXT = re.compile(
    r"\b(?:long|large|big|huge|longer|larger|full)\s+(?:context|ctx)|长上下文|长文本|"
    r"(?<![\w.])(?:3[2-9]|[4-9]\d|[1-9]\d{2,3})\s*[kK](?:\s*tokens?)?\s+(?:context|ctx)|"
    r"(?<![\w.])[1-9]\d{0,2}\s*[mM]\s+(?:context|ctx)",
    _IA,
)
_LARGE_VALUE = re.compile(
    rf"(?:{_KNOB_WORDS['max_model_len']})\s*(?:=|:|of|is|at)?\s*"
    r"(?P<n>\d{5,8}|\d{2,4}\s*[kK])(?![\w.])",
    _IA,
)


def length_blamed(text: object) -> bool:
    """Whether a sentence of the text names the context length as the cause (see the module
    doc). Never raises."""
    if not isinstance(text, str) or not text.strip():
        return False
    try:
        for sentence in _sentences(text[:_MAX_CHARS]):
            if not _reports(sentence):
                continue
            if _LONG_CONTEXT.search(sentence):
                return True
            if not _LENGTH_WORD.search(sentence):
                continue
            if _CAUSE.search(sentence):
                return True
            large = _LARGE_VALUE.search(sentence)
            if large and (_number(large.group("n")) or 0) >= 32768:
                return True
        return False
    except Exception:
        return False


# CUDA-graph capture named as what failed: "CUDA graph capture fails during profiling",
# "OOM during cudagraph capture", "capturing CUDA graphs ran out of memory", "cuda graph 捕获失败".
_CAPTURE = (
    r"(?:cuda[\s_-]?graphs?|cudagraphs?|graph)[\s_-]+captur(?:e|ing)|"
    r"captur(?:e|ing)\s+(?:the\s+)?(?:model\s+for\s+)?(?:cuda[\s_-]?graphs?|cudagraphs?)|"
    r"(?:cuda[\s_-]?graphs?|cudagraphs?)\s*(?:的)?\s*捕获"
)
_CAPTURE_FAILED = re.compile(
    rf"(?:{_CAPTURE})[^.;!?\n]{{0,60}}?(?:\bfail(?:s|ed|ing|ure)?\b|\berrors?\b|\bcrash(?:es|ed)?\b|"
    r"(?<![A-Za-z])OOM|\bout\s+of\s+memory\b|失败|报错|显存不足|爆显存)|"
    rf"(?:\bfail(?:s|ed|ure)?\b|(?<![A-Za-z])OOM(?:s|'?d)?|\bout\s+of\s+memory\b|失败|报错|显存不足|爆显存)"
    rf"[^.;!?\n]{{0,30}}?\b(?:during|while|when|in|at)\s+(?:the\s+)?(?:{_CAPTURE})",
    _IA,
)


def graph_capture_failed(text: object) -> bool:
    """Whether a sentence reports CUDA-graph capture failing (not a hedge, a question or
    vLLM's own hint "If out-of-memory error occurs during cudagraph capture, ..."). Never
    raises."""
    if not isinstance(text, str) or not text.strip():
        return False
    try:
        return any(
            _reports(sentence) and _CAPTURE_FAILED.search(sentence)
            for sentence in _sentences(text[:_MAX_CHARS])
        )
    except Exception:
        return False
