"""`headroom bench`: a bounded concurrency ramp against an OpenAI-compatible server.

For each concurrency step, that many workers send streaming requests back to back (sizes
drawn from the distribution) for a duration or a request count, after a warm-up; meanwhile
a sampler reads the server's /metrics and, for a local server, NVML. Every bench stops by
itself: a total duration and a total request budget cap it, and a ramp stops early when a
whole step fails. Results carry the model, distribution and ramp that produced them, so
runs are compared only when those match (see bench_compare).

When a step is held for a duration, requests still streaming at its end are aborted ("cut"):
their tokens count towards tokens/s (the rate the server sustained) but not towards
requests/s or end-to-end latency, so hold steps several request-lengths long for honest e2e
figures. Before the ramp, one tiny request measures how many tokens a synthetic word makes
on this server's tokenizer (from `usage`), so prompts hit their target token counts.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit, urlunsplit

import httpx

from headroom.bench.client import BenchError, OpenAIClient
from headroom.bench.knee import DEFAULT_GAIN_THRESHOLD, Knee, LatencyTargets, find_knee
from headroom.bench.sampling import ServerSampler, default_sampler
from headroom.bench.stats import RequestResult, ServerSample, StepResult, summarise_step
from headroom.bench.workload import Distribution, builtin_distribution

__all__ = ["BenchConfig", "BenchError", "BenchProgress", "BenchResult", "run_bench"]

DEFAULT_RAMP = (1, 2, 4, 8, 16)


@dataclass(frozen=True)
class BenchConfig:
    """Everything a bench run needs; only `url` is contacted."""

    url: str
    ramp: tuple[int, ...] = DEFAULT_RAMP
    step_duration_s: float | None = 10.0  # hold each step this long...
    step_requests: int | None = None  # ...or until this many requests finished
    warmup_s: float = 2.0
    distribution: Distribution = field(default_factory=lambda: builtin_distribution("chat"))
    endpoint: str = "completions"
    model: str | None = None  # None = the first model /v1/models lists
    api_key: str | None = field(default=None, repr=False)
    max_duration_s: float = 300.0
    max_requests: int = 20_000
    request_timeout_s: float = 300.0
    sample_interval_s: float = 0.5
    gain_threshold: float = DEFAULT_GAIN_THRESHOLD
    targets: LatencyTargets = field(default_factory=LatencyTargets)
    seed: int = 0
    read_gpus: bool | None = None  # None = only when the server is on this host
    label: str | None = None  # e.g. "TP=2 NVLink"; shown in comparisons

    def __post_init__(self) -> None:
        if not self.ramp or any(c < 1 for c in self.ramp):
            raise ValueError("the ramp needs at least one concurrency of 1 or more")
        if self.step_duration_s is None and self.step_requests is None:
            raise ValueError("hold each step for a duration or a request count")
        if self.step_duration_s is not None and self.step_duration_s <= 0:
            raise ValueError("the step duration must be positive")
        if self.step_requests is not None and self.step_requests < 1:
            raise ValueError("the step request count must be at least 1")
        if self.endpoint not in ("completions", "chat"):
            raise ValueError(f"endpoint must be 'completions' or 'chat', not {self.endpoint!r}")

    @property
    def base_url(self) -> str:
        url = self.url.rstrip("/")
        return url[:-3] if url.endswith("/v1") else url

    def is_local(self) -> bool:
        host = (urlsplit(self.base_url).hostname or "").lower()
        return host in {"127.0.0.1", "localhost", "::1", "0.0.0.0"} or host.startswith("127.")


@dataclass(frozen=True)
class BenchProgress:
    """Posted while a bench runs (to a progress bar or the Bench screen)."""

    phase: str  # "warmup" | "step" | "done"
    step_index: int | None
    concurrency: int | None
    steps_total: int
    fraction: float  # of the whole ramp, 0..1
    step_fraction: float
    requests_done: int  # successful requests in the current step so far
    errors: int
    last_step: StepResult | None = None
    steps: tuple[StepResult, ...] = ()


@dataclass(frozen=True)
class BenchResult:
    """A finished (or stopped) bench: the `bench --json` document."""

    workload: dict
    steps: tuple[StepResult, ...]
    knee: Knee
    started_at: float  # unix time
    finished_at: float
    stopped_reason: str | None = None  # None = the whole ramp ran

    def to_json(self) -> dict[str, object]:
        return {
            "workload": self.workload,
            "steps": [s.to_json() for s in self.steps],
            "knee": self.knee.to_json(),
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "stopped_reason": self.stopped_reason,
        }

    @classmethod
    def from_json(cls, data: dict) -> BenchResult:
        k = data.get("knee") or {}
        knee = Knee(
            k.get("concurrency"),
            k.get("step"),
            k.get("reason", ""),
            k.get("kind", "none"),
            k.get("efficiency"),
        )
        return cls(
            workload=dict(data.get("workload") or {}),
            steps=tuple(StepResult.from_json(s) for s in data.get("steps") or ()),
            knee=knee,
            started_at=float(data.get("started_at") or 0.0),
            finished_at=float(data.get("finished_at") or 0.0),
            stopped_reason=data.get("stopped_reason"),
        )


ProgressCallback = Callable[[BenchProgress], None]


class _Budget:
    """The bench-wide caps: total duration and total requests."""

    def __init__(self, config: BenchConfig) -> None:
        self.deadline = time.monotonic() + config.max_duration_s
        self.requests_left = config.max_requests
        self.reason: str | None = None
        self.max_duration_s = config.max_duration_s
        self.max_requests = config.max_requests

    def take(self) -> bool:
        if time.monotonic() >= self.deadline:
            self.reason = self.reason or f"stopped at the {self.max_duration_s:g} s duration cap"
            return False
        if self.requests_left <= 0:
            self.reason = self.reason or f"stopped at the {self.max_requests} request cap"
            return False
        self.requests_left -= 1
        return True


async def run_bench(
    config: BenchConfig,
    *,
    client: httpx.AsyncClient | None = None,
    on_progress: ProgressCallback | None = None,
    sampler: ServerSampler | None = None,
    stop: asyncio.Event | None = None,
) -> BenchResult:
    """Run the ramp; raises BenchError only when nothing can be measured at all."""
    own_client = client is None
    client = client or httpx.AsyncClient(limits=httpx.Limits(max_connections=None))
    try:
        return await _Runner(config, client, on_progress, sampler, stop or asyncio.Event()).run()
    finally:
        if own_client:
            await client.aclose()


class _Runner:
    def __init__(self, config, client, on_progress, sampler, stop) -> None:
        self.config: BenchConfig = config
        self.api = OpenAIClient(
            config.base_url,
            client,
            config.endpoint,
            config.api_key,
            config.request_timeout_s,
            config.seed,
        )
        self.on_progress = on_progress or (lambda _p: None)
        read_gpus = config.read_gpus if config.read_gpus is not None else config.is_local()
        self.sampler = sampler or default_sampler(config.base_url, client, read_gpus)
        self.stop: asyncio.Event = stop
        self.rng = random.Random(config.seed)
        self.steps: list[StepResult] = []

    async def run(self) -> BenchResult:
        cfg = self.config
        started = time.time()
        models = await self.api.list_models()
        served = next((m for m in models if m.id == cfg.model), None) if cfg.model else models[0]
        if served is None:
            names = ", ".join(m.id for m in models)
            raise BenchError(
                f"model {cfg.model!r} is not served at {cfg.base_url} (it serves {names})"
            )
        dist = cfg.distribution.with_limit(served.max_model_len)
        budget = _Budget(cfg)
        synthetic = dist.mix is not None or any(s.prompt is None for s in dist.shapes)
        if synthetic and budget.take():  # the calibration request counts as a request
            await self.api.calibrate(served.id, self.rng)
        if cfg.warmup_s > 0 and not self.stop.is_set():
            self._post("warmup", None, cfg.ramp[0], 0.0, 0, 0)
            await self._hold(cfg.ramp[0], served.id, dist, budget, cfg.warmup_s, None, None)
        reason: str | None = None
        for index, conc in enumerate(cfg.ramp):
            if self.stop.is_set():
                reason = "stopped by the user"
                break
            step = await self._step(index, conc, served.id, dist, budget)
            if step is not None:
                self.steps.append(step)
                self._post("step", index, conc, 1.0, step.requests, step.errors, step)
            if budget.reason:
                reason = budget.reason
                break
            if step is not None and step.requests == 0 and step.errors > 0:
                reason = (
                    f"every request at concurrency {conc} failed "
                    f"({step.error_examples[0] if step.error_examples else 'error'})"
                )
                break
        if reason is None and self.stop.is_set():
            reason = "stopped by the user"
        knee = find_knee(self.steps, cfg.gain_threshold, cfg.targets)
        result = BenchResult(
            self._workload(served, dist), tuple(self.steps), knee, started, time.time(), reason
        )
        self._post("done", None, None, 1.0, 0, 0)
        return result

    def _workload(self, served, dist: Distribution) -> dict:
        cfg = self.config
        return {
            "model": served.id,
            "max_model_len": served.max_model_len,
            "url": public_url(cfg.base_url),
            "endpoint": cfg.endpoint,
            "distribution": dist.describe(),
            "ramp": list(cfg.ramp),
            "step_duration_s": cfg.step_duration_s,
            "step_requests": cfg.step_requests,
            "warmup_s": cfg.warmup_s,
            "seed": cfg.seed,
            "tokens_per_word": round(self.api.tokens_per_word, 3),
            "gain_threshold": cfg.gain_threshold,
            "latency_targets": cfg.targets.to_json(),
            "label": cfg.label,
        }

    async def _step(self, index, conc, model, dist, budget) -> StepResult | None:
        cfg = self.config
        samples: list[ServerSample] = []
        sample_task = asyncio.create_task(self._sample_loop(samples))
        results: list[RequestResult] = []

        def tick(fraction: float) -> None:
            done = sum(1 for r in results if r.finished_at and not r.error and not r.cut)
            errs = sum(1 for r in results if r.error)
            self._post("step", index, conc, fraction, done, errs)

        try:
            start, end = await self._hold(
                conc, model, dist, budget, cfg.step_duration_s, cfg.step_requests, results, tick
            )
        finally:
            sample_task.cancel()
            await asyncio.gather(sample_task, return_exceptions=True)
        samples.append(await self._safe_sample())
        if not results:
            return None
        return summarise_step(conc, end - start, results, samples, (start, end))

    async def _hold(self, conc, model, dist, budget, duration, count, results=None, tick=None):
        """Keep `conc` requests in flight until the duration passes or `count` finished."""
        results = results if results is not None else []
        issued = 0
        start = time.monotonic()
        deadline = start + duration if duration is not None else None
        if deadline is not None:
            deadline = min(deadline, budget.deadline)

        async def worker() -> None:
            nonlocal issued
            failures = 0
            while not self.stop.is_set():
                if count is not None and issued >= count:
                    return
                if deadline is not None and time.monotonic() >= deadline:
                    return
                if not budget.take():
                    return
                issued += 1
                shape = dist.sample(self.rng)
                result = RequestResult(started_at=time.monotonic())
                results.append(result)
                await self.api.send(model, shape, result, self.rng)
                # A server that fails at once must not be hammered in a tight loop.
                failures = failures + 1 if result.error else 0
                if failures:
                    await asyncio.sleep(min(1.0, 0.02 * 2**failures))

        workers = [asyncio.create_task(worker()) for _ in range(conc)]
        pending = set(workers)
        while pending:
            wait_s = 0.25
            if deadline is not None:
                wait_s = max(0.0, min(wait_s, deadline - time.monotonic()))
            _, pending = await asyncio.wait(pending, timeout=wait_s)
            now = time.monotonic()
            if tick is not None:
                tick(self._fraction(start, now, duration, count, results))
            over = (deadline is not None and now >= deadline) or now >= budget.deadline
            if pending and (over or self.stop.is_set()):
                if now >= budget.deadline:
                    budget.take()  # records the reason
                # The step is over: abort what is still streaming (counted as cut).
                for task in pending:
                    task.cancel()
                await asyncio.gather(*pending, return_exceptions=True)
                break
        end = time.monotonic()
        if deadline is None or end < deadline:
            # Request-count mode: the step lasted until its last request finished.
            finished = [r.finished_at for r in results if r.finished_at is not None]
            end = max(finished) if finished else end
        return start, end

    @staticmethod
    def _fraction(start, now, duration, count, results) -> float:
        if duration is not None:
            return min(1.0, (now - start) / duration) if duration > 0 else 1.0
        done = sum(1 for r in results if r.finished_at is not None)
        return min(1.0, done / count) if count else 1.0

    async def _sample_loop(self, samples: list[ServerSample]) -> None:
        while True:
            samples.append(await self._safe_sample())
            await asyncio.sleep(self.config.sample_interval_s)

    async def _safe_sample(self) -> ServerSample:
        try:
            return await self.sampler()
        except Exception:  # a sampler failing must never stop the bench
            return ServerSample()

    def _post(self, phase, index, conc, step_fraction, done, errors, last=None) -> None:
        total = len(self.config.ramp)
        if phase == "done":
            fraction = 1.0
        elif index is None:
            fraction = 0.0
        else:
            fraction = (index + step_fraction) / total
        self.on_progress(
            BenchProgress(
                phase,
                index,
                conc,
                total,
                min(1.0, fraction),
                step_fraction,
                done,
                errors,
                last,
                tuple(self.steps),
            )
        )


def public_url(url: str) -> str:
    """The URL without user:password@ (never recorded or journaled)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def with_label(config: BenchConfig, label: str | None) -> BenchConfig:
    return replace(config, label=label)


SamplerFactory = Callable[[], Awaitable[ServerSample]]
