"""The engine arg that took over a removed flag, for a flag argparse refused.

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

from headroom.doctor.findings import Action

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
