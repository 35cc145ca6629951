"""Words that say more GPUs (a larger tensor-parallel size) made vLLM slower, or no faster.

"[Bug]: When I inference with a 1b model, tp2 latency is greater than tp1" (vllm#6027),
"[Question] Why does using multiple gpus lead to slower performance?" (vllm#689), "I can not
improve throughput with tensor-parallel on multi-gpus." (vllm#1873), "tensor-parallel-size=2
second token latency is higher than tensor_parallel_size=1" (HabanaAI/vllm-fork#204). The
maintainers' answer is the same in each: "The cost of inter-GPU communication outweighs the
parallelisation of the compute for smaller models" (vllm#689), "Tensor parallel does not
improve the throughput of small models as the cost inter-GPU communication dominates"
(vllm#1873), "For a 1B model, TP overhead might outweigh benefits" (vllm#6027).

The sentence must name both the parallel side (TP N, tensor parallel, multiple / more / N
GPUs) and the speed (slower, a latency higher or greater, no speed-up, not faster, cannot
improve throughput). Not it: a hang, an OOM, a load or a start that is slow, a negation.
Never raises; bounded.
"""

from __future__ import annotations

import re

__all__ = ["tp_slower"]

_IA = re.IGNORECASE | re.ASCII
_MAX_CHARS = 2000

_PARALLEL = (
    r"(?:\btp\s*=?\s*[2-9]\d*\b|\btp[2-9]\b|tensor[-_ ]?parallel(?:ism|[-_ ]size)?|"
    r"\b(?:multiple|multi|more|several|two|2|4|8)[- ]?(?:gpus|cards)\b|\bmulti-?gpus?\b|多卡|多张卡)"
)
_SLOWER = (
    r"(?:\bslower\b|\bslows?\s+down\b|\blatency\s+(?:is\s+|was\s+|gets?\s+)?(?:much\s+)?"
    r"(?:higher|greater|larger|worse|longer)\b|\bhigher\s+latency\b|\bno\s+(?:speed[- ]?up|"
    r"improvement|faster)\b|\bnot\s+(?:any\s+)?faster\b|\b(?:can\s?not|can't|cannot|doesn't|does\s+not|"
    r"didn't|did\s+not)\s+(?:improve|increase|speed\s+up)\b|更慢|变慢|反而慢|没有加速|没有提升)"
)
_SAID = re.compile(
    rf"{_PARALLEL}[^.;!?。；！？]{{0,80}}?{_SLOWER}|{_SLOWER}[^.;!?。；！？]{{0,80}}?{_PARALLEL}",
    _IA,
)
# Another kind of slowness or trouble in the sentence: a start, a load, a hang, an OOM.
_OTHER = re.compile(
    r"\b(?:load(?:ing)?|start(?:up|s|ing)?|download\w*|compil\w*|captur\w*|hangs?|stuck|"
    r"OOM|out\s+of\s+memory)\b|加载|启动|卡住",
    _IA,
)
_NEGATED = re.compile(r"\b(?:not|n't|never|no)\s+(?:\w+\s+){0,2}$", _IA)
_NOT_SLOWER = re.compile(r"\b(?:not|n't|never|no)\s+(?:much\s+|any\s+)?slower\b", _IA)
_SENTENCE_END = re.compile(r"(?<=[;!?。；！？])|\n|\.(?=\s|$)")


def tp_slower(text: object) -> bool:
    """Whether a sentence of the text says more GPUs (TP) made vLLM slower or no faster
    (module doc). Never raises."""
    if not isinstance(text, str) or not text.strip():
        return False
    try:
        for sentence in _SENTENCE_END.split(text[:_MAX_CHARS]):
            if not sentence or _OTHER.search(sentence) or _NOT_SLOWER.search(sentence):
                continue
            for match in _SAID.finditer(sentence):
                if not _NEGATED.search(sentence[: match.start()]):
                    return True
        return False
    except Exception:  # a reader of untrusted text must not stop the doctor
        return False
