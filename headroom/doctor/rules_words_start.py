"""A start said to fail, in words only, with a model whose own context is long.

A third of the field's threads give only a title, and a common one says a model does not
start, with no error text: "[Bug]: vllm on langchain does not work for llama3.1",
"Qwen2.5-VL-7B failed to start with 3090 24GB with V0 engine by default" (gpustack#1800),
"run qwen-1.5-4b-chat with vllm worker failed due to" (FastChat#3177). Started without
--max-model-len, vLLM takes the model's own length (Llama 3.1: 131,072; Qwen2.5: 32,768 and
more with rope scaling; GLM-4-9B-chat: 131,072), and the start then needs one request of that
length in the KV cache (V0 worker.py raise_if_cache_size_invalid: "The model's max seq len
(N) is larger than the maximum number of tokens that can be stored in KV cache"; V1
kv_cache_utils.py _check_enough_kv_cache_memory: "To serve at least one request with the
models's max seq len ...") and, in V0 without chunked prefill, a profile of one whole
prefill of it: the failure those threads quote when they paste the log, and the length their
answers cut.

Step 4, a condition (ranked as rules_long_context's assumed length is): when the words say
the start fails and name no cause (no error line, no OOM or KV shortage in words, no hang),
the log is a title or a sentence (three lines at most), the words name no other stage (weight
loading, a tokenizer, an install, a download, NCCL), and the length in force is the
model's own, over vLLM's 32K threshold (oom_lengths.LONG_CONTEXT), as the command, the
model's config or its name says (a bare family name, "llama3.1", by the length every model of
that family in the built-in table shares): lower max_model_len to 32K. A --max-model-len given, a
length of 32K or less, or a model the words do not name: nothing (the failure has no read
cause). Never a wrong direction: a shorter max_model_len is the cut every cause above asks for.
"""

from __future__ import annotations

import re

from headroom.doctor import actions as A
from headroom.doctor.findings import Finding
from headroom.doctor.model_table import find_model, known_model_names
from headroom.doctor.oom_lengths import (
    LONG_CONTEXT,
    Length,
    derived_length,
    length_in_force,
    model_in_words,
)
from headroom.probes.symptom_facts import WordFacts
from headroom.probes.symptom_hang import hang_words

_WORDS_MAX_LINES = 3  # a title or a sentence, as in doctor/context.py
# The start said to fail: "does not work", "fails to start", "failed", "cannot run", "报错",
# "启动失败", "跑不起来" (the "[Bug]" tag of an issue template alone says nothing).
_FAILS = re.compile(
    r"\b(?:does(?:n't|\s+not)\s+work|not\s+working|(?:fails?|failed|failing)(?:\s+to\s+"
    r"(?:start|load|run|launch|serve|initiali[sz]e))?|won't\s+(?:start|load|run))\b|"
    r"报错|失败|出错|起不来|跑不起来|跑不了|用不了|无法(?:部署|运行|启动|加载)",
    re.IGNORECASE,
)
# A stage or a cause the words name that is not the KV cache's or the profile's: "failing
# during VLLM weight_loader" (vllm#11765), a tokenizer, an install, a download, NCCL.
_OTHER_CAUSE = re.compile(
    r"weight[_ ]?loader|load(?:ing)?\s+(?:the\s+)?(?:weights?|checkpoint|state[_ ]dict)|tokeni[sz]er|"
    r"chat[_ ]template|\bimport|install|\bbuild|compil|download|\bpip\b|\bdriver\b|\bnccl\b|"
    r"\bdocker\b|\bkernel\b|下载|安装|编译|导入|权重加载|加载权重",
    re.IGNORECASE,
)
ID = "words-failed-start-long-length"
_SPLIT = re.compile(r"[^a-z0-9.]+|(?<=[a-z])(?=\d)")


def _norm(name: str) -> str:
    """ "llama3.1" / "Llama-3.1" / "llama 3.1" -> "llama-3.1" (family and version apart)."""
    last = name.rstrip("/").split("/")[-1].lower()
    return "-".join(p for p in _SPLIT.split(last) if p)


def family_length(name: str) -> Length | None:
    """The length every model of the family a bare name names shares in the built-in table
    ("llama3.1": Llama-3.1-8B, -70B and -405B are all 131,072), or None when the table has
    fewer than two of them or they differ ("qwen2.5": 32,768, its VL models 128,000)."""
    key = _norm(name)
    if not key or not any(ch.isdigit() for ch in key):
        return None
    lengths = set()
    members = 0
    for known in known_model_names():
        norm = _norm(known)
        if norm == key or norm.startswith(key + "-"):
            shape = find_model(known)
            lengths.add(derived_length(shape) if shape is not None else None)
            members += 1
    if members < 2 or len(lengths) != 1 or None in lengths:
        return None
    tokens = lengths.pop()
    assert tokens is not None
    return Length(tokens, f"the model's own ({name}: every {name} model the table has)", False)


def _said_to_fail(words: WordFacts) -> bool:
    said = words.cannot_run or bool(_FAILS.search(words.text))
    return said and not _OTHER_CAUSE.search(words.text)


def failed_start_long_length(ctx) -> list[Finding]:
    """A failed start said in words, with the model's own long length in force (module doc)."""
    words: WordFacts | None = getattr(ctx, "words", None)
    if words is None or not words.text or not _said_to_fail(words):
        return []
    if ctx.events or len(ctx.raw_lines) > _WORDS_MAX_LINES:
        return []  # a line the log reader knows, or a pasted log: its rules speak
    if hang_words(ctx.raw_lines, ctx.events) is not None:
        return []  # a hang: rules_hang's
    if ctx.knobs.max_model_len or ctx.known("max_model_len"):
        return []  # a length given: not the model's own
    named = model_in_words(words.text) or (words.model_names[0] if words.model_names else None)
    if named is None and ctx.inputs.command is None and ctx.inputs.model is None:
        return []  # the words name no model: nothing says which length is in force
    length = length_in_force(ctx, named)
    if length is None and words.model_names:
        length = family_length(words.model_names[0])
    if length is None or length.chosen or length.tokens <= LONG_CONTEXT:
        return []
    evidence = (
        words.text[:400],
        f"the words say the start fails and name no cause; the max_model_len in force is "
        f"{length.source}: {length.tokens:,} tokens",
        "vLLM needs one request of max_model_len in the KV cache at start-up (and V0 without "
        "chunked prefill profiles one whole prefill of it): the failure threads without a "
        f"log quote once they paste it, above {LONG_CONTEXT:,} tokens",
    )
    action = A.lower_max_model_len(
        LONG_CONTEXT, "one request of the model's own length must fit the KV cache at start-up"
    )
    return [
        Finding(
            ID,
            4,
            "warning",
            f"The start fails, if max_model_len was left at the model's {length.tokens:,}",
            evidence,
            (action,),
        )
    ]


RULES = (failed_start_long_length,)
