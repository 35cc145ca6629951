"""The variants scripts/incident_ablation.py runs each right training answer through: how
else a new thread plausibly shows the same failure (see that script's docstring).

Each variant takes an incident dict and returns a changed copy, or None where it does not
apply. The prefixes, INFO lines and progress bars are real vLLM output from the fixtures
named beside them; nothing here reads an incident file.
"""

from __future__ import annotations

import copy
import importlib.util
import re
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _bench():
    spec = importlib.util.spec_from_file_location(
        "doctor_accuracy", ROOT / "benchmarks" / "doctor_accuracy.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("doctor_accuracy", module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


# Real prefixes, each from a fixture: (VllmWorkerProcess pid=3230) gpu-startup-logs
# rtx3090-llama3.1-8b-maxlen20000-v0.6.log; ERROR ... [engine.py:448] gpu-startup-logs
# rtx3090-qwen2.5-vl-7b-v0-fail.log; (EngineCore_DP0 pid=8884) startup-logs (0.10.1.1);
# (RayWorkerWrapper pid=345, ip=10.42.9.225) startup-logs dennislee22 ...diff-nodes;
# `vllm-1  | ` docker compose, tests/probes (vllm#13131's paste); [rank0]: PyTorch's
# rank tag (tests/fixtures/nccl).
PREFIXES = {
    "prefix_worker": "(VllmWorkerProcess pid=3230) ",
    "prefix_rank0": "[rank0]: ",
    "prefix_error_logger": "ERROR 04-17 15:10:09 [engine.py:448] ",
    "prefix_enginecore": "(EngineCore_DP0 pid=8884) ",
    "prefix_compose": "vllm-1  | ",
    "prefix_ray": "(RayWorkerWrapper pid=345, ip=10.42.9.225) ",
}
# Existing prefixes, taken off before a new one goes on (stacked tags are real too, but a
# logger line behind another logger's header is not).
_PREFIX = re.compile(
    r"^(?:\((?:[A-Za-z_]\w*(?: TP\d+)?) pid=\d+(?:, ip=[\d.]+)?\)\s*"
    r"|\[rank\d+\]:\s*"
    r"|(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[?[\w.]+\.py:\d+\]\s*"
    r"|[\w.-]+-\d+\s+\|\s?)"
)
# Unrelated lines a real log carries around the failure (no number a rule reads): V0's
# selector and worker lines (gpu-startup-logs rtx3090-llama3.1-8b-maxlen20000-v0.6.log,
# gpu16gb-maxlen40000-v0.6.4.log) and a shard-loading progress bar (hangs/report-v1-tp2-rtx3090-start.log).
INFO_LINES = (
    "INFO 11-11 14:17:08 selector.py:135] Using Flash Attention backend.",
    "INFO 12-20 20:25:46 worker.py:241] Memory profiling takes 19.77 seconds",
)
TQDM_LINES = (
    "Loading safetensors checkpoint shards:   0% Completed | 0/1 [00:00<?, ?it/s]",
    "Loading safetensors checkpoint shards: 100% Completed | 1/1 [00:14<00:00, 14.86s/it]",
)


# Engine args whose value a rule may decide on; dropping the command line drops them unless
# the log prints the same value.
def _with(incident: dict, **changes) -> dict:
    out = copy.deepcopy(incident)
    out.update(changes)
    return out


def _lines(log: str) -> list[str]:
    return log.split("\n")


def _strip_prefixes(line: str) -> str:
    for _ in range(4):
        stripped = _PREFIX.sub("", line, count=1)
        if stripped == line:
            break
        line = stripped
    return line


_LOG_LINE = re.compile(
    r"^(?:Traceback \(most recent|[\w.]*[a-z](?:Error|Exception|Warning)\b:?|"
    r"(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) \d\d-\d\d |\(\w[\w ]* pid=\d+|\[rank\d+\]:|"
    r"[\w.-]+-\d+\s+\|)"
)


def log_like(incident: dict) -> bool:
    """The text is a process's output (its first line an exception, a logger header or a
    process tag), not a person's words or an issue title: only output gets a prefix."""
    first = next((x.strip() for x in _lines(incident["log"]) if x.strip()), "")
    return bool(_LOG_LINE.match(first)) and not _bench().title_only(incident)


_PROCESS_TAG = re.compile(
    r"^(?:\([A-Za-z_][\w ]* pid=\d+(?:, ip=[\d.]+)?\)\s*|\[rank\d+\]:\s*|[\w.-]+-\d+\s+\|\s?)+"
)
_NCCL_LINE = re.compile(r"^\S+:\d+:\d+ \[\d+\] NCCL")


def prefixed(prefix: str) -> Callable[[dict], dict | None]:
    """Every line of the process's output behind `prefix` instead of its own process tag; a
    logger header (ERROR 04-17 ... [engine.py:448]) replaces the line's own header too."""

    def variant(incident: dict) -> dict | None:
        if not log_like(incident):
            return None
        lines, previous = [], ""
        for line in _lines(incident["log"]):
            bare = _PROCESS_TAG.sub("", line, count=1)
            # A paste's wrap never repeats the prefix: a line that continues the one before
            # (it starts in lower case, and is no record of its own) keeps none.
            wrapped = (
                previous.strip()
                and bare[:1].islower()
                and not _LOG_LINE.match(bare)
                and not _NCCL_LINE.match(bare)
            )
            if prefix.startswith("ERROR "):
                bare = _strip_prefixes(line)
            lines.append(line if not line.strip() or wrapped else prefix + bare)
            previous = line
        return _with(incident, log="\n".join(lines))

    return variant


def wrapped(width: int, words: bool) -> Callable[[dict], dict | None]:
    def variant(incident: dict) -> dict | None:
        if _bench().title_only(incident) or all(len(x) <= width for x in _lines(incident["log"])):
            return None  # an issue title is one line wherever it is shown
        if not words and not log_like(incident):
            return None  # a terminal cuts a process's output; a person's prose wraps at words
        out: list[str] = []
        for line in _lines(incident["log"]):
            if words:
                out.extend(textwrap.wrap(line, width) or [""])
            else:
                out.extend(line[k : k + width] for k in range(0, max(len(line), 1), width))
        return _with(incident, log="\n".join(out))

    return variant


def fenced(incident: dict) -> dict | None:
    return _with(incident, log="```text\n" + incident["log"].strip("\n") + "\n```")


def traceback_cut(incident: dict) -> dict | None:
    """The traceback's frames cut (what a person keeps: the exception line)."""
    out, cut, after_file = [], False, False
    for line in _lines(incident["log"]):
        bare = _strip_prefixes(line)
        if bare.startswith("Traceback (most recent call last)") or bare.lstrip().startswith(
            'File "'
        ):
            cut, after_file = True, bare.lstrip().startswith('File "')
            continue
        if after_file and bare.startswith("    "):
            after_file = False
            continue
        after_file = False
        out.append(line)
    if not cut or not any(x.strip() for x in out):
        return None
    return _with(incident, log="\n".join(out))


def info_around(incident: dict) -> dict | None:
    if _bench().title_only(incident):
        return None  # an issue's title is not inside a log
    return _with(incident, log="\n".join([*INFO_LINES, incident["log"], INFO_LINES[0]]))


def tqdm_before(incident: dict) -> dict | None:
    if _bench().title_only(incident):
        return None  # an issue's title is not inside a log
    return _with(incident, log="\n".join([*TQDM_LINES, incident["log"]]))


def no_command(incident: dict) -> dict | None:
    return _with(incident, command=None) if incident.get("command") else None


def no_gpus(incident: dict) -> dict | None:
    return _with(incident, gpus=None) if incident.get("gpus") else None


def gpus_count(incident: dict) -> dict | None:
    """`--gpus 2` : the count alone, as a person who only knows how many says it."""
    gpus = incident.get("gpus")
    if not gpus:
        return None
    from headroom.doctor.gpu_spec import GpuSpecError, read_gpus_option

    try:
        _, count = read_gpus_option(gpus)
    except GpuSpecError:
        return None
    return _with(incident, gpus=str(count))


def no_version(incident: dict) -> dict | None:
    return _with(incident, vllm_version=None) if incident.get("vllm_version") else None


def neighbour_version(incident: dict) -> dict | None:
    """The release beside the thread's in the same minor series (0.8.4 -> 0.8.3, 0.8.0 ->
    0.8.1): what a user upgrading or downgrading by one patch reports."""
    version = incident.get("vllm_version")
    found = re.match(r"v?(\d+)\.(\d+)(?:\.(\d+))?", str(version or ""))
    if not found:
        return None
    major, minor, patch = (int(g) if g else 0 for g in found.groups())
    patch = patch - 1 if patch > 0 else 1
    return _with(incident, vllm_version=f"{major}.{minor}.{patch}")


# vLLM's own version line (api_server.py, 0.10.1.1 in tests/fixtures/startup-logs), the
# incident's release in it: how a log says the release when the thread does not.
_VERSION_LINE = (
    "(APIServer pid=1009) INFO 09-10 23:26:12 [api_server.py:1805] vLLM API server version "
)


def version_in_log(incident: dict) -> dict | None:
    version = incident.get("vllm_version")
    if not version or not re.match(r"v?\d+\.\d+", str(version)) or _bench().title_only(incident):
        return None  # (an issue's title is no log with a version line above it)
    line = _VERSION_LINE + str(version).lstrip("v")
    return _with(incident, vllm_version=None, log=line + "\n" + incident["log"])


def gpus_nvml_name(incident: dict) -> dict | None:
    """--gpus with the GPU's name as nvidia-smi prints it (`NVIDIA GeForce RTX 3090`)."""
    found = re.fullmatch(r"(\d+)x([^:]+)(:.*)?", incident.get("gpus") or "")
    if not found or found.group(2) == "GPU":
        return None
    name = found.group(2)
    vendor = "NVIDIA GeForce " if re.match(r"RTX ?\d", name) else "NVIDIA "
    gpus = f"{found.group(1)}x{vendor}{name}{found.group(3) or ''}"
    return _with(incident, gpus=gpus)


def version_spelled(incident: dict) -> dict | None:
    """The release as a tag or an image names it: `v0.6.3`."""
    version = str(incident.get("vllm_version") or "")
    if not re.match(r"\d+\.\d+", version):
        return None
    return _with(incident, vllm_version="v" + version)


def tp_workers_repeat(incident: dict) -> dict | None:
    """Each line of the output as two TP workers print it (vLLM 0.6's multiproc workers tag
    their lines; tests/fixtures/gpu-startup-logs)."""
    if not log_like(incident):
        return None
    out = []
    for line in _lines(incident["log"]):
        bare = _PROCESS_TAG.sub("", line, count=1)
        out.extend([line, "(VllmWorkerProcess pid=3230) " + bare] if line.strip() else [line])
    return _with(incident, log="\n".join(out))


def words_lower(incident: dict) -> dict | None:
    """An issue title's words all in lower case, as a comment, a chat message or a forum
    post types the same report ("memory leak then i use vllm")."""
    log = incident["log"]
    if not _bench().title_only(incident) or log == log.lower():
        return None  # a process's output is never retyped; a pasted body keeps its case
    from headroom.probes.vllm_log import digest_text
    from headroom.probes.vllm_log_rules import candidates

    if digest_text(log).events or candidates(log)[0]:
        return None  # a title that quotes vLLM's own message copies it, case and all
    return _with(incident, log=log.lower())
