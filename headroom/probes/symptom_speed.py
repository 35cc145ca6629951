"""Words that say decoding is slow, or that name dropping eager mode for speed.

vLLM's `--enforce-eager` trades decoding speed for memory and start-up time: its help says
"Always use eager-mode PyTorch. If False, will use eager mode and CUDA graph in hybrid for
maximal performance and flexibility." (vllm/engine/arg_utils.py, read at 0.6.3, 0.7.1 and
0.7.2; ModelConfig's docstring at 0.9.2 says the same; the newest releases' ModelConfig: it
"disables both torch.compile and CUDA graphs"). The field's threads say the cost in a few
ways, each read here from one sentence:

- generation said to be slow: "the token generation on A6000 ... is very slow (11.2
  tokes/s)" (Project-MONAI/VLM-Surgical-Agent-Framework#5), "massively slows down decode"
  (scaleapi/llm-engine#851), a high inter-token latency, a low tokens/s, a low
  throughput (probes.symptom_throughput), "推理速度很慢";
- eager mode named as what to drop: "rm enforce eager from vllm deploy - prefer perf"
  (ai-dynamo/dynamo#2109), "stop forcing --enforce-eager" (scaleapi/llm-engine#851),
  "remove the --enforce-eager flag", "去掉 --enforce-eager".

Not it: a slow start, load, download, compile or capture (eager mode makes those faster),
structured (guided) output said to be slow (the grammar backend is the answer there), a
negation ("decoding is not slow"), a question about what the flag does ("will the inference
become slower?"), "without --enforce-eager" (OOM threads say it of the launch that failed).
Never raises; bounded.
"""

from __future__ import annotations

import re

from headroom.probes.prose_lines import sentences
from headroom.probes.symptom_throughput import throughput_limited

__all__ = ["decoding_slow", "eager_removal_named"]

_IA = re.IGNORECASE | re.ASCII
_MAX_CHARS = 2000

_EAGER = r"(?:--?enforce[-_\s]?eager|enforce[-_\s]eager(?:\s*=\s*True)?|eager\s+mode)"
_REMOVAL = re.compile(
    r"(?:\b(?:rm|remove[sd]?|removing|drop(?:s|ped|ping)?|strip(?:s|ped)?|get\s+rid\s+of|"
    r"stop(?:s|ped)?\s+(?:forcing|using|passing|setting|adding|enabling)|"
    r"no\s+longer\s+(?:force|forcing|use|using|pass|passing|set|setting)|"
    r"turn(?:s|ed|ing)?\s+off|disabl(?:e|es|ed|ing)|unset(?:s|ting)?)\s+"
    r"(?:the\s+|an?\s+|of\s+|`|\"|')*(?:\w+\s+){0,2}?" + _EAGER + r")"
    r"|(?:去掉|去除|删除|删掉|移除|关闭|不要|不用)\s*(?:了)?\s*" + _EAGER,
    _IA,
)
_GENERATION = (
    r"(?:(?:token|text|output)\s+generation|generation(?:\s+speed)?|decod(?:e|ing)(?:\s+speed)?|"
    r"inference(?:\s+speed)?|infer(?:s|ring)?|tokens?\s+per\s+second|tokens?/s|tok/s|output\s+speed|"
    r"response(?:s|\s+time)?|(?:the\s+)?speed|the\s+model|the\s+server|vllm)"
)
_DEGREE = (
    r"(?:(?:still|also)\s+)?(?:(?:very|so|too|really|extremely|quite|much|painfully|"
    r"incredibly|\d+x)\s+)?"
)
_EN = (
    # "the token generation ... is very slow", "decoding got slower", "inference is too slow"
    rf"\b{_GENERATION}\b[^.;!?]{{0,60}}?\b(?:is|was|are|were|gets?|got|becomes?|became|"
    rf"seems?|feels?|runs?|ran|stays?|remains?)\s+{_DEGREE}slow(?:er)?\b",
    # "why is decoding so slow"
    rf"\b(?:is|are|was|were)\s+{_GENERATION}\s+{_DEGREE}slow(?:er)?\b",
    # eager mode blamed: "--enforce-eager reduces performance", "eager mode slows decoding"
    rf"{_EAGER}[^.;!?]{{0,40}}?\b(?:slows?|slowed|reduces?|reduced|hurts?|kills?|degrades?|"
    r"degraded|lowers?|halves|cuts?)\s+(?:\w+\s+){0,2}?(?:perf(?:ormance)?|speed|throughput|"
    r"generation|decod(?:e|ing)|inference|tokens?/s)\b",
    # "slow token generation", "slow decoding", "slow inference"
    rf"\b{_DEGREE}slow(?:er)?\s+{_GENERATION}\b",
    # "slows down token generation", "massively slows down decode"
    rf"\bslow(?:s|ed|ing)?\s+down\s+(?:the\s+)?{_GENERATION}\b",
    # a high inter-token latency / TPOT
    r"\b(?:high|higher|long|longer|large|bad|poor|terrible)\s+(?:inter[-\s]token\s+latency|"
    r"ITL|TPOT|time\s+per\s+output\s+token|decode\s+latency|per[-\s]token\s+latency)\b",
    r"\b(?:inter[-\s]token\s+latency|ITL|TPOT|time\s+per\s+output\s+token)\s+(?:is\s+|was\s+)?"
    r"(?:very\s+|so\s+|too\s+|quite\s+)?(?:high|long|bad)\b",
    # "prefer perf", "for better performance", "the performance is poor"
    r"\bprefer\s+perf(?:ormance)?\b",
    r"\b(?:poor|bad|low|terrible|horrible)\s+(?:decode\s+|decoding\s+|inference\s+)?"
    r"perf(?:ormance)?\b",
    # "too slow when serving ...", "extremely slow": a slow start or load is ruled out below
    r"\b(?:too|very|extremely|painfully|incredibly|so)\s+slow\b",
    r"\b(?:better|faster|more)\s+(?:decode\s+|decoding\s+|inference\s+)?"
    r"(?:perf(?:ormance)?|speed)\b",
    r"\bperf(?:ormance)?\s+(?:is\s+|was\s+)?(?:very\s+|so\s+|too\s+)?(?:poor|bad|low|worse|"
    r"terrible|slow)\b",
)
_ZH = (
    r"(?:推理|生成|解码|输出|出字)[^。，,；;]{0,30}?(?:很|太|非常|特别|比较|极|极其)(?:慢|低)",
    r"(?:推理|生成|解码|输出|出字)(?:的)?(?:速度)?(?:慢|低)",
    r"速度(?:很|太|非常|特别|比较|极|极其)?慢",
)
_SLOW = re.compile("|".join(f"(?:{p})" for p in (*_EN, *_ZH)), _IA)
# What eager mode makes faster, not slower, and what has an answer of its own.
_OTHER_SLOWNESS = re.compile(
    r"\b(?:start(?:s|ed|ing|up|-up)?|boot(?:s|ing)?|load(?:s|ed|ing)?|download(?:s|ed|ing)?|"
    r"compil(?:e|es|ed|ing|ation)|captur(?:e|es|ed|ing)|warm[-\s]?up|cold[-\s]start|"
    r"guided|structured|json[-\s]schema|grammar|outlines|xgrammar|lm[-\s]format[-\s]enforcer)\b"
    r"|启动|加载|编译",
    _IA,
)
_NEGATED = re.compile(
    r"\b(?:not|n't|never|no|without)\s+(?:\w+\s+){0,3}$|(?:不|没有|没|并未)$", _IA
)
# A question about what the flag does ("will the inference become slower?"), not a report;
# "why is decoding so slow?" is a report.
_ASKED = re.compile(r"[?？]\s*$")
_COMPLAINT = re.compile(r"^\W*(?:and\s+|but\s+)?(?:why|how\s+come)\b|为什么|为啥", _IA)
_WITHOUT_EAGER = re.compile(r"\bwithout\s+(?:the\s+|`)?" + _EAGER, _IA)


def _sentences(text: object) -> list[str]:
    if not isinstance(text, str) or not text.strip():
        return []
    return sentences(text, _MAX_CHARS)


def _asked(sentence: str) -> bool:
    return bool(_ASKED.search(sentence)) and not _COMPLAINT.search(sentence)


def decoding_slow(text: object) -> bool:
    """Whether a sentence of the text says generation (decoding) is slow (module doc).
    Never raises."""
    try:
        for sentence in _sentences(text):
            if _asked(sentence) or _OTHER_SLOWNESS.search(sentence):
                continue
            for match in _SLOW.finditer(sentence):
                if not _NEGATED.search(sentence[: match.start()]):
                    return True
            if throughput_limited(sentence):
                return True
        return False
    except Exception:  # a reader of untrusted text must not stop the doctor
        return False


def eager_removal_named(text: object) -> bool:
    """Whether a sentence of the text names dropping eager mode ("rm enforce eager", "stop
    forcing --enforce-eager", "去掉 --enforce-eager"). Never raises."""
    try:
        for sentence in _sentences(text):
            if _asked(sentence) or _WITHOUT_EAGER.search(sentence):
                continue
            for match in _REMOVAL.finditer(sentence):
                if not _NEGATED.search(sentence[: match.start()]):
                    return True
        return False
    except Exception:  # a reader of untrusted text must not stop the doctor
        return False
