"""Field extractors for vLLM log lines: the numbers inside OOM messages, stats lines,
profiling summaries, config dumps. Used by vllm_log_patterns' rules."""

from __future__ import annotations

import re


def num(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def to_int(text: str | None) -> int | None:
    value = num(text)
    return int(value) if value is not None else None


UNIT_GIB = {"B": 1 / 2**30, "BYTES": 1 / 2**30, "KIB": 1 / 2**20, "MIB": 1 / 2**10,
             "GIB": 1.0, "TIB": 2**10, "KB": 1e3 / 2**30, "MB": 1e6 / 2**30, "GB": 1e9 / 2**30}  # fmt: skip


def to_gib(number: str | None, unit: str | None) -> float | None:
    value = num(number)
    if value is None:
        return None
    return round(value * UNIT_GIB.get((unit or "GiB").upper(), 1.0), 6)


def oom_fields(match: re.Match[str]) -> dict[str, object]:
    text = match.string
    out: dict[str, object] = {}
    tried = re.search(r"Tried to allocate ([\d.]+) ?(bytes|[KMGT]iB|[KMGT]B)", text)
    if tried:
        out["tried_gib"] = to_gib(*tried.groups())
    new = re.search(
        r"GPU (\d+) has a total capac\w* of ([\d.]+) ?(bytes|[KMGT]iB) of which ([\d.]+) ?(bytes|[KMGT]iB) is free",
        text,
    )
    if new:
        out["gpu"] = int(new.group(1))
        out["total_gib"] = to_gib(new.group(2), new.group(3))
        out["free_gib"] = to_gib(new.group(4), new.group(5))
    this = re.search(r"this process has ([\d.]+) ?(bytes|[KMGT]iB) memory in use", text)
    if this:
        out["process_gib"] = to_gib(*this.groups())
    other = re.search(r"Process (\d+) has ([\d.]+) ?(bytes|[KMGT]iB) memory in use", text)
    if other:
        out["pid"] = int(other.group(1))
        out.setdefault("process_gib", to_gib(other.group(2), other.group(3)))
    # Every process PyTorch lists on the GPU: more than one means another job shares it.
    sizes = [
        gib
        for number, unit in re.findall(
            r"Process \d+ has ([\d.]+) ?(bytes|[KMGT]iB) memory in use", text
        )
        if (gib := to_gib(number, unit)) is not None
    ]
    if sizes:
        out["process_count"] = len(sizes)
        out["largest_process_gib"] = max(sizes)
    pools = re.search(r"([\d.]+) ?(bytes|[KMGT]iB) allocated in private pools", text)
    if pools:
        out["graph_pools_gib"] = to_gib(*pools.groups())  # CUDA-graph memory
    old = re.search(
        r"\(GPU (\d+); ([\d.]+) ?([KMGT]iB) total capacity; ([\d.]+) ?([KMGT]iB) already allocated; "
        r"([\d.]+) ?([KMGT]iB) free",
        text,
    )
    if old:
        out["gpu"] = int(old.group(1))
        out["total_gib"] = to_gib(old.group(2), old.group(3))
        out["process_gib"] = to_gib(old.group(4), old.group(5))
        out["free_gib"] = to_gib(old.group(6), old.group(7))
    if "Failed to load model" in text:
        out["phase"] = "load"
    warm = re.search(r"warming up (sampler|pooler).*?with (\d+) dummy requests", text)
    if warm:
        out["phase"] = f"{warm.group(1)} warmup"
        out["num_reqs"] = int(warm.group(2))
    return out


def stats_fields(match: re.Match[str]) -> dict[str, object]:
    text = match.string
    out: dict[str, object] = {}
    engine = re.match(r"\s*Engine (\d+):", text)
    if engine:
        out["engine"] = int(engine.group(1))
    for key, pattern in STATS_PARTS:
        found = pattern.search(text)
        if found:
            value = num(found.group(1))
            if key in ("kv_cache_usage", "prefix_cache_hit_rate"):
                out[key] = round(value / 100, 6) if value is not None else None
            elif key.endswith("_tps"):
                out[key] = value
            else:
                out[key] = int(value) if value is not None else None
    return out


STATS_PARTS = [
    ("prompt_tps", re.compile(r"Avg prompt throughput: ([\d.]+)")),
    ("generation_tps", re.compile(r"Avg generation throughput: ([\d.]+)")),
    ("running", re.compile(r"Running: (\d+)")),
    ("waiting", re.compile(r"(?:Waiting|Pending): (\d+)")),
    ("swapped", re.compile(r"Swapped: (\d+)")),
    ("preemptions", re.compile(r"Preemptions: (\d+)")),
    ("kv_cache_usage", re.compile(r"(?:GPU|[A-Z]+) KV cache usage: ([\d.]+)%")),
    ("prefix_cache_hit_rate", re.compile(r"(?<!External )Prefix cache hit rate: ([\d.]+)%")),
]


def non_default_args_fields(match: re.Match[str]) -> dict[str, object]:
    import ast  # only for this one line per start-up

    raw = match.group("args").strip()
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return {"raw": raw}
    return {"args": value} if isinstance(value, dict) else {"raw": raw}


# A literal first keeps each search fast on a config line of several thousand characters
# (a leading \b would make the regex engine try every position); the word boundary before
# the key is checked by hand instead.
_CONFIG_KEYS = {
    key: re.compile(rf"{key}=({value})")
    for key, value in (
        ("tensor_parallel_size", r"\d+"), ("pipeline_parallel_size", r"\d+"),
        ("data_parallel_size", r"\d+"), ("max_seq_len", r"\d+"), ("dtype", r"[\w.]+"),
        ("kv_cache_dtype", r"[\w.]+"), ("quantization", r"[\w.]+"),
        ("device_config", r"[\w.]+"), ("enforce_eager", r"[\w.]+"),
    )
}  # fmt: skip
_WORD_CHAR = re.compile(r"\w")


def _config_value(text: str, pattern: re.Pattern[str]) -> str | None:
    """The first `key=value` of the pattern whose key starts a word (as \\bkey=value)."""
    for found in pattern.finditer(text):
        start = found.start()
        if start == 0 or not _WORD_CHAR.match(text, start - 1):
            return found.group(1)
    return None


def engine_config_fields(match: re.Match[str]) -> dict[str, object]:
    text = match.string
    out: dict[str, object] = {"version": match.group("version")}  # None before 0.4
    model = re.search(r"model='([^']*)'", text)
    if model:
        out["model"] = model.group(1)
    for key, pattern in _CONFIG_KEYS.items():
        value = _config_value(text, pattern)
        if value is not None:
            out[key] = int(value) if key.endswith(("_size", "_len")) else value
    return out


def worker_died_fields(match: re.Match[str]) -> dict[str, object]:
    found = match.groupdict()
    out: dict[str, object] = {
        "process": found["process"] or found["process2"],
        "pid": to_int(found["pid"]),
        "exit_code": to_int(found["exit_code"] or found["exit_code2"]),
        "message": found["message"],
    }
    return out


def v0_profile_fields(match: re.Match[str]) -> dict[str, object]:
    """V0 (0.6-0.7) memory profiling lines: key=valueGiB pairs, or the sentence form."""
    text = match.string
    out: dict[str, object] = {}
    for key, name in (("total_gpu_memory", "total_gib"), ("peak_torch_memory", "peak_torch_gib"),
                      ("non_torch_memory", "non_torch_gib"), ("kv_cache_size", "kv_gib"),
                      ("initial_memory_usage", "initial_usage_gib")):  # fmt: skip
        found = re.search(rf"\b{key}=(-?[\d.]+)GiB", text)
        if found:
            out[name] = float(found.group(1))
    util = re.search(r"gpu_memory_utilization[=\s(]+([\d.]+)", text)
    if util:
        out["utilization"] = float(util.group(1))
    for pattern, name in ((r"model weights take ([\d.]+)GiB", "weights_gib"),
                          (r"non_torch_memory takes ([\d.]+)GiB", "non_torch_gib"),
                          (r"activation peak memory takes ([\d.]+)GiB", "activation_gib"),
                          (r"reserved for KV Cache is (-?[\d.]+) ?GiB", "kv_gib"),
                          (r"total_gpu_memory \(([\d.]+)GiB\)", "total_gib")):  # fmt: skip
        found = re.search(pattern, text)
        if found:
            out[name] = float(found.group(1))
    return out


def config_error_fields(match: re.Match[str]) -> dict[str, object]:
    message = match.group("message").strip()
    out: dict[str, object] = {"message": message}
    longer = re.search(
        r"User-specified max_model_len \((\d+)\) is greater than the derived max_model_len \((\w+)=(\d+)",
        message,
    )
    if longer:
        out["max_model_len"] = int(longer.group(1))
        out["derived_max_model_len"] = int(longer.group(3))
        out["derived_from"] = longer.group(2)
    return out


def unrecognized_fields(match: re.Match[str]) -> dict[str, object]:
    return {"args": match.group("args").split()}


_TRANSPORT_CLASS = {"P2P": "p2p", "SHM": "shm", "direct shared memory": "shm",
                    "NET/Socket": "net_socket", "NET/IB": "net_ib"}  # fmt: skip


def nccl_transport_fields(match: re.Match[str]) -> dict[str, object]:
    transport = match.group("transport")
    prefix = transport.split("/")[0] if transport.startswith(("P2P", "SHM")) else transport
    return {
        "channel": int(match.group("channel")),
        "src": int(match.group("src")),
        "dst": int(match.group("dst")),
        "direction": match.group("direction"),
        "transport": transport + (match.group("detail") or ""),
        "path": _TRANSPORT_CLASS.get(prefix, "other"),  # p2p | shm | net_socket | net_ib
    }


def kv_reserved_fields(match: re.Match[str]) -> dict[str, object]:
    return {"free_gib": num(match.group(1)), "kv_gib": num(match.group("kv_gib"))}


def v0_max_seq_len_fields(match: re.Match[str]) -> dict[str, object]:
    # V0 names the KV cache's token capacity where V1 names an estimate: the same number
    tokens = int(match.group("estimated_max_len"))
    return {"max_seq_len": int(match.group("max_seq_len")), "estimated_max_len": tokens,
            "kv_tokens": tokens}  # fmt: skip


def divide_fields(match: re.Match[str]) -> dict[str, object]:
    """vLLM's divide(kv_heads, tp) assertion: "{numerator} is not divisible by {denominator}"."""
    numerator, denominator = int(match.group("numerator")), int(match.group("denominator"))
    return {"kv_heads": numerator, "tp": denominator, "numerator": numerator,
            "denominator": denominator}  # fmt: skip


def nccl_error_fields(match: re.Match[str]) -> dict[str, object]:
    return {"reason": (match.group("reason") or match.group("reason2") or "").strip()}


_REFUSAL_PARTS = (
    ("max_seq_len", re.compile(r"max seq len \((\d+)\)")),
    ("needed_gib", re.compile(r"([\d.]+) ?Gi?B KV cache is needed")),
    ("available_gib", re.compile(r"available KV cache memory \(([\d.]+) ?Gi?B\)")),
    ("estimated_max_len", re.compile(r"estimated maximum model length is (\d+)")),
)


def v1_refusal_fields(match: re.Match[str]) -> dict[str, object]:
    """V1's "To serve at least one request with the model's max seq len (N), (X GiB KV cache
    is needed, which is larger than the available KV cache memory (Y GiB). Based on the
    available memory, the estimated maximum model length is M." Each part is read alone: a
    pasted log often wraps it over several lines."""
    out: dict[str, object] = {}
    for key, pattern in _REFUSAL_PARTS:
        found = pattern.search(match.string)
        if found:
            value = num(found.group(1))
            out[key] = value if key.endswith("_gib") else to_int(found.group(1))
    return out


# The catalog names its extractors; these are they.
EXTRACTORS = {
    "oom": oom_fields,
    "stats": stats_fields,
    "non_default_args": non_default_args_fields,
    "engine_config": engine_config_fields,
    "worker_died": worker_died_fields,
    "v0_profile": v0_profile_fields,
    "config_error": config_error_fields,
    "unrecognized": unrecognized_fields,
    "nccl_transport": nccl_transport_fields,
    "kv_reserved": kv_reserved_fields,
    "v0_max_seq_len": v0_max_seq_len_fields,
    "divide": divide_fields,
    "nccl_error": nccl_error_fields,
    "v1_refusal": v1_refusal_fields,
}
