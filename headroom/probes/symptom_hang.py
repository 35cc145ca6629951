"""Signs that a multi-GPU start hangs while its GPUs set up communication.

Two readings, both conservative, both never raising on any input:

- `comm_stall(lines)`: the log stops in communication set-up. Its last stage lines are the
  ones a start prints while its workers, torch.distributed, NCCL and the custom all-reduce
  come up (catalog kinds `distributed_init`, `nccl_transport`, `nccl_warn`,
  `custom_allreduce_disabled`, ... and NCCL's own `NCCL INFO` lines), with no error, and no
  line of a later stage after them (weights, profiling, KV cache, graphs, the server, a
  download or a compile). V1's "No available shared memory broadcast block found in 60
  seconds" is the hang's own symptom and is skipped. A start whose last lines are CUDA-graph
  capture with several ranks stalls in the all-reduce kernels captured there ("graph_capture").
  The tail must hold vLLM's own lines (a
  paste of NCCL's debug lines alone says nothing of where vLLM stopped). It also counts the
  ranks the lines show (worker tags, NCCL's device index, world sizes): a hang on one GPU is
  not a P2P problem.
- `hang_words(lines)`: a person says a multi-GPU run hangs ("vLLM Distributed Inference stuck
  when using multi -GPU", "when tensor-parallel-size>1, Stuck", "NCCL hangs", "卡住"), not
  hedged ("to avoid hangs", "Fix hang in ...") and not about a download, a load or a compile.
  Only lines without vLLM's logger prefix, a client's quoted text or code.

What the doctor does with them is doctor/rules_hang.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from headroom.probes.symptom_facts import facts_of_text
from headroom.probes.vllm_log_patterns import (
    LogEvent,
    classify_line,
    is_client_text,
    split_prefix,
    strip_ansi,
)

__all__ = ["CommStall", "HangWords", "comm_stall", "hang_words"]

_TAIL = 400  # lines read from the end: a hang's tail, not the whole history
_MAX_CHARS = 2000
_MAX_UNKNOWN_AFTER = 3  # lines of no known stage tolerated after the last set-up line

# Communication set-up, in the catalog's kinds (probes/vllm_catalog/comms.py, runtime.py,
# multinode.py).
_COMM_KINDS = frozenset({
    "distributed_init", "nccl_transport", "nccl_warn", "nccl_no_ib", "nccl_socket_interfaces",
    "custom_allreduce_disabled", "gloo_loopback",
})  # fmt: skip
# The hang's own symptom, printed while it lasts: neither a stage nor progress.
_WAIT_KINDS = frozenset({"shm_broadcast_wait"})
# Said before the workers start or beside any stage (config, banner): no stage of their own.
_NEUTRAL_KINDS = frozenset(
    {"version", "non_default_args", "model", "max_model_len", "kv_cache_dtype"}
)
# Later stages vLLM prints that are not catalog events (each read from vLLM's source: V0
# model_runner/worker, V1 gpu_model_runner/gpu_worker, model_loader, compilation), and the
# Hub's download lines: a log that goes on to these got past communication set-up.
_LATER_STAGE = re.compile(
    r"Starting to load model|Loading model from scratch|Loading (?:safetensors|pt) checkpoint shards|"
    r"Loading weights took|Using model weights format|"
    r"torch\.compile takes|Compiling a graph for|init engine \(profile|Memory profiling takes|"
    r"Graph capturing finished|Downloading|Fetching \d+ files"
)
# CUDA-graph capture, which runs every all-reduce kernel inside a graph (V0 model_runner.py:
# "Capturing the model for CUDA graphs" 0.2.7-0.5.5, "Capturing cudagraphs for decoding"
# 0.6.4+; the tqdm bars "Capturing CUDA graph shapes" 0.6.6+ and "Capturing CUDA graphs (" of
# V1's gpu_model_runner.py in 0.32+). "Graph capturing finished" (a catalog event) ends it.
_CAPTURE = re.compile(
    r"Capturing (?:the model for CUDA graphs|cudagraphs for decoding|CUDA graph shapes|CUDA graphs \()"
)
_NCCL_LINE = re.compile(r"(?:^|\s|\])NCCL (?:INFO|WARN) |^NCCL version \d")
_NCCL_DEVICE = re.compile(r"\[(\d{1,3})\] NCCL (?:INFO|WARN) ")
# Ranks other than 0 in a line's process tag or text (V0 multiprocessing workers are ranks
# 1..N-1; V1 tags every worker with its rank; torch.distributed relays "[rankN]:").
_RANK_TAGS = (
    re.compile(r"\(VllmWorker rank=(\d+) pid="),
    re.compile(r"\(Worker_(?:TP|PP|DP)(\d+)(?:_\w+)? pid="),
    re.compile(r"^\[rank(\d+)\]:"),
)
_OTHER_WORKER = re.compile(r"\((?:VllmWorkerProcess|RayWorkerWrapper) pid=")
_WORLD = re.compile(
    r"\b(?:world_size|world size|tensor_parallel_size|pipeline_parallel_size)[=: ]+(\d+)"
)
_P2P_CACHE_DEVICES = re.compile(r"gpu_p2p_access_cache_for_([\d,]+)\.json")
_READER_RANKS = re.compile(r"local_reader_ranks=\[([\d, ]*)\]")


@dataclass(frozen=True)
class CommStall:
    """A log that stops in communication set-up."""

    stage: str  # "workers" | "nccl" | "p2p_check" | "graph_capture": what the last lines did
    ranks: int  # the most ranks the lines show (0: they do not say)
    lines: tuple[str, ...]  # the last set-up lines, oldest first (evidence)
    custom_allreduce_off: bool  # vLLM said its custom all-reduce is disabled
    nccl_warnings: tuple[str, ...]  # NCCL WARN lines of the tail


def _ranks_of(line: str) -> int:
    """The most ranks one line shows (0: none)."""
    best = 0
    for pattern in _RANK_TAGS:
        found = pattern.search(line)
        if found:
            best = max(best, int(found.group(1)) + 1)
    if _OTHER_WORKER.search(line):
        best = max(best, 2)
    for found in _WORLD.finditer(line):
        best = max(best, int(found.group(1)))
    device = _NCCL_DEVICE.search(line)
    if device:
        best = max(best, int(device.group(1)) + 1)
    cache = _P2P_CACHE_DEVICES.search(line)
    if cache:
        best = max(best, len([d for d in cache.group(1).split(",") if d]))
    readers = _READER_RANKS.search(line)
    if readers:
        ranks = [int(r) for r in readers.group(1).replace(" ", "").split(",") if r]
        if ranks:
            best = max(best, max(ranks) + 1)
    return min(best, 4096)


def _stage_of(line: str) -> tuple[str | None, str]:
    """(stage, signature) of one line: stage 'comm', 'capture', 'wait', 'neutral', 'later',
    'error' or None (a line of no known stage)."""
    event = classify_line(line)
    if event is not None:
        signature = event.signature or event.kind
        if event.severity == "error":
            return "error", signature
        if event.kind in _COMM_KINDS:
            return "comm", signature
        if event.kind in _WAIT_KINDS:
            return "wait", signature
        if event.kind in _NEUTRAL_KINDS:
            return "neutral", signature
        return "later", signature
    message = split_prefix(line)[1]
    if _NCCL_LINE.search(message):
        return "comm", "nccl_library"
    if _CAPTURE.search(message):
        return "capture", "graph_capture"
    if _LATER_STAGE.search(message):
        return "later", "later_stage"
    return None, ""


def comm_stall(lines: Sequence[object]) -> CommStall | None:
    """The communication set-up a log stops in, or None (see the module docstring)."""
    try:
        return _comm_stall([strip_ansi(x) for x in list(lines)[-_TAIL:] if isinstance(x, str)])
    except Exception:  # a reader of untrusted text must not stop the doctor
        return None


def _comm_stall(tail: list[str]) -> CommStall | None:
    comm: list[tuple[str, str]] = []  # (line, signature) of the set-up lines, newest first
    unknown_after = 0
    ranks = 0
    vllm_lines = 0
    for raw in reversed(tail):
        line = raw.strip()
        if not line:
            continue
        ranks = max(ranks, _ranks_of(line))
        vllm_lines += split_prefix(line)[0] is not None
        stage, signature = _stage_of(line)
        if stage in ("error", "later"):
            if not comm:
                return None  # the log goes on past set-up, or ends on an error
            break
        if stage in ("comm", "capture"):
            comm.append((line, signature))
        elif stage is None and not comm:
            unknown_after += 1
            if unknown_after > _MAX_UNKNOWN_AFTER:
                return None
    if not comm or not vllm_lines:
        return None  # NCCL's lines alone are a debug paste, not a vLLM start that stopped
    newest = comm[0][1]
    signatures = {sig for _, sig in comm}
    if "graph_capture" in signatures:
        stage_name = "graph_capture"  # capture runs after set-up: NCCL lines inside it are its own
    elif newest in ("p2p_access_cache", "p2p_check_skipped"):
        stage_name = "p2p_check"
    elif signatures <= {"mp_worker_ready", "message_queue_handle"}:
        stage_name = "workers"
    else:
        stage_name = "nccl"
    return CommStall(
        stage=stage_name,
        ranks=ranks,
        lines=tuple(line for line, _ in reversed(comm[:8])),
        custom_allreduce_off=any("llreduce is disabled" in line for line in tail),
        nccl_warnings=tuple(line for line, _ in reversed(comm) if " NCCL WARN " in line)[:3],
    )


# --- words -----------------------------------------------------------------------------------

_HANG = re.compile(
    r"\b(?:stuck|hangs?|hanging|hung|freez(?:e|es|ing)|frozen|deadlock(?:s|ed)?|"
    r"(?:spins?|spinning|waits?|waiting)\s+forever|never\s+(?:starts?|finish(?:es)?|returns?|responds?)|"
    r"no\s+response|not\s+respond(?:ing)?|unresponsive|timed?[\s-]?outs?|times\s+out|timeouts?|"
    # "vllm stall on llama3-70b warmup", "vLLM stops all processing when ..." (vllm#4277, #546)
    r"stall(?:s|ed|ing)?|stop(?:s|ped)\s+(?:all\s+)?(?:processing|responding|generating))\b|"
    # 卡着不动 / 不动了 / 一动不动 ("stuck, not moving": FastChat#2833, vllm#17151), 挂起 (hung)
    r"卡住|卡死|卡在|一直卡|卡着|不动了|一动不动|挂起|无响应|没有?响应|没反应|超时|死锁",
    re.IGNORECASE,
)
# A hedge, a fix or a negation in the clause before the word: advice, a patch, a wish.
_HEDGE = re.compile(
    r"\b(?:may|might|could|would|can|avoid(?:s|ed|ing)?|prevent(?:s|ed|ing)?|if|whether|without|"
    r"no\s+longer|not|never|fix(?:es|ed|ing)?|resolve[sd]?|solve[sd]?|workaround|bugfix)\b[^.;:!?]*$|"
    r"(?:避免|防止|是否|如何|可能|修复|解决)[^。；：！？]*$",
    re.IGNORECASE,
)
_TP = re.compile(
    r"(?:tensor[-_ ]?parallel(?:[-_ ]?size)?|pipeline[-_ ]?parallel(?:[-_ ]?size)?|(?<![\w-])-?-?[tp]p(?:[-_ ]?size)?)"
    # a closing backtick or quote between the name and its value: "`tensor_parallel_size` > 1"
    r"[`'\"]?\s*(?P<op>>=|>|＞|=|:|\s)\s*(?P<n>\d{1,4})(?!\d)",
    re.IGNORECASE,
)
_TP_GLUED = re.compile(r"(?<![\w-])[TP]P(?P<n>[2-9]|1[0-9])(?![\w.])")  # "TP2", "PP4"
# TP named without a size: "hang at `Using model weights format` when using tp" (vllm#6636),
# "with tensor parallelism": more than one GPU.
_TP_WORD = re.compile(
    r"\b(?:using|with|use|enabl(?:e|ed|ing))\s+(?:tp|TP|tensor[-_ ]parallel(?:ism)?)(?![\w-])",
    re.IGNORECASE,
)
_COMM_WORDS = re.compile(
    r"\bNCCL\b|all[-_ ]?reduce|allreduce|\bP2P\b|peer[- ]to[- ]peer|\bdistributed\s+(?:inference|serving)\b|"
    r"multi[- ]?node|多机|多节点|通信",
    re.IGNORECASE,
)
_MULTI_NODE = re.compile(
    r"multi[- ]?node|multiple\s+(?:nodes|machines|hosts)|(?:two|2|three|3|four|4|several)\s+(?:nodes|machines)|"
    r"across\s+(?:nodes|machines)|多机|多节点|跨节点|两台",
    re.IGNORECASE,
)
_CUSTOM_AR = re.compile(
    r"custom[-_ ]?all[-_ ]?reduce|custom[-_ ]allreduce|CustomAllreduce|custom_ar\b", re.I
)
# A hang in another stage (download, weights, compile, graphs, profiling): not communication.
_OTHER_STAGE = re.compile(
    r"download|\bloading\s+(?:the\s+)?(?:model|weights?|checkpoint|shards?)|\bload(?:ing)?\s+weights|"
    # "hangs indefinitely during model weight loading" (vllm#42063), "model loading"
    r"\bweights?\s+loading\b|\bmodel\s+loading\b|"
    r"compil|torch\.compile|cuda[\s-]?graph|cudagraph|capturing|profil|下载|加载|编译",
    re.IGNORECASE,
)
_GPU_TOKEN = re.compile(
    r"(?<![\w.-])(?:RTX\s?)?(?:[2-5]0[5-9]0)(?:\s?Ti)?(?![\w.])|"
    r"(?<![\w.-])(?:[AHLTVB]\d{1,3}[A-Z]?|A\d{4}|GH200|GB200|L40S?)(?![\w.])",
)
_CODE = re.compile(
    r"""^\s*(?:File\s+"|#|import\s|from\s\S+\s+import|def\s|raise\s|[\w.]+\s*=[^=])"""
)
_NEEDLES = ("stuck", "hang", "hung", "freez", "frozen", "deadlock", "forever", "never", "respon",
            "time", "stall", "stop", "卡", "不动", "挂起", "响应", "反应", "超时", "死锁")  # fmt: skip


@dataclass(frozen=True)
class HangWords:
    """A hang a person's words report, and what the words say beside it."""

    text: str
    multi_gpu: bool  # TP/PP > 1, several GPUs, NCCL or distributed serving named
    tp: int | None  # the tensor/pipeline parallel size named (the largest)
    custom_allreduce: bool  # the custom all-reduce kernel named
    nccl: bool  # NCCL, all-reduce or P2P named
    multi_node: bool  # several nodes / machines named: the network between them, not P2P
    other_stage: bool  # a download, a load, a compile or graphs named: not communication
    gpu_tokens: tuple[str, ...]  # GPU model names as written ("V100", "RTX 3090")


def _clause_before(text: str, start: int) -> str:
    before = text[:start]
    cut = max(before.rfind(c) for c in ".;:!?\n。；！？")
    return before[cut + 1 :]


def _reported(text: str) -> bool:
    return any(not _HEDGE.search(_clause_before(text, m.start())) for m in _HANG.finditer(text))


def _parallel_size(text: str) -> tuple[int | None, bool]:
    """(the largest TP/PP named, whether one above 1 is named; "tp>1" counts)."""
    sizes, more = [], False
    for found in _TP.finditer(text):
        n = int(found.group("n"))
        sizes.append(n)
        more = more or n > 1 or found.group("op") in (">", "＞", ">=") and n >= 1
    for found in _TP_GLUED.finditer(text):
        sizes.append(int(found.group("n")))
        more = True
    return (max(sizes) if sizes else None), more


def words_of_line(line: object) -> HangWords | None:
    """The hang one line of human text reports, or None. Never raises."""
    if not isinstance(line, str) or not line.strip():
        return None
    text = line[:_MAX_CHARS]
    low = text.lower()
    if not any(n in low for n in _NEEDLES):
        return None
    try:
        if split_prefix(text)[0] is not None or is_client_text(text) or _CODE.match(text):
            return None
        if classify_line(text) is not None:
            return None  # a text the catalog knows is vLLM's, not a person's words
        if not _reported(text):
            return None
        tp, more = _parallel_size(text)
        facts = facts_of_text(text)
        several = facts.several_gpus or any(n > 1 for n in facts.gpu_counts)
        nccl = bool(_COMM_WORDS.search(text))
        custom = bool(_CUSTOM_AR.search(text))
        multi_node = bool(_MULTI_NODE.search(text))
        return HangWords(
            text=text.strip(),
            multi_gpu=bool(
                more or several or nccl or custom or multi_node or _TP_WORD.search(text)
            ),
            tp=tp,
            custom_allreduce=custom,
            nccl=nccl or custom,
            multi_node=multi_node,
            other_stage=bool(_OTHER_STAGE.search(text)),
            gpu_tokens=tuple(dict.fromkeys(m.group(0) for m in _GPU_TOKEN.finditer(text)))[:4],
        )
    except Exception:  # a reader of untrusted text must not stop the doctor
        return None


def hang_words(lines: Iterable[object], events: Sequence[LogEvent] = ()) -> HangWords | None:
    """The first line of words that reports a hang, only when the log reader's `events` hold
    no error (a real error line is the story, not the words)."""
    if any(getattr(e, "severity", None) == "error" for e in events):
        return None
    for count, line in enumerate(lines):
        if count >= 200:  # words are a title or a few sentences, not a log's history
            break
        found = words_of_line(line)
        if found is not None:
            return found
    return None
