"""vLLM's argparse refused a flag ("api_server.py: error: unrecognized arguments: --max-concurrency
20", the catalog's unrecognized_arguments event): which flag, and what to do instead.

- A flag some release removed (read in the wheels' arg_utils.py / cli_args.py): drop it, and
  what replaced it, if anything (--enable-reasoning: the reasoning parser alone, 0.10+).
- A flag that is not vLLM's but names one of its knobs (vllm bench's --max-concurrency for the
  engine's --max-num-seqs, a British spelling, a KV size in GiB): that knob, with the value given.
- Anything else: the flag is not this release's (a typo, or one from a newer release).
"""

from __future__ import annotations

from headroom.doctor.findings import Action, Finding
from headroom.doctor.release_flags import replacement_action

# Removed flags, read in each wheel's engine/arg_utils.py: (the last release read that has it,
# the first read without it, what replaces it).
_REMOVED: dict[str, tuple[str, str, str]] = {
    "--enable-reasoning": ("0.9.2", "0.10.2", "--reasoning-parser alone turns reasoning on"),
    "--swap-space": ("0.17.1", "0.20.2", "the V1 engine has no CPU swap space"),
    "--use-v2-block-manager": ("0.9.2", "0.10.2", "the block manager it selected is the only one"),
    "--num-scheduler-steps": ("0.9.2", "0.10.2", "multi-step scheduling went with the V0 engine"),
    "--engine-use-ray": (
        "0.5.5",
        "0.6.4",
        "the engine runs in its own process; Ray runs the workers",
    ),
    "--max-seq-len-to-capture": (
        "0.10.2",
        "0.11.0",
        "the compilation config's cudagraph_capture_sizes",
    ),
    "--task": ("0.12.0", "0.13.0", "--runner (and --convert) replace it"),
}
# Flags that are not vLLM's own for one of its knobs: (knob, why).
_MEANT: dict[str, tuple[str, str]] = {
    "--max-concurrency": (
        "max_num_seqs",
        "the engine runs at most --max-num-seqs requests at once (--max-concurrency is `vllm "
        "bench serve`'s client option; the API server itself queues the rest)",
    ),
    "--gpu-memory-utilisation": (
        "gpu_memory_utilization",
        "the flag is spelt --gpu-memory-utilization",
    ),
    "--kv-cache-memory-gib": ("kv_cache_memory_bytes", "the KV cache size is given in bytes"),
    "--kv-cache-memory": ("kv_cache_memory_bytes", "the KV cache size is --kv-cache-memory-bytes"),
    "--max-seq-len": ("max_model_len", "the context length is --max-model-len"),
}


# --max-num-seqs defaults to 256 (V0 and V1's smaller GPUs) or more (1024 for V1's API server on
# large GPUs; engine/arg_utils.py 0.2.7-0.33.0): a value below 256 lowers it in any release.
_MIN_DEFAULT_SEQS = 256


def _flags(args) -> list[tuple[str, str | None]]:
    """(flag, its value or None) from the words argparse refused."""
    words = [str(w) for w in (args or [])]
    out: list[tuple[str, str | None]] = []
    for i, word in enumerate(words):
        if not word.startswith("--"):
            continue
        flag, _, inline = word.partition("=")
        value = inline or (
            words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("-") else None
        )
        out.append((flag.replace("_", "-"), value))
    return out


def _number(text: str | None):
    try:
        value = float(text) if text is not None else None
    except ValueError:
        return None
    return int(value) if value is not None and value.is_integer() else value


def unrecognized_arguments(ctx) -> list[Finding]:
    events = ctx.of("unrecognized_arguments")
    if not events:
        return []
    event = events[0]
    flags = _flags(event.fields.get("args"))
    evidence = [event.line.strip()[:400]]
    acts = []
    for flag, value in flags:
        # argparse also takes a flag's unambiguous start: "--enable-reason" for the removed one
        flag = next((f for f in _REMOVED if len(flag) >= 8 and f.startswith(flag)), flag)
        if flag in _REMOVED:
            last, gone, instead = _REMOVED[flag]
            evidence.append(
                f"{flag} is in vLLM up to {last} and gone by {gone} (the releases read): drop it; "
                f"{instead}"
            )
            replaced = replacement_action(flag, value)  # the flag vLLM named in its place
            if replaced is not None:
                acts.append(replaced)
        elif flag in _MEANT:
            knob, why = _MEANT[flag]
            number = _number(value) if knob != "kv_cache_memory_bytes" else None
            direction = "set"
            if knob == "max_num_seqs" and isinstance(number, int) and number < _MIN_DEFAULT_SEQS:
                direction = "lower"  # below every release's default: a limit, lowered
            acts.append(Action(knob, direction, number, why, ""))
    if not acts and len(evidence) == 1:
        evidence.append(
            "this release does not have the flag: a typo, or a flag of another release "
            "(`vllm serve --help` lists this one's)"
        )
    title = "vLLM rejected a flag" + (f": {flags[0][0]}" if flags else "")
    return [Finding("unrecognized-arguments", None, "error", title, tuple(evidence), tuple(acts))]


RULES = (unrecognized_arguments,)
