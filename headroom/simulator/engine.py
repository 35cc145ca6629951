"""Continuous batching over a paged KV pool, behaving like vLLM V1's scheduler.

Per step (vllm/v1/core/sched/scheduler.py): running requests are scheduled first, in order,
each asking for blocks for its new tokens; when the pool is empty the *last* running request
is preempted (RECOMPUTE: its blocks are freed and it goes back to the front of the waiting
queue) and the counter rises. Waiting requests are admitted only if nothing was preempted in
this step, while max_num_seqs and the token budget allow and their blocks fit. With prefix
caching (vLLM's default), freed blocks stay cached until reused (LRU, tail blocks first), so a
preempted request that comes back soon finds its prefix and recomputes less.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from headroom.simulator.accounting import cdiv

_ids = itertools.count(1)


@dataclass
class SimRequest:
    """One generation request as the engine tracks it."""

    prompt_tokens: int
    max_tokens: int
    arrival: float = 0.0
    eos_at: int | None = None  # without ignore_eos, the model 'emits EOS' here
    request_id: str = field(default_factory=lambda: f"cmpl-sim-{next(_ids)}")
    output_tokens: int = 0
    num_computed: int = 0
    blocks: int = 0
    preemptions: int = 0
    scheduled_at: float | None = None
    first_token_at: float | None = None
    last_token_at: float | None = None
    finished_at: float | None = None
    finish_reason: str | None = None
    token_times: list[float] = field(default_factory=list)
    prompt_counted: bool = False
    on_tokens: Callable[[SimRequest, int], None] | None = None

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.output_tokens


@dataclass
class StepResult:
    duration: float
    prefill_tokens: int
    decode_seqs: int
    emitted: list[tuple[SimRequest, int]]  # (request, new tokens this step)
    finished: list[SimRequest]


class FreePool:
    """vLLM's free block queue: never-used blocks first, then freed blocks oldest first.
    Freed blocks keep their cached prefix (per request) until they are handed out again."""

    def __init__(self, num_blocks: int) -> None:
        self.segments: deque[list] = deque([["clean", num_blocks]])
        self.cached: dict[str, int] = {}

    @property
    def free(self) -> int:
        return sum(n for _, n in self.segments)

    def take(self, count: int) -> None:
        while count > 0 and self.segments:
            seg = self.segments[0]
            used = min(count, seg[1])
            seg[1] -= used
            count -= used
            if seg[0] != "clean":
                # Tail blocks (the partial, uncached one first) are evicted first.
                self.cached[seg[0]] = min(self.cached.get(seg[0], 0), seg[1])
            if seg[1] == 0:
                self.segments.popleft()
                if seg[0] != "clean":
                    self.cached.pop(seg[0], None)

    def give_back(self, owner: str, count: int, cached_blocks: int) -> None:
        if count <= 0:
            return
        self.segments.append([owner, count])
        self.cached[owner] = min(cached_blocks, count)

    def reclaim(self, owner: str) -> int:
        """A returning request takes its still-cached blocks straight back; the rest of its
        old blocks stay free."""
        hit = self.cached.pop(owner, 0)
        for seg in list(self.segments):
            if seg[0] == owner:
                self.segments.remove(seg)
                if seg[1] > hit:
                    self.segments.appendleft(["clean", seg[1] - hit])
        return hit


class Engine:
    """The scheduler and its counters; `step()` runs one iteration and returns its cost."""

    def __init__(
        self,
        num_blocks: int,
        block_size: int,
        max_num_seqs: int,
        max_num_batched_tokens: int,
        step_time: Callable[[int, int, int], float],
        clock: Callable[[], float],
        prefix_caching: bool = True,
    ) -> None:
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.max_num_seqs = max_num_seqs
        self.budget = max_num_batched_tokens
        self.step_time = step_time
        self.clock = clock
        self.prefix_caching = prefix_caching
        self.pool = FreePool(max(0, num_blocks - 1))  # block 0 is the null block
        self.waiting: deque[SimRequest] = deque()
        self.running: list[SimRequest] = []
        self.num_preemptions = 0
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.prefix_queries = 0
        self.prefix_hits = 0
        self.iterations = 0
        self.peak_usage = 0.0

    # --- state --------------------------------------------------------------------------

    @property
    def usable_blocks(self) -> int:
        return max(0, self.num_blocks - 1)

    @property
    def used_blocks(self) -> int:
        return sum(r.blocks for r in self.running)

    @property
    def kv_usage(self) -> float:
        """vllm:kv_cache_usage_perc = 1 - free / (num_gpu_blocks - 1)."""
        if self.usable_blocks == 0:
            return 0.0
        return self.used_blocks / self.usable_blocks

    @property
    def has_work(self) -> bool:
        return bool(self.waiting or self.running)

    def add_request(self, req: SimRequest) -> None:
        req.arrival = self.clock() if req.arrival == 0.0 else req.arrival
        self.waiting.append(req)

    def abort(self, req: SimRequest) -> None:
        if req in self.running:
            self.running.remove(req)
            self._free(req)
        elif req in self.waiting:
            self.waiting.remove(req)
        if req.finish_reason is None:
            req.finish_reason = "abort"
            req.finished_at = self.clock()

    # --- scheduling ---------------------------------------------------------------------

    def _free(self, req: SimRequest) -> None:
        full = req.num_computed // self.block_size if self.prefix_caching else 0
        self.pool.give_back(req.request_id, req.blocks, min(full, req.blocks))
        req.blocks = 0

    def _grow(self, req: SimRequest, new_tokens: int) -> bool:
        need = cdiv(req.num_computed + new_tokens, self.block_size) - req.blocks
        if need <= 0:
            return True
        if self.pool.free < need:
            return False
        self.pool.take(need)
        req.blocks += need
        return True

    def _preempt(self) -> SimRequest:
        victim = self.running.pop()
        self._free(victim)
        victim.num_computed = 0
        victim.preemptions += 1
        self.num_preemptions += 1
        self.waiting.appendleft(victim)
        return victim

    def _schedule(self) -> dict[int, tuple[SimRequest, int]]:
        budget = self.budget
        plan: dict[int, tuple[SimRequest, int]] = {}
        preempted = False
        i = 0
        while i < len(self.running) and budget > 0:
            req = self.running[i]
            new = min(req.total_tokens - req.num_computed, budget)
            while not self._grow(req, new):
                victim = self._preempt()
                preempted = True
                plan.pop(id(victim), None)
                if victim is req:
                    break
            else:
                plan[id(req)] = (req, new)
                budget -= new
                i += 1
                continue
            # req itself was preempted; the list shifted, do not advance i
        if preempted:
            return plan
        while self.waiting and len(self.running) < self.max_num_seqs and budget > 0:
            req = self.waiting[0]
            hit_blocks = self.pool.reclaim(req.request_id) if self.prefix_caching else 0
            hit_tokens = min(hit_blocks * self.block_size, req.total_tokens - 1)
            req.blocks, req.num_computed = hit_blocks, hit_tokens
            new = min(req.total_tokens - req.num_computed, budget)
            if not self._grow(req, new):
                self._free(req)  # give the reclaimed prefix back, still cached
                req.num_computed = 0
                break
            self.waiting.popleft()
            self.prefix_queries += req.total_tokens
            self.prefix_hits += hit_tokens
            if not req.prompt_counted:
                self.prompt_tokens += req.prompt_tokens
                req.prompt_counted = True
            if req.scheduled_at is None:
                req.scheduled_at = self.clock()
            self.running.append(req)
            plan[id(req)] = (req, new)
            budget -= new
        return plan

    def step(self) -> StepResult:
        """Schedule, 'run' the batch, and advance every scheduled request."""
        plan = self._schedule()
        self.peak_usage = max(self.peak_usage, self.kv_usage)
        prefill = sum(n for r, n in plan.values() if r.num_computed + n < r.total_tokens or n > 1)
        decodes = sum(1 for r, n in plan.values() if n == 1)
        context = sum(r.num_computed for r, _ in plan.values())
        duration = self.step_time(prefill, decodes, context) if plan else 0.0
        return StepResult(duration, prefill, decodes, [(r, n) for r, n in plan.values()], [])

    def complete(self, result: StepResult) -> StepResult:
        """Apply a step's effects once its time has passed (tokens appear at the end)."""
        now = self.clock()
        emitted: list[tuple[SimRequest, int]] = []
        for req, new in result.emitted:
            if req not in self.running:
                continue
            req.num_computed += new
            if req.num_computed < req.total_tokens:
                continue  # still in a chunked prefill
            req.output_tokens += 1
            self.generation_tokens += 1
            req.token_times.append(now)
            if req.first_token_at is None:
                req.first_token_at = now
            req.last_token_at = now
            emitted.append((req, 1))
            stop = req.eos_at is not None and req.output_tokens >= req.eos_at
            if stop or req.output_tokens >= req.max_tokens:
                req.finish_reason = (
                    "stop" if stop and req.output_tokens < req.max_tokens else "length"
                )
                req.finished_at = now
                self.running.remove(req)
                self._free(req)
                result.finished.append(req)
        self.iterations += 1
        result.emitted = emitted
        return result
