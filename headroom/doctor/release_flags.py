"""Engine flags across vLLM releases: which release removed a flag, and what replaces it.

Release flags. Engine flags some vLLM release removed: the last release read that has each, the
first read
without it, and what takes its place.

Read in the released sources (the wheels' vllm/engine/arg_utils.py and
vllm/entrypoints/openai/cli_args.py, unpacked per release; a flag counts as present where
EngineArgs / AsyncEngineArgs declares its field or the parser adds its option, deprecated or
not). Releases read: 0.2.7, 0.3.3, 0.4.3, 0.5.5, 0.6.3, 0.6.4.post1, 0.6.6.post1, 0.7.3,
0.8.5, 0.9.2, 0.10.1.1, 0.10.2, 0.11.0, 0.12.0, 0.13.0 (--task only), 0.14.1, 0.16.0, 0.17.1,
0.20.0, 0.20.2, 0.25.1, 0.32.0, 0.33.0. Between the two releases of a row lie releases not
read: a release there is not known to lack the flag, and nothing is said about it.

- --swap-space: CacheConfig.swap_space through 0.17.1; gone from arg_utils.py by 0.18.0
  (shared/reference/vllm-facts.md, which also quotes 0.18.0's llm.py ignoring LLM(swap_space=)
  with "The 'swap_space' parameter is deprecated and ignored."; 0.20.0 and 0.20.2 read: gone,
  the same llm.py warning). The V1 engine preempts by recomputation: nothing replaces it.
- --disable-log-requests: 0.10.2-0.16.0 keep it as "[DEPRECATED] Disable logging requests."
  beside --enable-log-requests ("`disable_log_requests` is deprecated and has been replaced
  with `enable_log_requests`. This will be removed in v0.12.0"); gone in 0.17.1. Requests go
  unlogged by default since 0.10.2 (enable_log_requests: bool = False): dropping it is all.
- --guided-decoding-backend: 0.11.0 keeps it as "[DEPRECATED] --guided-decoding-backend will
  be removed in v0.12.0." beside --structured-outputs-config; gone in 0.12.0.
- --task: deprecated in 0.11.0-0.12.0 for --runner / --convert, gone in 0.13.0
  (release_flags maps each task to its runner).
- --enable-reasoning: 0.7.3-0.9.2; gone in 0.10.1.1 (--reasoning-parser alone turns it on).
- --use-v2-block-manager, --num-scheduler-steps, --tokenizer-pool-size: through 0.9.2, gone in
  0.10.1.1 (the V0 engine's block manager, multi-step scheduling and tokenizer pool).
- --max-seq-len-to-capture, --preemption-mode, --disable-async-output-proc: through 0.10.2,
  gone in 0.11.0.
- --disable-frontend-multiprocessing: through 0.17.1, gone in 0.20.0.
- --worker-use-ray: through 0.6.6.post1, gone in 0.7.3 (--distributed-executor-backend ray,
  which arg_utils.py offers from 0.4.3 on).
- --engine-use-ray: through 0.5.5, gone in 0.6.3.

Removed flag knobs. The engine arg that took over a removed flag, for a flag argparse refused.

rules_flags names a removed flag and says to drop it; where vLLM itself named the flag that
replaced it, that flag is the change to make, with the value the old one's value maps to.

`--task`: in 0.11.0-0.12.0 vllm/config/model.py deprecates it ("The 'task' option has been
deprecated and will be removed in v0.13.0 ... Please replace this option with `--runner
pooling` to continue using this model as a pooling model", and `--runner generate` for a
generative one), mapping each task to a runner by _RUNNER_TASKS: generate, transcription ->
generate; embedding, embed, classify, score, reward -> pooling; draft -> draft. 0.13.0's
engine/arg_utils.py has --runner and --convert and no --task (the wheels read: 0.11.0 and
0.12.0 have it, 0.13.0, 0.15.0 and 0.17.1 do not). vllm#35603 ("unrecognized arguments:
--task embedding") was answered with `--runner pooling` (vllm#53467 adds that hint to the
error). --convert (embed, classify, reward) is only needed to adapt a generative checkpoint:
vLLM picks it for a pooling model's own architecture, so it is not set here.
"""

from __future__ import annotations

from dataclasses import dataclass

from headroom.doctor.findings import Action
from headroom.doctor.versions import parse_version

__all__ = []


# --- release flags --------------------------------------------------------------------------------


@dataclass(frozen=True)
class RemovedFlag:
    flag: str
    last_with: str  # the last release read that accepts it
    first_without: str  # the first release read that does not
    instead: str  # what replaces it, in words
    replacement: tuple[str, str] | None = None  # (engine arg, value) to set in its place


REMOVED_FLAGS: dict[str, RemovedFlag] = {
    row.flag.lstrip("-").replace("-", "_"): row
    for row in (
        RemovedFlag(
            "--swap-space", "0.17.1", "0.18.0", "the V1 engine has no CPU swap space to size"
        ),
        RemovedFlag(
            "--disable-log-requests",
            "0.16.0",
            "0.17.1",
            "requests go unlogged by default (--enable-log-requests turns logging on)",
        ),
        RemovedFlag(
            "--guided-decoding-backend",
            "0.11.0",
            "0.12.0",
            "the structured-output backend is --structured-outputs-config's backend",
        ),
        RemovedFlag("--task", "0.12.0", "0.13.0", "--runner (and --convert) replace it"),
        RemovedFlag(
            "--enable-reasoning", "0.9.2", "0.10.1.1", "--reasoning-parser alone turns it on"
        ),
        RemovedFlag(
            "--use-v2-block-manager",
            "0.9.2",
            "0.10.1.1",
            "the block manager it selected is the only one",
        ),
        RemovedFlag(
            "--num-scheduler-steps", "0.9.2", "0.10.1.1", "multi-step scheduling went with V0"
        ),
        RemovedFlag("--tokenizer-pool-size", "0.9.2", "0.10.1.1", "the V0 tokenizer pool is gone"),
        RemovedFlag(
            "--max-seq-len-to-capture",
            "0.10.2",
            "0.11.0",
            "the compilation config's cudagraph_capture_sizes",
        ),
        RemovedFlag(
            "--preemption-mode", "0.10.2", "0.11.0", "the V1 engine preempts by recomputing"
        ),
        RemovedFlag(
            "--disable-async-output-proc",
            "0.10.2",
            "0.11.0",
            "the V0 output processor it turned off is gone",
        ),
        RemovedFlag(
            "--disable-frontend-multiprocessing",
            "0.17.1",
            "0.20.0",
            "the API server's frontend process layout is fixed",
        ),
        RemovedFlag(
            "--worker-use-ray",
            "0.6.6.post1",
            "0.7.3",
            "--distributed-executor-backend ray runs the workers on Ray",
            ("distributed_executor_backend", "ray"),
        ),
        RemovedFlag(
            "--engine-use-ray",
            "0.5.5",
            "0.6.3",
            "the engine runs in its own process; Ray runs the workers",
        ),
    )
}


def gone_in(dest: str, release: str | None) -> RemovedFlag | None:
    """The row of an engine arg `release` is known not to accept, else None (the flag is
    there, unknown, or the release lies between the last read with it and the first without)."""
    row = REMOVED_FLAGS.get(dest)
    version = parse_version(release)
    if row is None or version is None:
        return None
    return row if version >= parse_version(row.first_without) else None  # type: ignore[operator]


# --- removed flag knobs ---------------------------------------------------------------------------

# _RUNNER_TASKS of vllm/config/model.py (0.11.0, 0.12.0): the runner each task ran under.
_RUNNER_OF_TASK = {
    "generate": "generate",
    "transcription": "generate",
    "embedding": "pooling",
    "embed": "pooling",
    "classify": "pooling",
    "score": "pooling",
    "reward": "pooling",
    "draft": "draft",
}


def replacement_action(flag: str, value: str | None) -> Action | None:
    """The engine arg to set instead of a removed `flag` given `value`, or None."""
    if flag != "--task" or value is None:
        return None
    runner = _RUNNER_OF_TASK.get(value.strip().lower())
    if runner is None:
        return None
    return Action(
        "runner",
        "set",
        runner,
        f"--task is gone from 0.13.0; vLLM's deprecation said to replace --task {value} with "
        f"--runner {runner}",
        "",
    )
