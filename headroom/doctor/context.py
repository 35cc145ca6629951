"""Everything the rules share, derived once from DoctorInputs: knobs, model, GPU spec,
vLLM version, log events and the memory account."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

from headroom.doctor.findings import DoctorInputs
from headroom.doctor.gpu_spec import GpuSpec, spec_from_snapshot, spec_of_size
from headroom.doctor.known_knobs import knob_state, known
from headroom.doctor.log_memory import gpu_total_from_log
from headroom.doctor.memory_model import (
    Knobs,
    MemoryAccount,
    account,
    knobs_from_command,
    with_log_facts,
)
from headroom.doctor.model_table import find_model
from headroom.doctor.versions import default_utilization, effective_version, parse_version
from headroom.doctor.words_setup import gpu_from_words, model_from_words
from headroom.probes.model import ModelShape
from headroom.probes.prose_lines import rejoined_prose
from headroom.probes.symptom_facts import WordFacts, text_facts
from headroom.probes.symptom_text import text_symptoms
from headroom.probes.vllm_log import LogDigest, LogEvent, StartupFacts, digest_text
from headroom.probes.vllm_log_patterns import is_client_text
from headroom.vllm_cmd.pasted_command import command_line_indexes

# Messages only the V0 engine printed (vllm/worker/worker.py, V0 executors).
_INSTALLED_VERSION = re.compile(
    r"\bvllm-(\d+\.\d+\.\d+(?:\.post\d+)?)(?:\+[\w.]+)?(?:-py3[\w.-]*\.egg|\.dist-info)"
)
_V0_MARKERS = (
    "# GPU blocks:",
    "stored in KV cache (",
    "Memory profiling results:",
    "the current vLLM instance can use total_gpu_memory",
    # V0's worker in a traceback (vllm/worker/worker.py, 0.4.3-0.10.2; V1's is v1/worker/)
    "in raise_if_cache_size_invalid",
    "in determine_num_available_blocks",
)
# PyTorch's own OOM wording dates the torch, and the torch dates vLLM: "has a total capacty of"
# (sic) is torch 2.1's wording and "(GPU 0; 23.64 GiB total capacity; ..." the one before it,
# while logs of torch 2.5+ say "total capacity of" (tests/fixtures/gpu-startup-logs). vLLM
# 0.2.7 and 0.3.3 pin torch==2.1.2, 0.4.3 pins 2.3.0 and the first V1 default, 0.8, pins 2.6.0
# (the wheels' METADATA): such a log is a V0 engine of the 0.2-0.4 era.
_OLD_TORCH_OOM = re.compile(r"has a total capacty of|\(GPU \d+; [\d.]+ ?[KMGT]iB total capacity;")
_OLD_TORCH_RELEASE = "0.3.3"  # the last release read that pins torch 2.1
# V1's engine process before 0.10.2 was named "EngineCore_<index>" (0.8.5 core_client.py, 0.9.2
# v1/engine/utils.py), printed as the "(EngineCore_0 pid=N)" line prefix; 0.10.2 renamed it
# "EngineCore_DP<index>". A V1 release with the 0.9 default utilization and CUDA graphs
# outside the budget (versions.RELEASE_TABLE): 0.9.2 is the one read.
_OLD_ENGINE_CORE = re.compile(r"\(EngineCore_\d+ pid=\d+\)")
_OLD_ENGINE_CORE_RELEASE = "0.9.2"
_PROSE_LINES = 200  # words are a title or a few sentences, not a log's history
# A release a person names in a title or a sentence ("0.4.3 error CUDA error: ...", "in vllm
# 0.2.7", "(v0.16.0)"): only for a log of a few lines (words, not a log), beside "vllm", after
# a "v", or first on the line; one release only ("works with 0.7.2, OOM on 0.8.3" names two).
_NAMED_RELEASE = re.compile(
    r"(?:(?:vllm|VLLM)[\s=:-]*v?|(?<![\w.])v|^)(0\.(?:[2-9]|[1-3]\d)\.\d{1,2}(?:\.post\d+)?)(?!\w|\.\w)",
    re.IGNORECASE,
)
# (a sentence may end on the release: "doesn't exist in vLLM 0.21.0.")
_ANY_RELEASE = re.compile(r"(?<![\w.])v?(0\.\d{1,2}\.\d{1,2}(?:\.post\d+)?)(?!\w|\.\w)")
_WORDS_MAX_LINES = 3


@dataclass
class Context:
    """Derived view of the inputs. Every property may be None when its input is missing."""

    inputs: DoctorInputs
    lacking: list[str] = field(default_factory=list)

    @cached_property
    def knobs(self) -> Knobs:
        """The knobs to size with. Without a command line a knob nothing gave holds its
        placeholder (TP 1, the release's defaults): ask knob_state / known before drawing a
        conclusion from its value (known_knobs)."""
        if self.inputs.command is not None:
            return knobs_from_command(self.inputs.command)
        args = self.launched_args
        return knobs_from_command(_ArgsView(args)) if args else Knobs()

    @cached_property
    def launched_args(self) -> dict:
        """Without a command line, the engine args the log and the server say vLLM ran with
        (empty with a command line: that one is the launch)."""
        if self.inputs.command is not None:
            return {}
        # The log's "non-default args" line says how vLLM was started, and /metrics'
        # cache_config_info carries the KV budget knobs.
        args = dict(getattr(self.facts, "non_default_args", None) or {})
        for snap in reversed(tuple(self.inputs.metrics_history)):
            total = getattr(snap, "total", None)
            if total is None:
                continue
            if getattr(total, "kv_cache_memory_bytes", None):
                args.setdefault("kv_cache_memory_bytes", total.kv_cache_memory_bytes)
            if getattr(total, "gpu_memory_utilization", None):
                args.setdefault("gpu_memory_utilization", total.gpu_memory_utilization)
            if getattr(total, "cache_dtype", None) and total.cache_dtype != "auto":
                args.setdefault("kv_cache_dtype", total.cache_dtype)
            break
        # What the server says about itself (/v1/models: max_model_len), when given.
        reported_len = getattr(self.inputs.extra.get("server_info"), "max_model_len", None)
        if reported_len:
            args.setdefault("max_model_len", reported_len)
        # The engine's config line names the TP and PP it ran with (V0 and V1 alike): without
        # it a 70B at TP 4 would be sized as if its weights sat on one GPU.
        for name in ("tensor_parallel_size", "pipeline_parallel_size"):
            logged = getattr(self.facts, name, None)
            if isinstance(logged, int) and logged > 1:
                args.setdefault(name, logged)
        return args

    def knob_state(self, arg: str) -> str:
        """ "set", "default" or "unknown" for an engine arg (known_knobs.knob_state)."""
        return knob_state(self, arg)

    def known(self, arg: str) -> bool:
        """Whether the value in force of an engine arg is known (known_knobs.known)."""
        return known(self, arg)

    @cached_property
    def raw_lines(self) -> list[str]:
        """Every line of the log, known or not (tracebacks give an OOM its context), except
        request-logger lines: a client's quoted prompt is not vLLM's error (issue 14)."""
        log = self.inputs.log
        if log is None:
            return []
        if isinstance(log, str):
            # the digest's lines are the log's, normalised (colour codes, other tools'
            # prefixes, entities: probes/vllm_log_normalize), and all of them for a paste
            kept = getattr(self.digest, "lines", None)
            if kept is not None and len(kept) == getattr(self.digest, "line_count", -1):
                lines = list(kept)
            else:
                lines = log.splitlines()
        else:
            found = getattr(log, "lines", None)
            lines = [str(x) for x in found] if found else [e.line for e in self.events]
        return [line for line in lines if not is_client_text(line)]

    @cached_property
    def prose_lines(self) -> list[str]:
        """The log's first lines with a person's wrapped sentences rejoined (probes.
        prose_lines): what the words readers read a sentence from, wherever it was wrapped."""
        return rejoined_prose(self.raw_lines[:_PROSE_LINES])

    def lines_before(self, event: LogEvent, count: int = 8) -> list[str]:
        lines = self.raw_lines
        # A digest keeps only its last N lines: line numbers count from the start of the run.
        offset = max(getattr(self.inputs.log, "line_count", len(lines)) - len(lines), 0)
        index = None
        if event.lineno is not None and 0 < event.lineno - offset <= len(lines):
            index = event.lineno - offset - 1
        else:
            for i, line in enumerate(lines):
                if line.rstrip() == event.line.rstrip():
                    index = i
                    break
        if index is None:
            return []
        return lines[max(0, index - count) : index + 1]

    @cached_property
    def digest(self) -> LogDigest | None:
        """The log as vLLM's log reader digested it (a pasted text is digested here)."""
        log = self.inputs.log
        if isinstance(log, str):
            return digest_text(log)
        return log

    @cached_property
    def events(self) -> list[LogEvent]:
        """The log reader's events; when it found no error, the symptom a person's words name
        ("Runing API OOM", an issue title) joins them as the event a real line of unknown
        phase gives (probes.symptom_text), in line order."""
        found = list(getattr(self.digest, "events", None) or ())
        lines = self._words_lines
        first = max(getattr(self.digest, "line_count", len(lines)) - len(lines), 0) + 1
        words = text_symptoms(lines, found, first_lineno=first)
        # In line order: the reader adds a wrapped message read whole after the pieces it read
        # line by line (its line is the first piece's), and rules take a kind's first event.
        return sorted(found + words, key=lambda e: e.lineno or 0)

    @cached_property
    def words(self) -> WordFacts | None:
        """What a person's words say beside the symptom (GPU counts, heads, a utilization
        blamed, a setting said to work; probes.symptom_facts), only when the log reader found
        no error line: None for a real vLLM log."""
        found = list(getattr(self.digest, "events", None) or ())
        lines = self._words_lines
        first = max(getattr(self.digest, "line_count", len(lines)) - len(lines), 0) + 1
        return text_facts(lines, found, first_lineno=first)

    @cached_property
    def _words_lines(self) -> list[str]:
        """The log's lines for the words readers, a typed vLLM command line blanked: its
        flags are the command's (the CLI reads it as one, vllm_cmd.pasted_command), not a
        person blaming --max-model-len or naming a utilization."""
        lines = [str(x) for x in (getattr(self.digest, "lines", None) or ())]
        typed = command_line_indexes(lines)
        return [("" if k in typed else line) for k, line in enumerate(lines)]

    @cached_property
    def facts(self) -> StartupFacts:
        """The digest's StartupFacts (empty ones when there is no log)."""
        if self.digest is not None and hasattr(self.digest, "facts"):
            try:
                return self.digest.facts()
            except Exception:  # a digest that cannot summarise must not stop the doctor
                pass
        return StartupFacts()

    @cached_property
    def version(self) -> str | None:
        if self.inputs.vllm_version:
            return self.inputs.vllm_version
        version = getattr(self.facts, "vllm_version", None)
        if parse_version(version):
            return version
        for line in self.raw_lines[:5000]:
            # A traceback through an installed wheel or egg names the release in its path:
            # ".../vllm-0.2.7+cu123-py3.10-linux-x86_64.egg/vllm/...", "vllm-0.6.3.dist-info".
            found = _INSTALLED_VERSION.search(line)
            if found:
                return found.group(1)
        if any(_V0_ONLY in line for line in self.raw_lines[:5000] for _V0_ONLY in _V0_MARKERS):
            return "0.7.3"  # the V0 engine's wording: the last release where V0 was the default
        if any(_OLD_TORCH_OOM.search(line) for line in self.raw_lines[:5000]):
            return _OLD_TORCH_RELEASE
        if any(_OLD_ENGINE_CORE.search(line) for line in self.raw_lines[:5000]):
            return _OLD_ENGINE_CORE_RELEASE
        if len(self.raw_lines) <= _WORDS_MAX_LINES:
            named = {m.group(1) for line in self.raw_lines for m in _NAMED_RELEASE.finditer(line)}
            every = {m.group(1) for line in self.raw_lines for m in _ANY_RELEASE.finditer(line)}
            if len(named) == 1 and every <= named and parse_version(next(iter(named))):
                return next(iter(named))  # another x.y.z beside it: an upgrade story, or noise
        return None

    @cached_property
    def model_read(self) -> ModelShape | None:
        """The model's shape as given or found in the built-in table, complete or not.
        Pure: the input loader (cli/doctor.py, probes.model_inputs) read any file or hub."""
        if self.inputs.model is not None:
            return self.inputs.model
        cmd = self.inputs.command
        name = getattr(cmd, "model", None) if cmd is not None else None
        name = name or getattr(self.facts, "model", None) or self.inputs.model_name
        if name:
            return find_model(str(name))
        return model_from_words(self.words)  # a log of words: the model its text names

    @cached_property
    def model(self) -> ModelShape | None:
        """A shape the sizing arithmetic can use (layers, hidden size, heads all known)."""
        shape = self.model_read
        return shape if shape is not None and shape.sizable else None

    @cached_property
    def gpu(self) -> GpuSpec | None:
        found = self.inputs.gpu_spec or spec_from_snapshot(self.inputs.gpus)
        if found is not None:
            return found
        if self.inputs.gpu_count:
            # `--gpus N`, a count only: GPUs of the size the log itself says, when it does
            total = self._total_in_log()
            return spec_of_size(self.inputs.gpu_count, total) if total else None
        # a log of words: the GPUs its text names (words_setup)
        return gpu_from_words(self.words, self.knobs.tp, self.knobs.pp)

    def _total_in_log(self) -> float | None:
        """CUDA's total memory per GPU as the log says it exactly: an OOM line's "total
        capacity of X GiB" / "(GPU 0; X GiB total; ...)" (PyTorch's, any release), else
        vLLM's own lines (log_memory.gpu_total_from_log's exact readings)."""
        for event in self.of("cuda_oom"):
            total = event.fields.get("total_gib")
            if isinstance(total, int | float) and total > 0:
                return float(total)
        ledger = getattr(self.facts, "ledger", None)
        found = gpu_total_from_log(self.raw_lines, None, None, ledger)
        return found[0] if found is not None and found[1] else None

    @cached_property
    def account(self) -> MemoryAccount | None:
        if self.model is None or self.gpu is None:
            return None
        try:
            acc = account(self.model, self.gpu, self.knobs, self.version)
        except (ArithmeticError, AttributeError, TypeError, ValueError):
            return None
        return with_log_facts(acc, self.facts) if self.events else acc

    @cached_property
    def gpu_total(self) -> tuple[float, bool] | None:
        """CUDA's total memory per GPU in GiB, and whether it is exact: the GPU spec's, else
        what the log says (see log_memory.gpu_total_from_log), else None."""
        if self.gpu is not None:
            return self.gpu.min_usable_gib, True
        weights = getattr(self.facts, "weights_gib", None)
        ledger = getattr(self.facts, "ledger", None)
        return gpu_total_from_log(self.raw_lines, self.utilization, weights, ledger)

    def of(self, *kinds: str) -> list[LogEvent]:
        return [e for e in self.events if e.kind in kinds]

    @property
    def utilization(self) -> float:
        if self.knobs.gpu_memory_utilization:
            return self.knobs.gpu_memory_utilization
        return default_utilization(effective_version(self.version))

    @property
    def utilization_said(self) -> str:
        """The utilization in force for an evidence line: its value, and when no input gives
        it, that it is only the release's default (known_knobs)."""
        value = f"{self.utilization:.2f}"
        if self.known("gpu_memory_utilization"):
            return value
        return f"{value} (the default; the one in use is not given)"

    @property
    def gpu_count(self) -> int | None:
        if self.gpu is not None:
            return self.gpu.count
        if self.inputs.gpu_count:
            return self.inputs.gpu_count
        snap = self.inputs.gpus
        if snap is not None and getattr(snap, "available", False):
            return len(snap.gpus)
        return None

    def arg(self, name: str):
        """An engine arg as launched: the command line's, else the log's non-default args."""
        cmd = self.inputs.command
        if cmd is not None:
            return cmd.get(name)
        return (getattr(self.facts, "non_default_args", None) or {}).get(name)

    @property
    def nodes(self) -> int:
        """Nodes the deployment spans: --nodes, the command's --nnodes, or the data-parallel
        split (--data-parallel-size over --data-parallel-size-local ranks per node)."""
        found = [max(int(self.inputs.nodes or 1), 1)]
        nnodes = _positive_int(self.arg("nnodes"))
        if nnodes:
            found.append(nnodes)
        dp, dp_local = (
            _positive_int(self.arg(n)) for n in ("data_parallel_size", "data_parallel_size_local")
        )
        if dp and dp_local:
            found.append(-(-dp // dp_local))
        return max(found)


def _positive_int(value) -> int | None:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


class _ArgsView:
    """`non-default args` as a VllmCommand-like .get() (engine-arg names already)."""

    def __init__(self, args: dict) -> None:
        self._args = args

    def get(self, name, default=None):
        return self._args.get(name, default)
