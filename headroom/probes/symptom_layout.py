"""Words about the GPUs a model is laid out on: what people ask for, or report, of TP and sizes.
Four readers, each bounded and never raising (the text is untrusted).

Placement. Words that name Hugging Face's layer placement (device_map, max_memory) for vLLM.

Transformers/Accelerate place a model's layers over GPUs with `device_map="auto"` and cap each
GPU with `max_memory`; vLLM has neither (no such engine arg in any release): it splits a model
over GPUs with tensor_parallel_size, or pipeline_parallel_size where the GPU count does not
divide the heads. Threads: "No `device_map` option." (vllm-project/vllm#196, answered with
tensor_parallel_size), "--tensor-parallel-size vs device_map?" / "Does vllm support
device_map?" (vllm#1752), "Can vllm use a method similar to device_map in transformers ?"
(vllm#6601, answered `--pipeline-parallel-size 3` on three 4090s), "swift在部署的时候
--max_memory没生效" (modelscope/ms-swift#3363: "max_memory 这个参数只对infer_backend pt生效",
"vllm请使用tensor_parallel_size"). Never raises (the text is untrusted).

Quant wish. Words that ask for a quantized version of a model, so that it runs on the GPUs at hand.

"FP16 version is impossible to run on local GPU, I hope there will be GPTQ and AWQ versions,
please!!!" (QwenLM/Qwen3-VL#719), "WOuld be nice to have AWQ quantization, so we can run on
vLLM with a lower end GPU." (rubra-ai/rubra#119), "[Feature]: Support awq quantization on
Window?" (SystemPanic/vllm-windows#16), "有没有量化版本" (the Chinese shape of the ask). The
answers are a quantized checkpoint (AWQ, GPTQ, FP8) and vLLM's --quantization for it.

Not it: a failure with a quantized model ("AWQ model fails", "GPTQ error"), a statement that
one is used, a negation, and a quantized KV cache (--kv-cache-dtype is step 5). Never raises.

Tp slower. Words that say more GPUs (a larger tensor-parallel size) made vLLM slower, or no faster.

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

Length need. Words that ask what hardware a context length needs: the length is the requirement.

"请教glm4-9b-1M跑起来需要多少显存？ ... 请问一下需要多少显存才能跑支持max_model_len为1M的大模型？"
(zai-org/GLM-4#149), "用vllm部署，开启1M上下文，至少需要多少显存" (MiniMax-AI/MiniMax-M1#2),
"What's the minimum VRAM needed to use entire context length for Llama 3.1 70B" and "how many
nodes each having 8 H100s do I need ... at full context length" (vllm-project/vllm#8188). The
answers size the GPUs for that length (GLM-4#149: 8 H100 for 1M; MiniMax-M1#2: 8x141 GB, or
int8 experts on 8x96 GB; LargeWorldModel/LWM#7: 1 A100-80GB for 32K ... 8 for 512K), never a
shorter length: the person asked for this one.

The reader returns the length in tokens (K = 1,024, M = 1,048,576: 128K is 131,072 and 1M
1,048,576 in model configs), 0 for "the entire / full context length" (the model's own), or
None when the words ask no sizing question or name no length. Never raises (untrusted text).
"""

from __future__ import annotations

import re

from headroom.probes.prose_lines import said_unnegated

__all__ = ["length_wanted", "placement_named", "quantized_wanted", "tp_slower"]


# --- placement ------------------------------------------------------------------------------------

_MAX_CHARS = 2000

# `device_map`, `device-map`, `max_memory`, `--max_memory`; not `max_memory_usage` or a
# longer identifier around them.
_PLACEMENT = re.compile(r"(?<![\w.])-{0,2}(?:device[_-]map|max[_-]memory)(?![\w-])", re.I | re.A)


def placement_named(text: object) -> bool:
    """The words name device_map or max_memory (Hugging Face's placement options)."""
    if not isinstance(text, str) or not text.strip():
        return False
    try:
        return bool(_PLACEMENT.search(text[:_MAX_CHARS]))
    except Exception:  # a reader of untrusted text must not stop the doctor
        return False


# --- quant wish -----------------------------------------------------------------------------------

_IA = re.IGNORECASE | re.ASCII

_QUANT = (
    r"(?:AWQ|GPTQ|GGUF|int4|int8|w4a16|w8a8|4[- ]?bit|8[- ]?bit|quanti[sz]ed|quanti[sz]ation|"
    r"quants?)"
)

_WISH = (
    r"(?:hope|hoping|wish|would\s+(?:be\s+)?(?:nice|great|good|love|appreciate)|"
    r"(?:is|are)\s+there|will\s+there\s+be|any\s+plans?|plan(?:s|ning)?\s+to|when\s+will|"
    r"please\s+(?:add|release|provide|support|upload)|looking\s+for|request(?:ing)?|"
    r"can\s+(?:you|we)\s+(?:get|have|release|provide))"
)

_EN = (
    rf"\b{_WISH}\b[^.?!]{{0,60}}?\b{_QUANT}\b",
    # a feature request for a method: "[Feature]: Support awq quantization on Window?"
    rf"^\s*\[Feature\]:?\s*(?:please\s+)?(?:add\s+)?support\s+(?:for\s+)?{_QUANT}\b",
)

_ZH = (
    r"(?:有没有|是否有|有无|希望|能否|能不能|求|出一?个|提供|什么时候出)[^。？！?!]{0,20}"
    r"(?:量化|AWQ|GPTQ|int4|int8|INT4|INT8)",
)

_SAID = re.compile("|".join(f"(?:{p})" for p in (*_EN, *_ZH)), _IA | re.MULTILINE)

# A failure or a KV cache in the same sentence: not an ask for a checkpoint.
_NOT_ASK = re.compile(
    r"\b(?:error|errors|fail(?:s|ed|ing|ure)?|crash\w*|bug|broken|wrong|garbage|gibberish|"
    r"slow(?:er)?|kv[-_ ]cache|kv_cache_dtype)\b|报错|失败|错误|乱码",
    _IA,
)

_NEGATED = re.compile(r"\b(?:not|n't|never|no)\s+(?:\w+\s+){0,2}$", _IA)


def quantized_wanted(text: object) -> bool:
    """Whether a sentence of the text asks for a quantized version (module doc). Never
    raises."""
    return said_unnegated(text, _SAID, _NEGATED, max_chars=_MAX_CHARS, skip=(_NOT_ASK,))


# --- tp slower ------------------------------------------------------------------------------------

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

_TP_SLOWER_SAID = re.compile(
    rf"{_PARALLEL}[^.;!?。；！？]{{0,80}}?{_SLOWER}|{_SLOWER}[^.;!?。；！？]{{0,80}}?{_PARALLEL}",
    _IA,
)

# Another kind of slowness or trouble in the sentence: a start, a load, a hang, an OOM.
_OTHER = re.compile(
    r"\b(?:load(?:ing)?|start(?:up|s|ing)?|download\w*|compil\w*|captur\w*|hangs?|stuck|"
    r"OOM|out\s+of\s+memory)\b|加载|启动|卡住",
    _IA,
)

_NOT_SLOWER = re.compile(r"\b(?:not|n't|never|no)\s+(?:much\s+|any\s+)?slower\b", _IA)


def tp_slower(text: object) -> bool:
    """Whether a sentence of the text says more GPUs (TP) made vLLM slower or no faster
    (module doc). Never raises."""
    return said_unnegated(
        text, _TP_SLOWER_SAID, _NEGATED, max_chars=_MAX_CHARS, skip=(_OTHER, _NOT_SLOWER)
    )


# --- length need ----------------------------------------------------------------------------------

_MAX_TOKENS = 1 << 24  # 16M tokens: beyond any model's context

# A sizing question: how much memory, how many GPUs / nodes / cards.
_QUESTION = re.compile(
    r"(?:需要|要|得)多少(?:显存|张卡|块卡|卡|GPU|机器|资源)|至少(?:需要|要)[^。？?\n]{0,12}?(?:显存|卡|GPU)|"
    r"多少显存|几张卡|几块卡|"
    r"\bhow\s+much\s+(?:gpu\s+)?(?:memory|vram)\b|\bminimum\s+(?:gpu\s+)?(?:memory|vram)\b|"
    r"\bhow\s+many\s+(?:gpus|nodes|cards|h100s?|a100s?)\b|\bvram\s+(?:is\s+)?(?:needed|required)\b|"
    r"\b(?:memory|vram)\s+requirements?\b",
    _IA,
)

# A length named beside a context word: "max_model_len为1M", "1M上下文", "128k context",
# "context length of 131072".
_UNIT = r"(\d{1,7}(?:\.\d{1,2})?)\s*([kKmM])?(?![\w.])"

_CONTEXT_WORD = (
    r"(?:context(?:\s+length|\s+window)?|tokens?|上下文|长度|长文本|max[_\s-]*model[_\s-]*len)"
)

_LENGTH = re.compile(
    rf"(?:max[_\s-]*model[_\s-]*len|context(?:\s+length|\s+window)?|上下文(?:长度)?)"
    rf"\s*(?:为|=|:|of|是|到|to)?\s*{_UNIT}|"
    rf"(?<![\w.-]){_UNIT}\s*(?:的)?\s*{_CONTEXT_WORD}",
    _IA,
)

_FULL = re.compile(
    r"\b(?:entire|full|whole|maximum|max)\s+context(?:\s+length|\s+window)?\b|完整上下文|最大上下文",
    _IA,
)


def _tokens(number: str, unit: str | None) -> int | None:
    value = float(number)
    if unit:
        value *= 1024 if unit.lower() == "k" else 1024 * 1024
    tokens = int(value)
    # a bare number is a length only when it reads as one (4,096 and up)
    if not unit and tokens < 4096:
        return None
    return tokens if 0 < tokens <= _MAX_TOKENS else None


def length_wanted(text: object) -> int | None:
    """The context length (tokens) a sizing question asks for; 0 for the model's full
    length; None when the words ask no such thing."""
    if not isinstance(text, str) or not text.strip():
        return None
    words = text[:_MAX_CHARS]
    try:
        if not _QUESTION.search(words):
            return None
        found = set()
        for match in _LENGTH.finditer(words):
            groups = [g for g in match.groups()]
            number, unit = (
                (groups[0], groups[1]) if groups[0] is not None else (groups[2], groups[3])
            )
            if number is not None and (tokens := _tokens(number, unit)) is not None:
                found.add(tokens)
        if len(found) == 1:
            return found.pop()
        if not found and _FULL.search(words):
            return 0
    except Exception:  # a reader of untrusted text must not stop the doctor
        return None
    return None
