"""The max_model_len in force and whether the release's start-up profile runs it whole.

What sets the activation peak of vLLM's start-up profile, read in vLLM's source at tags:

- V0 (0.2-0.7, and 0.8-0.10 with VLLM_USE_V1=0) without chunked prefill sets
  max_num_batched_tokens to max(max_model_len, 2048) (config.py SchedulerConfig), and
  profile_run (worker/model_runner.py) runs one step of that many tokens: the whole
  max_model_len in one prefill. Its MLP tensors scale with it (vllm#2666's 1.75 GiB at 32K).
- From 0.5.4 (PR #6666, 2024-07-23; read in 0.5.4, 0.5.5, 0.6.3, 0.6.4, 0.6.6, 0.7.3, 0.8.5)
  V0 turns chunked prefill on by itself when max_model_len > 32K ("to avoid OOM errors in
  the initial memory profiling phase"), except with sliding window, speculative decoding,
  LoRA or prompt adapters (every release read), prefix caching or seqlen-agnostic (Mamba)
  layers (0.5.4/0.5.5 only), a multimodal model (0.6.3+) or ROCm and pooling models
  (0.6.6+). Left off above 32K it warns: "The model has a long context length (N). This may
  cause OOM errors during the initial memory profiling phase, or result in low performance
  due to small KV cache space. Consider setting --max-model-len to a smaller value."
- V1 (0.8+) keeps chunked prefill on and profiles max_num_batched_tokens (2048-16384); with
  --no-enable-chunked-prefill its SchedulerConfig also takes max(max_model_len, 2048)
  (config/scheduler.py, 0.10.2).

The max_model_len in force is the flag, else what the engine's config line logged
("max_seq_len=524288"), else what vLLM derives from the model's config
(_get_and_verify_max_len: max_position_embeddings and its kin, times rope_scaling's factor
unless the type is su/longrope/llama3; yarn scales original_max_position_embeddings), else
the context the model's name carries ("glm-4-9b-chat-1m", "Yarn-Mistral-7b-128k").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from headroom.doctor.model_table import find_model
from headroom.doctor.multimodal_models import MULTIMODAL_ARCHITECTURES
from headroom.doctor.rules_parallel import params_b_from_name
from headroom.doctor.rules_preflight import model_name
from headroom.doctor.versions import format_version, is_v1, parse_version

# vLLM's own threshold for a long context (arg_utils.py: use_long_context = max_model_len > 32768)
LONG_CONTEXT = 32768
AUTO_CHUNK_SINCE = (0, 5, 4)
# A context in a model's name: "-128k", "-1m", "-1M", "_200K" (k = 1024 tokens, m = 1024 k)
_CONTEXT_IN_NAME = re.compile(r"(?:^|[-_])(\d{1,4})([kKmM])(?=$|[-_])")
# vLLM's own warning (engine/arg_utils.py, 0.5.4-0.10.x) that it did not chunk a long context
_LONG_CONTEXT_WARNING = re.compile(
    r"The model has a long context length \((\d+)\)\. This may cause OOM errors during the "
    r"initial memory profiling phase"
)
# The engine's config line before 0.4 carried no release: "Initializing an LLM engine with
# config:" (0.2.7 and 0.3.3 llm_engine.py); from 0.4 "Initializing an LLM engine (v0.4.3) ..."
_PRE_04_ENGINE_LINE = "Initializing an LLM engine with config:"
# A model id in a sentence: "ModelScope/ZhipuAI/glm-4-9b-chat-1m", "Qwen2-7B"
_MODEL_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.]*(?:[-/][A-Za-z0-9_.]+)+", re.ASCII)


@dataclass(frozen=True)
class Length:
    """The max_model_len in force, where it comes from, and whether the user chose it."""

    tokens: int
    source: str
    chosen: bool


def context_from_name(name: str) -> int | None:
    """The context a model's name carries ("-128k" -> 131072, "-1m" -> 1048576), or None."""
    last = str(name).rstrip("/").split("/")[-1]
    found = _CONTEXT_IN_NAME.findall(last)
    if not found:
        return None
    number, unit = int(found[-1][0]), found[-1][1].lower()
    if unit == "m" and number > 16:
        return None  # "opt-125m", "SmolLM-360M": a parameter count, not a context
    tokens = number * (1024 if unit == "k" else 1024 * 1024)
    return tokens if tokens >= 4096 else None


def derived_length(shape) -> int | None:
    """vLLM's derived max_model_len for a config (see the module docstring)."""
    base = getattr(shape, "max_position_embeddings", None)
    scaling = getattr(shape, "rope_scaling", None) or {}
    if not base:
        return None
    kind = str(scaling.get("rope_type") or scaling.get("type") or "")
    factor = scaling.get("factor")
    if not isinstance(factor, int | float) or kind in {"su", "longrope", "llama3", "default", ""}:
        return int(base)
    if kind == "yarn" and isinstance(scaling.get("original_max_position_embeddings"), int):
        base = scaling["original_max_position_embeddings"]
    return int(base * factor)


def long_name_shape(name: str):
    """A long-context variant's shape: the table's row for the name less its context (and
    one word at either end: "Yarn-Mistral-7b-128k" -> "Mistral-7b"), with the same parameter
    count, at the context the name says. None when the table has no such base."""
    if not name:
        return None
    tokens = context_from_name(name)
    last = str(name).rstrip("/").split("/")[-1]
    shape = find_model(last)
    if shape is not None or tokens is None:
        return shape
    stripped = _CONTEXT_IN_NAME.sub("", last)
    parts = [p for p in re.split(r"[-_]", stripped) if p]
    params = params_b_from_name(last)
    for candidate in ("-".join(parts), "-".join(parts[1:]), "-".join(parts[:-1])):
        base = find_model(candidate) if candidate else None
        if base is not None and params_b_from_name(candidate) == params:
            return replace(base, name=last, max_position_embeddings=tokens, rope_scaling=None)
    return None


def model_in_words(text: str) -> str | None:
    """A model id a sentence names (one the table knows, or that carries a size or a
    context in its name), or None."""
    for word in _MODEL_WORD.findall(text or ""):
        last = word.rstrip("/.").split("/")[-1]
        if long_name_shape(last) or params_b_from_name(last) or context_from_name(last):
            return word.rstrip("/.")
    return None


def length_in_force(ctx, name: str | None = None) -> Length | None:
    """The max_model_len vLLM ran with, as far as the input says (module docstring)."""
    if ctx.knobs.max_model_len:
        return Length(ctx.knobs.max_model_len, "--max-model-len", True)
    logged = getattr(ctx.facts, "max_model_len", None)
    if logged:
        chosen = "max_model_len" in (getattr(ctx.facts, "non_default_args", None) or {})
        return Length(int(logged), f"the engine's config line (max_seq_len={logged})", chosen)
    own = derived_length(ctx.model_read) if ctx.model_read is not None and not name else None
    if own:
        return Length(own, f"the model's own ({ctx.model_read.name}'s config)", False)
    name = name or model_name(ctx)
    from_name = context_from_name(name) if name else None
    if from_name:
        return Length(from_name, f"the model's own, as its name says ({name})", False)
    # A model named in a person's words that the built-in table knows: the length vLLM
    # derives from its config ("DeepSeek-r1-awq" -> DeepSeek-R1's 163,840)
    table = derived_length(long_name_shape(name)) if name and ctx.model_read is None else None
    if table:
        return Length(table, f"the model's own ({name}, as the built-in table has it)", False)
    return None


def _chunked_flag(ctx) -> bool | None:
    value = ctx.arg("enable_chunked_prefill")
    if value is None:
        return None
    return str(value).lower() in {"true", "1", "yes", ""}


def _warned_long(ctx) -> int | None:
    for line in ctx.raw_lines[-2000:]:
        found = _LONG_CONTEXT_WARNING.search(line)
        if found:
            return int(found.group(1))
    return None


def release_of(ctx) -> tuple[tuple[int, int, int] | None, str]:
    """The release and how it reads in words; an engine config line of the 0.2/0.3 wording
    stands for 0.3.3 (the last release read that prints it)."""
    version = parse_version(ctx.version)
    if version is None and any(_PRE_04_ENGINE_LINE in line for line in ctx.raw_lines[:2000]):
        return (0, 3, 3), "0.2-0.3, as the engine's config line is worded"
    return version, format_version(version) if version else "unknown"


def _auto_chunk_left_off(ctx, version: tuple[int, int, int]) -> str | None:
    """Why V0's automatic chunked prefill (0.5.4+) stays off for this setup, or None."""
    shape = ctx.model_read
    window = getattr(shape, "sliding_window", None)
    own = getattr(shape, "max_position_embeddings", None)
    # A window below the model's length is a real one (Mistral v0.1's 4096); Qwen2 configs
    # name a window as long as the model and turn it off (use_sliding_window false).
    if window and own and window < own:
        return f"a sliding-window model ({window})"
    if ctx.arg("speculative_model") or ctx.arg("speculative_config"):
        return "speculative decoding"
    if ctx.arg("enable_lora"):
        return "LoRA"
    if version < (0, 6, 0) and ctx.arg("enable_prefix_caching"):
        return "prefix caching (0.5.x)"
    arch = getattr(shape, "architecture", None)
    if version >= (0, 6, 3) and arch in MULTIMODAL_ARCHITECTURES:
        return f"a multimodal model ({arch})"
    if version >= (0, 6, 6) and any("HIP out of memory" in e.line for e in ctx.of("cuda_oom")):
        return "ROCm"
    return None


def whole_prompt_profile(ctx, tokens: int) -> tuple[bool | None, str]:
    """Whether the start-up profile ran one whole `tokens`-long prefill (True), did not
    (False) or the input cannot say (None), and why, in words."""
    if ctx.knobs.max_num_batched_tokens:
        return False, "--max-num-batched-tokens sets the profiled step"
    chunked = _chunked_flag(ctx)
    if chunked:
        return False, "chunked prefill is on (--enable-chunked-prefill)"
    if chunked is False:
        return True, (
            "chunked prefill is off: vLLM profiles max(max_model_len, 2048) tokens in one step"
        )
    warned = _warned_long(ctx)
    if warned:
        return True, (
            f"vLLM warned that the long context ({warned:,}) 'may cause OOM errors during the "
            "initial memory profiling phase': chunked prefill stayed off"
        )
    version, release = release_of(ctx)
    if version is None:
        return None, "the release is not known"
    if is_v1(version):
        return False, f"V1 ({release}) profiles max_num_batched_tokens, not max_model_len"
    whole = f"V0 ({release}) without chunked prefill profiles one whole max_model_len prefill"
    if version < AUTO_CHUNK_SINCE or tokens <= LONG_CONTEXT:
        return True, whole
    left_off = _auto_chunk_left_off(ctx, version)
    if left_off:
        return True, f"{whole}: it turns chunked prefill on above 32K, but not for {left_off}"
    return False, f"V0 ({release}) turns chunked prefill on by itself above 32K"
