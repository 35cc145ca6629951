"""From a fix vLLM's message names (probes.vllm_hints.NamedFix) to an Action the doctor can
propose: the knob checked against the names vLLM really has, the value typed as the flag
takes it, the way a "set" turns a number, and the memory doctrine.

Names: a flag or engine-arg name must be one of vllm_cmd.flags' table (vLLM 0.32's parser
and the older flags it keeps) or of hint_names.OLDER_OPTIONS (the options earlier releases'
parsers added); an environment variable one vLLM reads (hint_names.ENV_NAMES) or NCCL's
own (NCCL_*). Anything else a message names in backticks (a method, a request field, a
backend's name) is no knob.

Memory doctrine (README "The five steps"): a KV shortage wants more KV budget, a CUDA OOM
less memory taken. A message may name both ways or the wrong one for what the log shows ("Try
increasing `gpu_memory_utilization`" printed next to a CUDA OOM): a memory knob is turned
only the way the failure in the log wants it, and dropped otherwise (the finding says so).
"""

from __future__ import annotations

from dataclasses import dataclass

from headroom.doctor.hint_names import ENV_NAMES, OLDER_OPTIONS
from headroom.probes.vllm_hints import NamedFix
from headroom.vllm_cmd.flags import FLAGS_BY_DEST, FLAGS_BY_OPTION, FlagSpec

__all__ = ["KNOWN_NAMES", "ResolvedFix", "doctrine_problem", "memory_failure", "resolve"]

# The engine-arg names a bare or quoted lower-case name in a message may be.
KNOWN_NAMES: frozenset[str] = frozenset(FLAGS_BY_DEST) | frozenset(OLDER_OPTIONS)

# Which way each memory knob goes for each failure (README's table; the KV/OOM rules).
_KV_WAY = {"gpu_memory_utilization": "raise", "kv_cache_memory_bytes": "raise",
           "max_model_len": "lower", "max_num_seqs": "lower", "max_num_batched_tokens": "lower",
           "tensor_parallel_size": "raise", "pipeline_parallel_size": "raise",
           "num_gpu_blocks_override": "raise", "VLLM_CPU_KVCACHE_SPACE": "raise"}  # fmt: skip
_OOM_WAY = {"gpu_memory_utilization": "lower", "kv_cache_memory_bytes": "lower",
            "max_model_len": "lower", "max_num_seqs": "lower", "max_num_batched_tokens": "lower",
            "tensor_parallel_size": "raise", "cpu_offload_gb": "raise", "swap_space": "lower",
            "enforce_eager": "set", "pipeline_parallel_size": "raise"}  # fmt: skip
_KV_EVENTS = ("no_cache_memory", "max_seq_len_exceeds_kv", "prompt_exceeds_kv")
_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


@dataclass(frozen=True)
class ResolvedFix:
    knob: str  # engine-arg name (underscores) or environment variable
    direction: str
    value: object | None
    spelled: str  # how a person writes it: "--trust-remote-code", "VLLM_USE_V1=0"
    remove: bool
    note: str = ""  # e.g. the releases an older option exists in


def resolve(fix: NamedFix, current: object | None = None) -> ResolvedFix | None:
    """The fix as an action on a real knob, or None when the name is no knob of vLLM's.
    `current`: the knob's value in force (the command's, or the release default), which
    turns a "set" of a number into a raise or a lower."""
    if fix.form == "env":
        return _env(fix)
    spec, older = _flag_spec(fix)
    if spec is None and older is None:
        return None
    dest = spec.dest if spec is not None else fix.knob
    value = _typed(fix, spec)
    direction = fix.direction
    number, now = _as_number(value), _as_number(current)
    if direction == "set" and number is not None and now is not None and number != now:
        direction = "raise" if number > now else "lower"
    option = spec.option if spec is not None else "--" + dest.replace("_", "-")
    spelled = option if value is None or isinstance(value, bool) else f"{option} {value}"
    if isinstance(value, bool) and not value and spec is not None and spec.kind == "bool":
        spelled = "--no-" + option[2:]
    note = ""
    if older is not None:
        note = f"{option} is an option of vLLM {older[0]}-{older[1]} (their parser)"
    return ResolvedFix(dest, direction, value, spelled, fix.remove, note)


def _env(fix: NamedFix) -> ResolvedFix | None:
    name = fix.knob
    if name not in ENV_NAMES and not name.startswith("NCCL_"):
        return None
    value = None if fix.remove else fix.value
    spelled = f"{name}={value}" if value is not None else name
    span = ENV_NAMES.get(name)
    note = f"{name} is read by vLLM {span[0]}-{span[1]}" if span else ""
    return ResolvedFix(name, fix.direction, value, spelled, fix.remove, note)


def _flag_spec(fix: NamedFix) -> tuple[FlagSpec | None, tuple[str, str] | None]:
    """The flag table's spec for the name (exact names only: a message's `--ipc=host` or
    `--shm-size` is Docker's, and no prefix of a vLLM flag), or the older releases' span."""
    dest = fix.knob
    spec = FLAGS_BY_DEST.get(dest) or FLAGS_BY_OPTION.get("--" + dest.replace("_", "-"))
    for named, other in (("disable_", "enable_"), ("enable_", "disable_")):
        if spec is None and dest.startswith(named):
            # 0.33's EnableDisableAction (utils/argparse_utils.py) pairs --enable-x with
            # --disable-x: either names the other one's knob, inverted
            paired = FLAGS_BY_DEST.get(other + dest[len(named) :])
            if paired is not None and paired.kind == "bool":
                return paired, None
    return spec, (OLDER_OPTIONS.get(dest) if spec is None else None)


def _typed(fix: NamedFix, spec: FlagSpec | None) -> object | None:
    """The value as the flag takes it (bool, int, float, str); None when the text gives none
    (or one of another type: "--max-model-len based on ..." is no length)."""
    raw = fix.value
    if spec is not None and spec.kind in ("bool", "flag"):
        if fix.remove:  # dropping the flag gives vLLM's default back (None: vLLM decides)
            return spec.default if spec.kind == "bool" else False
        on: bool | None = True
        if raw is not None:
            low = raw.lower()
            on = True if low in _TRUE else False if low in _FALSE else None
        if spec.dest != fix.knob and on is not None:  # --disable-x named for enable_x, or back
            on = not on
        return on
    if fix.remove or raw is None:
        return None
    kind = spec.type if spec is not None else "str"
    if kind == "int":
        number = _as_number(raw)
        return int(number) if number is not None and number.is_integer() else None
    if kind == "float":
        return _as_number(raw)
    return raw


def _as_number(value: object) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def memory_failure(ctx, message: str) -> str | None:
    """ "kv" or "oom": the memory failure the log (or the message itself) shows; "both" when
    it shows both; None when neither."""
    low = message.lower()
    kv = bool(ctx.of(*_KV_EVENTS)) or (
        "kv cache" in low and any(w in low for w in ("no available memory", "not enough",
                                                     "insufficient", "larger than the available"))
    )  # fmt: skip
    oom = bool(ctx.of("cuda_oom")) or "out of memory" in low or "outofmemory" in low
    if kv and oom:
        return "both"
    return "kv" if kv else "oom" if oom else None


def doctrine_problem(fix: ResolvedFix, failure: str | None) -> str | None:
    """Why the fix turns a memory knob against the failure the log shows, or None."""
    if failure is None or fix.remove:
        return None
    ways = {"kv": (_KV_WAY,), "oom": (_OOM_WAY,), "both": (_KV_WAY, _OOM_WAY)}[failure]
    for table in ways:
        want = table.get(fix.knob)
        if want is None:
            continue
        if fix.direction == "set" and want != "set":
            return f"{fix.knob} is set to a value whose way is unknown; a {_WORDS[failure]} wants it {want}ed"
        if fix.direction != want:
            return f"a {_WORDS[failure]} wants {fix.knob} {want}ed, not {fix.direction}d"
    return None


_WORDS = {"kv": "KV-cache shortage", "oom": "CUDA out-of-memory", "both": "KV shortage with an OOM"}
