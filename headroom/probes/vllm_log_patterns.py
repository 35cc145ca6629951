"""Line-level recognition of vLLM (0.8 to 0.33), PyTorch and NCCL log lines.

Every rule is a cheap substring test first ("needles") and a regex only when a needle is
present, so a log that grows by megabytes costs little more than splitting it into lines.
Wordings come from vLLM's format strings (see ../shared/reference/vllm-facts.md sections
2 and 3), NCCL/PyTorch signatures (gpu-facts.md section 4) and the captured fixtures.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from headroom.probes.vllm_log_fields import (
    config_error_fields,
    engine_config_fields,
    nccl_transport_fields,
    non_default_args_fields,
    num,
    oom_fields,
    stats_fields,
    to_int,
    unrecognized_fields,
    v0_profile_fields,
    worker_died_fields,
)

__all__ = ["LogEvent", "classify_line", "split_prefix", "strip_ansi", "KINDS"]


@dataclass(frozen=True)
class LogEvent:
    """One recognised log line: what it means (`kind`), how bad, and the numbers in it."""

    kind: str
    severity: str  # "info" | "warning" | "error"
    line: str  # the line as read, colour codes removed
    fields: Mapping[str, object] = field(default_factory=dict)
    lineno: int | None = None


_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")

# "(EngineCore_DP0 pid=12) INFO 11-29 11:24:21 [core.py:133] message" (0.9+), the older
# "(VllmWorkerProcess pid=236) ERROR 08-23 08:25:25 multiproc_worker_utils.py:226] message",
# and both without the process part. VLLM_LOGGING_PREFIX may stand in front.
_PREFIX = re.compile(
    r"(?P<pre>.*?)(?:\((?P<proc>[^()\s]+) pid=(?P<pid>\d+)\)\s+)?"
    r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL)\s+\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+"
    r"\[?(?P<where>[\w./-]+:\d+)\]\s?"
)
_PROC_ONLY = re.compile(r"\s*\((?P<proc>[^()\s]+) pid=(?P<pid>\d+)\)\s?")
_LEVELS = ("DEBUG ", "INFO ", "WARNING ", "ERROR ", "CRITICAL ")


def strip_ansi(line: str) -> str:
    return _ANSI.sub("", line) if "\x1b" in line else line


def split_prefix(line: str) -> tuple[dict[str, str] | None, str]:
    """(prefix parts or None, message) for one vLLM log line."""
    match = _prefix_match(line)
    if match is None:
        return None, line
    parts = {k: v for k, v in match.groupdict().items() if v is not None and k != "pre"}
    # a relayed traceback line keeps its indentation after the prefix: keep it for _CODE_LINE
    return parts, line[match.end() :]


def _prefix_match(line: str) -> re.Match[str] | None:
    match = None
    if (
        "INFO " in line
        or "WARNING " in line
        or "ERROR " in line
        or any(
            level in line
            for level in _LEVELS[::4]  # DEBUG, CRITICAL: rare, tested last
        )
    ):
        match = _PREFIX.match(line, 0, min(len(line), 300))  # the prefix is short: bound the work
        if match is not None and len(match.group("pre")) > 40:
            match = None
    if match is None and "pid=" in line:
        # "(EngineCore_DP0 pid=8884) torch.OutOfMemoryError: ..." (a traceback relayed as is)
        match = _PROC_ONLY.match(line)
    return match


def _message(line: str) -> str:
    """The line without its prefix (split_prefix's message, without building the parts)."""
    match = _prefix_match(line)
    return line if match is None else line[match.end() :]


# ---------------------------------------------------------------------------------------
# Rules


@dataclass(frozen=True)
class _Rule:
    kind: str
    severity: str
    needles: tuple[str, ...]  # at least one must be a substring of the message
    pattern: re.Pattern[str] | None = None
    extract: Callable[[re.Match[str]], dict[str, object]] | None = None
    require_match: bool = True  # False: needles alone classify, the regex only adds fields


def _rule(kind, severity, needles, pattern=None, extract=None, require_match=True) -> _Rule:
    if isinstance(needles, str):
        needles = (needles,)
    compiled = re.compile(pattern) if pattern else None
    if compiled is not None and extract is None:
        extract = _groups
    return _Rule(kind, severity, tuple(needles), compiled, extract, require_match)


def _groups(match: re.Match[str]) -> dict[str, object]:
    """Named groups, numbers converted: *_gib/_s/_pct floats, counts ints, rest strings."""
    out: dict[str, object] = {}
    for key, raw in match.groupdict().items():
        if raw is None:
            continue
        if key.endswith(("_gib", "_s", "_pct", "utilization", "concurrency", "_tps")):
            out[key] = num(raw)
        elif key in ("device", "reason", "url", "version", "model", "message", "op", "path",
                     "args", "process", "method", "arch"):  # fmt: skip
            out[key] = raw.strip()
        else:
            out[key] = to_int(raw) if to_int(raw) is not None else raw
    return out


_GIB = r"([\d.]+) ?GiB"
# Order matters: the first rule whose needle and regex match wins, so specific causes come
# before the generic ones (a pydantic "Value error, Total number of attention heads ..." is
# heads_not_divisible, not config_error; "ValueError: To serve ..." is not just an exception).
RULES: tuple[_Rule, ...] = (
    # --- start-up facts --------------------------------------------------------------
    _rule("version", "info", "server version",
          r"vLLM (?:API )?server version (?P<version>\S+?),?(?: serving model (?P<model>\S+))?\s*$"),
    _rule("version", "info", "LLM engine (v",
          r"Initializing a V\d LLM engine \(v(?P<version>[^)\s]+)\) with config", engine_config_fields),
    _rule("version", "info", " version ", r"[█▀▄]\s+version\s+(?P<version>\S+)\s*$"),
    _rule("model", "info", " model ", r"[█▀▄]\s+model\s+(?P<model>\S+)\s*$"),
    _rule("non_default_args", "info", "non-default args:",
          r"non-default args: (?P<args>.*)$", non_default_args_fields),
    _rule("max_model_len", "info", "Using max model len", r"Using max model len (?P<max_model_len>\d+)"),
    _rule("max_model_len", "info", "Auto-fit max_model_len:",
          r"Auto-fit max_model_len: (?:reduced from (?P<reduced_from>\d+) to (?P<max_model_len>\d+)"
          r"|full model context length (?P<full>\d+) fits)"),
    _rule("weights_loaded", "info", ("Model loading took", "Loading model weights took"),
          r"(?:Model loading|Loading model weights) took (?P<weights_gib>[\d.]+) ?Gi?B"
          r"(?: memory)?(?: and (?P<load_s>[\d.]+) seconds?)?"),
    _rule("kv_memory_available", "info", "Available KV cache memory:",
          r"Available KV cache memory: (?P<kv_gib>[\d.]+) ?GiB"),
    _rule("kv_memory_reserved", "info", "as specified by kv_cache_memory_bytes",
          rf"Initial free memory {_GIB}, reserved (?P<kv_gib>[\d.]+) ?GiB memory for KV Cache",
          lambda m: {"free_gib": num(m.group(1)), "kv_gib": num(m.group("kv_gib"))}),
    _rule("kv_memory_reserved", "info", "for KV cache on node",  # the CPU backend
          r"Explicitly set \((?P<kv_gib>[\d.]+)/(?P<total_gib>[\d.]+)\) GiB for KV cache on node (?P<node>\d+)"),
    _rule("kv_cache_tokens", "info", "KV cache size:",
          r"(?:(?P<device>[A-Z][A-Za-z0-9]*(?: \+ host)?) )?KV cache size: (?P<tokens>[\d,]+) tokens"
          r"(?:, Maximum concurrency for (?P<per_request_tokens>[\d,]+) tokens per request: (?P<concurrency>[\d.]+)x)?"),
    _rule("max_concurrency", "info", "Maximum concurrency for",
          r"Maximum concurrency for (?P<per_request_tokens>[\d,]+) tokens per request: (?P<concurrency>[\d.]+)x"),
    _rule("cuda_graph_memory", "info", "Graph capturing finished",
          r"Graph capturing finished in (?P<capture_s>[\d.]+) secs?, took (?P<graph_gib>-?[\d.]+) ?GiB"),
    _rule("cuda_graph_memory", "info", "Estimated CUDA graph memory:",
          r"Estimated CUDA graph memory: (?P<estimated_gib>[\d.]+) ?GiB"),
    _rule("cuda_graph_memory", "info", "CUDA graph pool memory:",
          r"CUDA graph pool memory: (?P<graph_gib>[\d.]+) GiB \(actual\), (?P<estimated_gib>[\d.]+) GiB \(estimated\)"),
    _rule("memory_summary", "info", "on startup. Desired GPU memory utilization is",
          r"\((?P<free_gib>[\d.]+)/(?P<total_gib>[\d.]+) GiB\) on startup\. Desired GPU memory utilization is "
          r"\((?P<utilization>[\d.]+), (?P<requested_gib>[\d.]+) GiB\)\. Actual usage is (?P<consumed_gib>[\d.]+) GiB "
          r"for consumed memory \(weights \+ non-torch\), (?P<activation_gib>[\d.]+) GiB for peak activation, and "
          r"(?P<graph_gib>[\d.]+) GiB for CUDAGraph memory\.(?:.*?--kv-cache-memory=(?P<kv_bytes_fit>\d+).*?"
          r"--kv-cache-memory=(?P<kv_bytes_full>\d+))?(?:.*?kv cache memory in use is (?P<kv_gib>[\d.]+) GiB)?"),
    _rule("memory_summary", "info", ("Memory profiling results:", "model weights take",
                                     "the current vLLM instance can use total_gpu_memory"),
          r".", v0_profile_fields),
    _rule("kv_cache_blocks", "info", "GPU blocks:",
          r"GPU blocks: (?P<gpu_blocks>\d+)(?:, # CPU blocks: (?P<cpu_blocks>\d+))?"),
    _rule("server_starting", "info", ("Starting vLLM API server", "Starting vLLM server"),
          r"Starting vLLM (?:API )?server(?: \d+)? on (?P<url>\S+)"),
    _rule("startup_complete", "info", "Application startup complete"),
    # A graceful stop (SIGTERM, or the API server leaving after its engine died).
    _rule("shutdown", "info", ("shutdown triggered", "Application shutdown complete", "INFO:     Shutting down"),
          r"(?:API server: shutdown triggered|Application shutdown complete|^INFO:\s+Shutting down)"),
    _rule("stats", "info", "Avg prompt throughput:", r"Avg prompt throughput", stats_fields),
    _rule("preemption", "warning", "is preempted by PreemptionMode",
          r"Sequence group (?P<group>\S+) is preempted by PreemptionMode\.(?P<mode>\w+).*?"
          r"total_(?:num_)?cumulative_preemption(?:_cnt)?=(?P<total>\d+)"),
    # --- memory failures ---------------------------------------------------------------
    _rule("max_seq_len_exceeds_kv", "error", "max seq len (",
          r"the models?'s max seq len \((?P<max_seq_len>\d+)\), \((?P<needed_gib>[\d.]+) Gi?B KV cache is needed, "
          r"which is larger than the available KV cache memory \((?P<available_gib>[\d.]+) Gi?B\)\."
          r"(?: Based on the available memory, the estimated maximum model length is (?P<estimated_max_len>\d+))?"),
    _rule("max_seq_len_exceeds_kv", "error", "max seq len (",
          r"The model's max seq len \((?P<max_seq_len>\d+)\) is larger than the maximum number of tokens that "
          r"can be stored in KV cache \((?P<estimated_max_len>\d+)\)",
          lambda m: {"max_seq_len": int(m.group(1)), "estimated_max_len": int(m.group(2)),
                     "kv_tokens": int(m.group(2))}),  # V0: the KV cache's token capacity
    _rule("no_cache_memory", "error", ("No available memory for the cache blocks", "Cannot auto-fit max_model_len")),
    _rule("free_memory_below_utilization", "error", "is less than desired GPU memory utilization",
          r"Free memory on device(?: (?P<device>\S+))? \((?P<free_gib>[\d.]+)/(?P<total_gib>[\d.]+) GiB\) on startup "
          r"is less than desired GPU memory utilization \((?P<utilization>[\d.]+), (?P<requested_gib>[\d.]+) GiB\)"),
    _rule("cuda_oom", "error", ("out of memory", "OutOfMemoryError", "Failed to load model - not enough GPU memory"),
          r".", oom_fields),
    # --- parallelism and configuration --------------------------------------------------
    _rule("heads_not_divisible", "error", "must be divisible by tensor parallel size",
          r"Total number of attention heads \((?P<heads>\d+)\) must be divisible by tensor parallel size \((?P<tp>\d+)\)"),
    _rule("kv_heads_not_divisible", "error", "is not divisible by",
          r"(?:AssertionError: )?(?P<numerator>\d+) is not divisible by (?P<denominator>\d+)\s*$",
          lambda m: {"kv_heads": int(m.group(1)), "tp": int(m.group(2)),  # vLLM's divide(kv_heads, tp)
                     "numerator": int(m.group(1)), "denominator": int(m.group(2))}),
    _rule("world_size_too_large", "error", "is larger than the number of available GPUs",
          r"World size \((?P<world_size>\d+)\) is larger than the number of available GPUs \((?P<gpus>\d+)\)"),
    _rule("pp_unsupported", "error", "Pipeline parallelism is not supported for this model"),
    _rule("unrecognized_arguments", "error", "unrecognized arguments:", r"unrecognized arguments: (?P<args>.*)$",
          unrecognized_fields),
    _rule("config_error", "error", ("Value error, ", "is greater than the derived max_model_len", "error: argument "),
          r"(?:.*?(?:Value error, |error: ))?(?P<message>.+?)(?: \[type=.*)?$", config_error_fields),
    # --- NCCL, shared memory, distributed ---------------------------------------------
    _rule("shm_full", "error", ("No space left on device", "Error while creating shared memory segment",
                                "failed to extend /dev/shm"),
          r"(?P<path>/dev/shm/[^\s,]+|nccl-shm[^\s,]*)", require_match=False),
    _rule("watchdog_timeout", "error", ("Watchdog caught collective operation timeout", "timed out."),
          r"(?:OpType=(?P<op>\w+).*?Timeout\(ms\)=(?P<timeout_ms>\d+)\) ran for (?P<ran_ms>\d+) milliseconds"
          r"|RPC call to (?P<method>\S+) timed out)"),
    # vLLM's own hang hint, logged at INFO every 60 s. A slow start (torch compile on a busy
    # machine) prints it too, so it is a warning to correlate, not a failure by itself.
    _rule("shm_broadcast_wait", "warning", "No available shared memory broadcast block",
          r"broadcast block found in (?P<waited_s>\d+) seconds"),
    _rule("nccl_error", "error", ("NCCL error", "NCCL Error", "unhandled system error", "unhandled cuda error"),
          r"(?:NCCL [Ee]rror:? (?P<reason>[^(]+?)(?: \(run with|\s*$)|(?P<reason2>unhandled (?:system|cuda) error))",
          lambda m: {"reason": (m.group("reason") or m.group("reason2") or "").strip()}),
    # NCCL_DEBUG=INFO: which transport each ring/channel uses (SHM or sockets inside one node
    # means no P2P/NVLink for that pair: tensor parallelism will be slow there).
    _rule("nccl_transport", "info", "NCCL INFO",
          r"(?:Channel|Ring) (?P<channel>\d+)(?:/\d+)? : (?P<src>\d+)\[\w+\] -> (?P<dst>\d+)\[\w+\]"
          r"(?: \[(?P<direction>send|receive)\])? via (?P<transport>P2P/CUMEM|P2P/IPC|P2P/direct pointer"
          r"|SHM/direct/direct|SHM|direct shared memory|NET/Socket|NET/IB)(?P<detail>/\S+)?", nccl_transport_fields),
    _rule("nccl_no_ib", "warning", "NET/IB : No device found"),
    _rule("nccl_warn", "warning", "NCCL WARN", r"NCCL WARN (?P<message>.*)$"),
    _rule("custom_allreduce_disabled", "warning", ("Custom allreduce is disabled", "CustomAllreduce is disabled",
                                                   "CustomAllReduceV2 is disabled"),
          r"is disabled (?:because |due to )(?P<reason>.+?)(?:\. To silence|\s*$)"),
    # --- engine and worker death --------------------------------------------------------
    _rule("engine_core_failed", "error", ("EngineCore failed to start", "Engine core initialization failed"),
          r"Failed core proc\(s\): (?P<procs>.*)", require_match=False),
    _rule("engine_dead", "error", ("EngineCore encountered a fatal error", "EngineDeadError",
                                   "engine core exited unexpectedly", "EngineCore encountered an issue")),
    _rule("worker_died", "error", ("died unexpectedly", "died, exit code", "WorkerProc hit an exception",
                                   "WorkerProc failed", "Worker failed with error"),
          r"(?:Worker proc (?P<process>\S+) died unexpectedly \(exit code: (?P<exit_code>-?\w+)\)"
          r"|Worker (?P<process2>\S+) pid (?P<pid>\d+) died, exit code: (?P<exit_code2>-?\d+)"
          r"|Worker failed with error '(?P<message>.*)')", worker_died_fields, require_match=False),
    _rule("traceback", "error", "Traceback (most recent call last)"),
    _rule("exception", "error", ("Error: ", "Exception: ", "Error(", "Interrupt: "),
          r"^\s*(?P<type>(?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Interrupt))(?:: |\()(?P<message>.*)$"),
)  # fmt: skip

KINDS: tuple[str, ...] = tuple(dict.fromkeys(rule.kind for rule in RULES))

# Short pieces of the needles: a line holds a needle only if it holds a piece of it, so a line
# with none of these (most lines of a running server) costs a couple of dozen `in` tests and
# no regex. Picked greedily (4-character pieces covering the most needles; fewer keys beat
# rarer ones here, measured with benchmarks/log_classify.py). A needle that contains none of
# them is its own key, so a new rule needs no new key to be found.
_KEYS = ("mory", "rror", "odel", "tion", "ngin", "ing ", "able", "visi", "vice", "vers", "iled",
         "died", "che ", "NCCL", " arg", "y fo", "x se", "wn t", "vg p", "upt:", "time", "t re",
         "ocks")  # fmt: skip


def _needle_index(rules: tuple[_Rule, ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(key, the needles filed under it): every needle under exactly one key, its first."""
    index: dict[str, list[str]] = {}
    for needle in sorted({n for rule in rules for n in rule.needles}):
        key = next((k for k in _KEYS if k in needle), needle)
        index.setdefault(key, []).append(needle)
    return tuple((key, tuple(needles)) for key, needles in index.items())


_NEEDLE_KEYS = _needle_index(RULES)
_RULES_OF_NEEDLE: dict[str, tuple[int, ...]] = {}
for _number, _r in enumerate(RULES):
    for _needle in _r.needles:
        _RULES_OF_NEEDLE[_needle] = (*_RULES_OF_NEEDLE.get(_needle, ()), _number)


def _candidate_rules(line: str) -> list[int]:
    """Numbers of the rules, in RULES order, with a needle somewhere in the line."""
    hits = [needles for key, needles in _NEEDLE_KEYS if key in line]  # usually empty
    if not hits:
        return []
    found = {n for needles in hits for needle in needles if needle in line
             for n in _RULES_OF_NEEDLE[needle]}  # fmt: skip
    return sorted(found)


# Lines of a traceback body (source lines, carets) repeat the words of the errors; they must
# not count as the errors themselves.
_CODE_LINE = re.compile(r"^\s*(?:File \"|raise |\^|~|return |await |self\.|async with )")


def classify_line(line: str, lineno: int | None = None) -> LogEvent | None:
    """What one log line says, or None for a line that is not one Headroom knows (keep it)."""
    if not line:
        return None
    try:
        return _classify(line, lineno)
    except (RecursionError, MemoryError, ValueError, TypeError, OverflowError):
        return None  # never let one strange line stop the reader


def _classify(line: str, lineno: int | None) -> LogEvent | None:
    clean = strip_ansi(line).rstrip("\r\n")
    if ' HTTP/1.1" ' in clean:  # uvicorn's access log: one line per request
        return None
    candidates = _candidate_rules(clean)
    if not candidates:  # most lines: no rule's needle at all
        return None
    message = _message(clean)
    if _CODE_LINE.match(message):
        return None
    for number in candidates:  # a needle in the prefix alone does not count: test the message
        rule = RULES[number]
        if not any(needle in message for needle in rule.needles):
            continue
        fields: dict[str, object] = {}
        if rule.pattern is not None:
            match = rule.pattern.search(message)
            if match is None:
                if rule.require_match:
                    continue
            elif rule.extract is not None:
                fields = {k: v for k, v in rule.extract(match).items() if v is not None}
        return LogEvent(rule.kind, rule.severity, clean, fields, lineno)
    return None
