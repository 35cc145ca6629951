"""The memory ledger: every memory number a vLLM start-up log gives, in one place per start.

vLLM prints its memory accounting in many wordings across releases (the V0 profile lines,
V1's "Available KV cache memory" and its one-line summary, "# GPU blocks", "KV cache size:
N tokens", the refusal's "N GiB KV cache is needed"). The catalog's entries turn each into
event fields; this module gathers those fields, whatever line they came from, so a rule can
decide from the numbers (is one max_model_len sequence larger than the KV cache?) and a new
wording that carries the same numbers is still diagnosed.

The arithmetic is vLLM's own (gpu_worker.determine_available_memory, V0 worker.py):
    requested = total x utilization
    KV budget = requested - (weights + non-torch + activation peak) - CUDA graphs
    KV tokens = GPU blocks x block size; per-request concurrency = KV tokens / max_model_len
Fields are per GPU and None when the log did not say.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from headroom.probes.vllm_log_patterns import LogEvent

__all__ = ["LedgerBuilder", "MemoryLedger"]


@dataclass(frozen=True)
class MemoryLedger:
    """The memory numbers of one start, per GPU; None where the log says nothing."""

    total_gib: float | None = None  # CUDA's total memory
    free_at_start_gib: float | None = None
    utilization: float | None = None  # gpu_memory_utilization
    requested_gib: float | None = None  # total x utilization, as vLLM computed it
    weights_gib: float | None = None
    non_torch_gib: float | None = None
    consumed_gib: float | None = None  # weights + non-torch (V1 summary)
    activation_gib: float | None = None  # peak activation (profile run)
    graph_gib: float | None = None  # CUDA graphs (actual, else vLLM's estimate)
    kv_gib: float | None = None  # the KV cache budget (negative: the rest overran the budget)
    kv_needed_gib: float | None = None  # KV for one max_model_len sequence (vLLM's refusal)
    gpu_blocks: int | None = None
    cpu_blocks: int | None = None
    block_size: int | None = None
    kv_tokens: int | None = None  # tokens the KV cache holds
    fit_max_len: int | None = None  # vLLM's estimate of the longest sequence that fits
    max_model_len: int | None = None
    concurrency: float | None = None  # max concurrency at concurrency_tokens per request
    concurrency_tokens: int | None = None

    @property
    def kv_capacity_tokens(self) -> int | None:
        """Tokens the KV cache holds: as printed, else blocks x block size."""
        if self.kv_tokens is not None:
            return self.kv_tokens
        if self.gpu_blocks is not None and self.block_size:
            return self.gpu_blocks * self.block_size
        return None

    @property
    def kv_gib_per_token(self) -> float | None:
        tokens = self.kv_capacity_tokens
        if self.kv_gib is not None and self.kv_gib > 0 and tokens:
            return self.kv_gib / tokens
        if self.kv_needed_gib and self.max_model_len:
            return self.kv_needed_gib / self.max_model_len
        return None

    @property
    def kv_deficit_tokens(self) -> int | None:
        """max_model_len minus the tokens the KV cache holds (> 0: one sequence cannot fit)."""
        # vLLM's own estimate for this start first (a log may hold an earlier start's tokens)
        tokens = self.fit_max_len if self.fit_max_len is not None else self.kv_capacity_tokens
        if tokens is None or not self.max_model_len:
            return None
        return self.max_model_len - tokens

    @property
    def kv_deficit_gib(self) -> float | None:
        """KV memory one max_model_len sequence needs minus the KV budget (> 0: short by)."""
        available = self.kv_gib
        needed = self.kv_needed_gib
        if needed is None and self.max_model_len and (per := self.kv_gib_per_token):
            needed = per * self.max_model_len
        if needed is None or available is None:
            return None
        return round(needed - available, 6)

    @property
    def no_kv_memory(self) -> bool:
        """The budget left nothing for the KV cache (V0 "# GPU blocks: 0", a negative KV)."""
        if (self.gpu_blocks is not None and self.gpu_blocks <= 0) or self.kv_tokens == 0:
            return True
        if self.kv_gib is None or self.kv_gib > 0:
            return False
        # 0.0 GiB is also what a tiny --kv-cache-memory-bytes prints: then tokens still fit
        return self.kv_gib < 0 or (self.kv_capacity_tokens is None and self.fit_max_len is None)

    @property
    def empty(self) -> bool:
        return all(getattr(self, f.name) is None for f in fields(self))


# event kind -> (field in the event, field in the ledger, how several values combine)
# "min": TP workers each print theirs and vLLM sizes the cache by the smallest; "max": the
# largest weights; "last": the latest line wins.
_TAKE: dict[str, tuple[tuple[str, str, str], ...]] = {
    "memory_summary": (
        ("total_gib", "total_gib", "last"), ("free_gib", "free_at_start_gib", "last"),
        ("utilization", "utilization", "last"), ("requested_gib", "requested_gib", "last"),
        ("weights_gib", "weights_gib", "max"), ("non_torch_gib", "non_torch_gib", "max"),
        ("consumed_gib", "consumed_gib", "max"), ("activation_gib", "activation_gib", "max"),
        ("graph_gib", "graph_gib", "max"), ("kv_gib", "kv_gib", "min"),
    ),
    "free_memory_below_utilization": (
        ("total_gib", "total_gib", "last"), ("free_gib", "free_at_start_gib", "min"),
        ("utilization", "utilization", "last"), ("requested_gib", "requested_gib", "last"),
    ),
    "weights_loaded": (("weights_gib", "weights_gib", "max"),),
    "kv_memory_available": (("kv_gib", "kv_gib", "min"),),
    "kv_memory_reserved": (("kv_gib", "kv_gib", "min"), ("free_gib", "free_at_start_gib", "min"),
                           ("total_gib", "total_gib", "last")),
    "kv_cache_tokens": (("tokens", "kv_tokens", "min"), ("per_request_tokens", "concurrency_tokens", "last"),
                        ("concurrency", "concurrency", "min")),
    "max_concurrency": (("per_request_tokens", "concurrency_tokens", "last"),
                        ("concurrency", "concurrency", "min")),
    "cuda_graph_memory": (("graph_gib", "graph_gib", "max"), ("estimated_gib", "graph_gib", "fill")),
    "kv_cache_blocks": (("gpu_blocks", "gpu_blocks", "min"), ("cpu_blocks", "cpu_blocks", "last")),
    "max_model_len": (("max_model_len", "max_model_len", "last"), ("full", "max_model_len", "fill")),
    "version": (("max_seq_len", "max_model_len", "fill"),),
    "max_seq_len_exceeds_kv": (
        ("max_seq_len", "max_model_len", "last"), ("needed_gib", "kv_needed_gib", "last"),
        ("available_gib", "kv_gib", "min"), ("estimated_max_len", "fit_max_len", "last"),
        ("kv_tokens", "kv_tokens", "min"),
    ),
    "cuda_oom": (("total_gib", "total_gib", "fill"),),
    # V1's profile check: "Initial free memory X GiB" is the free memory the start saw
    "memory_profiling_error": (("initial_free_gib", "free_at_start_gib", "min"),),
}  # fmt: skip

# The flags a start was given, as vLLM prints them (non-default args).
_ARGS = (("gpu_memory_utilization", "utilization"), ("max_model_len", "max_model_len"),
         ("block_size", "block_size"))  # fmt: skip


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if value != value or not -1e15 < value < 1e15:  # NaN, inf, or nothing a GPU has
        return None
    return value


class LedgerBuilder:
    """Fed a start's events in order; `ledger()` any time."""

    def __init__(self) -> None:
        self._values: dict[str, float | int] = {}

    @property
    def has_numbers(self) -> bool:
        return bool(self._values)

    def update(self, event: LogEvent) -> None:
        found = event.fields
        args = found.get("args")
        if event.kind == "non_default_args" and isinstance(args, dict):
            for arg, name in _ARGS:
                self._put(name, _number(args.get(arg)), "fill")
            return
        for source, name, how in _TAKE.get(event.kind, ()):
            self._put(name, _number(found.get(source)), how)

    def _put(self, name: str, value: float | None, how: str) -> None:
        if value is None:
            return
        old = self._values.get(name)
        if old is None or how == "last":
            self._values[name] = value
        elif how == "min":
            self._values[name] = min(old, value)
        elif how == "max":
            self._values[name] = max(old, value)
        # "fill": only when nothing was read before

    def ledger(self) -> MemoryLedger:
        ledger = MemoryLedger(**self._values)  # type: ignore[arg-type]
        ints = {f: int(v) for f in ("gpu_blocks", "cpu_blocks", "block_size", "kv_tokens",
                                    "fit_max_len", "max_model_len", "concurrency_tokens")
                if isinstance(v := getattr(ledger, f), float)}  # fmt: skip
        ledger = replace(ledger, **ints) if ints else ledger
        return _derived(ledger)


def _derived(ledger: MemoryLedger) -> MemoryLedger:
    """Fill what vLLM's own arithmetic gives from the numbers that are there."""
    changes: dict[str, object] = {}
    total, util = ledger.total_gib, ledger.utilization
    if ledger.requested_gib is None and total and util:
        changes["requested_gib"] = round(total * util, 4)
    if (
        ledger.consumed_gib is None
        and ledger.weights_gib is not None
        and ledger.non_torch_gib is not None
    ):
        changes["consumed_gib"] = round(ledger.weights_gib + ledger.non_torch_gib, 4)
    # V0 prints blocks and "Maximum concurrency for L tokens per request: C x" = blocks x
    # block size / L: the block size follows (vLLM's block sizes are powers of two)
    if (ledger.block_size is None and ledger.gpu_blocks and ledger.concurrency
            and ledger.concurrency_tokens):  # fmt: skip
        size = ledger.concurrency * ledger.concurrency_tokens / ledger.gpu_blocks
        nearest = min((1, 2, 4, 8, 16, 32, 64, 128, 256), key=lambda b: abs(b - size))
        if abs(nearest - size) <= 0.05 * nearest:
            changes["block_size"] = nearest
    if ledger.kv_tokens is None and ledger.concurrency and ledger.concurrency_tokens:
        if ledger.gpu_blocks is None:  # V1: tokens = concurrency x tokens per request
            changes["kv_tokens"] = int(round(ledger.concurrency * ledger.concurrency_tokens))
    if ledger.max_model_len is None and ledger.concurrency_tokens:
        changes["max_model_len"] = ledger.concurrency_tokens
    return replace(ledger, **changes) if changes else ledger  # type: ignore[arg-type]
