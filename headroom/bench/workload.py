"""What a bench sends: request-size distributions, the concurrency ramp, synthetic prompts.

Uniform short prompts flatter a server (tiny prefills, no KV pressure), so every bench draws
its request sizes from a named distribution: a built-in mix (chat, long-document, code) or a
JSONL file of `{"prompt_tokens": N, "output_tokens": M}` / `{"prompt": "...", "output_tokens": M}`
lines. The distribution's fingerprint goes into the results, so two runs are only compared
when they sent the same kind of traffic.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path


class WorkloadError(ValueError):
    """A workload file, ramp or mix name that cannot be used; the message says why."""


@dataclass(frozen=True)
class RequestShape:
    """One request to send: target prompt and output lengths in tokens, or a real prompt."""

    prompt_tokens: int
    output_tokens: int
    prompt: str | None = None


@dataclass(frozen=True)
class Mix:
    """A built-in distribution: log-uniform prompt and output lengths within ranges."""

    name: str
    description: str
    prompt_range: tuple[int, int]
    output_range: tuple[int, int]


# Ranges chosen to resemble each traffic kind; log-uniform so short requests dominate the
# count while long ones still appear (as in real chat logs).
BUILTIN_MIXES: dict[str, Mix] = {
    "chat": Mix(
        "chat", "chat turns: short-to-medium prompts, medium answers", (64, 1024), (64, 384)
    ),
    "long-document": Mix(
        "long-document",
        "summarise/QA over long documents: long prompts, short answers",
        (2048, 6144),
        (64, 256),
    ),
    "code": Mix(
        "code", "code completion: medium prompts, short completions", (256, 2048), (16, 128)
    ),
}


@dataclass(frozen=True)
class Distribution:
    """Where request shapes come from; `sample` is deterministic for a given rng."""

    name: str
    description: str
    mix: Mix | None = None
    shapes: tuple[RequestShape, ...] = ()
    max_total_tokens: int | None = None  # clamp prompt+output to the model's max_model_len
    fingerprint: str = field(default="")

    def sample(self, rng: random.Random) -> RequestShape:
        if self.mix is not None:
            shape = RequestShape(
                _log_uniform(rng, *self.mix.prompt_range), _log_uniform(rng, *self.mix.output_range)
            )
        else:
            shape = self.shapes[rng.randrange(len(self.shapes))]
        return self._clamp(shape)

    def _clamp(self, shape: RequestShape) -> RequestShape:
        limit = self.max_total_tokens
        if limit is None or shape.prompt_tokens + shape.output_tokens <= limit:
            return shape
        # Keep at least one output token and a small safety margin for chat templates and
        # tokenizer differences, so a clamped request is never rejected for length.
        budget = max(2, int(limit * 0.9))
        output = max(1, min(shape.output_tokens, budget // 4))
        prompt = max(1, min(shape.prompt_tokens, budget - output))
        # A real prompt is cut by characters (about 4 per token) to stay under the limit.
        text = shape.prompt[: prompt * 4] if shape.prompt is not None else None
        return RequestShape(prompt, output, text)

    def with_limit(self, max_total_tokens: int | None) -> Distribution:
        return Distribution(
            self.name, self.description, self.mix, self.shapes, max_total_tokens, self.fingerprint
        )

    def describe(self) -> dict[str, object]:
        """The JSON form recorded with the results."""
        out: dict[str, object] = {"name": self.name, "fingerprint": self.fingerprint}
        if self.mix is not None:
            out["prompt_tokens_range"] = list(self.mix.prompt_range)
            out["output_tokens_range"] = list(self.mix.output_range)
        else:
            out["requests_in_file"] = len(self.shapes)
        if self.max_total_tokens is not None:
            out["clamped_to_tokens"] = self.max_total_tokens
        return out


def _log_uniform(rng: random.Random, low: int, high: int) -> int:
    if high <= low:
        return low
    return int(round(math.exp(rng.uniform(math.log(low), math.log(high)))))


def _fingerprint(payload: object) -> str:
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def builtin_distribution(name: str) -> Distribution:
    mix = BUILTIN_MIXES.get(name)
    if mix is None:
        known = ", ".join(sorted(BUILTIN_MIXES))
        raise WorkloadError(f"unknown mix {name!r}; built-in mixes are: {known}")
    fp = _fingerprint({"mix": mix.name, "prompt": mix.prompt_range, "output": mix.output_range})
    return Distribution(mix.name, mix.description, mix=mix, fingerprint=fp)


def load_jsonl_distribution(path: str | Path) -> Distribution:
    """Read a JSONL workload; every line must give output_tokens and a prompt or prompt_tokens."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise WorkloadError(f"cannot read workload file {path}: {exc.strerror or exc}") from exc
    shapes: list[RequestShape] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        shapes.append(_parse_line(line, f"{path.name}:{lineno}"))
    if not shapes:
        raise WorkloadError(f"workload file {path} has no requests")
    fp = _fingerprint([[s.prompt_tokens, s.output_tokens, s.prompt] for s in shapes])
    return Distribution(
        f"file:{path.name}",
        f"{len(shapes)} requests from {path.name}",
        shapes=tuple(shapes),
        fingerprint=fp,
    )


def _parse_line(line: str, where: str) -> RequestShape:
    try:
        item = json.loads(line)
    except json.JSONDecodeError as exc:
        raise WorkloadError(f"{where}: not JSON ({exc.msg})") from None
    if not isinstance(item, dict):
        raise WorkloadError(f"{where}: expected an object with output_tokens and a prompt")
    output = _positive_int(
        item.get("output_tokens", item.get("max_tokens")), where, "output_tokens"
    )
    prompt = item.get("prompt")
    if prompt is not None:
        if not isinstance(prompt, str) or not prompt:
            raise WorkloadError(f"{where}: prompt must be a non-empty string")
        # Rough count for clamping only; the server reports the true count in `usage`.
        return RequestShape(max(1, len(prompt) // 4), output, prompt)
    return RequestShape(_positive_int(item.get("prompt_tokens"), where, "prompt_tokens"), output)


def _positive_int(value: object, where: str, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 1:
        raise WorkloadError(f"{where}: {name} must be a positive integer, got {value!r}")
    if isinstance(value, float) and not value.is_integer():
        raise WorkloadError(f"{where}: {name} must be a whole number, got {value!r}")
    return int(value)


def resolve_distribution(spec: str) -> Distribution:
    """A built-in mix name, or a path to a JSONL file."""
    if spec in BUILTIN_MIXES:
        return builtin_distribution(spec)
    if spec.endswith(".jsonl") or Path(spec).exists():
        return load_jsonl_distribution(spec)
    return builtin_distribution(spec)  # raises with the list of known mixes


# --- the ramp ---------------------------------------------------------------------------

DEFAULT_MAX_CONCURRENCY = 16


def parse_ramp(text: str | None, max_concurrency: int | None = None) -> tuple[int, ...]:
    """'1,2,4,8' -> (1, 2, 4, 8); None -> doubling from 1 up to max_concurrency (default 16)."""
    if text is None or not text.strip():
        return doubling_ramp(max_concurrency or DEFAULT_MAX_CONCURRENCY)
    steps: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit() or int(part) < 1:
            raise WorkloadError(f"ramp step {part!r} is not a positive whole number (e.g. 1,2,4,8)")
        steps.append(int(part))
    if steps != sorted(set(steps)):
        raise WorkloadError(f"ramp {text!r} must rise strictly (e.g. 1,2,4,8)")
    if max_concurrency is not None:
        steps = [s for s in steps if s <= max_concurrency]
        if not steps:
            raise WorkloadError(f"every ramp step is above --max-concurrency {max_concurrency}")
    return tuple(steps)


def doubling_ramp(limit: int) -> tuple[int, ...]:
    if limit < 1:
        raise WorkloadError(f"max concurrency must be at least 1, got {limit}")
    steps = [1]
    while steps[-1] * 2 <= limit:
        steps.append(steps[-1] * 2)
    if steps[-1] != limit:
        steps.append(limit)
    return tuple(steps)


# --- synthetic prompts ------------------------------------------------------------------

# Common English words that most BPE vocabularies hold as one token each (with their
# leading space), so N words come out close to N tokens on real tokenizers.
_WORDS: Sequence[str] = (
    "the of and to in is that for it as was with be by on not he this are or his from at "
    "which but have an they you were her she there one all we their has been if more when "
    "will would who so no out up into do than other some time what only could new these two "
    "may first then any like now my over such our man me even most made after also did many "
    "before must through back years where much your way well down should because each just"
).split()


def synth_prompt(tokens: int, rng: random.Random, serial: int) -> str:
    """About `tokens` tokens of filler text; a unique head defeats prefix caching, which
    would otherwise make every prefill after the first nearly free and flatter the server."""
    head = f"Request {serial}:"
    count = max(0, tokens - 3)
    return head + "".join(" " + _WORDS[rng.randrange(len(_WORDS))] for _ in range(count))
