"""A flag on the command line that the release in force no longer has: drop it.

The flags are the command line's, or with none given, those a person's words quote. The
release is the one stated (--vllm-version, or one written out in the text that Context.version
reads; never one it infers from V0 wording or an old torch message). Where release_flags reads that release as past the flag's
removal, argparse would refuse the launch ("unrecognized arguments"); the answer is to drop
the flag (an "unset"), and where vLLM named a successor, to set that instead
(release_flags for --task's runner, release_flags for --worker-use-ray's executor).

Silent where the log shows vLLM got past its argument parser (any event of the log: the flag
was accepted, so the release said is not the one that ran), where argparse's own refusal is in
the log (rules_flags.unrecognized_arguments answers that), and for a release between the last
read with the flag and the first read without it.
"""

from __future__ import annotations

import re

from headroom.doctor.findings import Action, Finding
from headroom.doctor.release_flags import gone_in, replacement_action
from headroom.vllm_cmd.flags import lookup_option

ID = "flag-not-in-release"
_QUOTED_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*")


def _typed(ctx) -> list[str]:
    """Engine-arg names typed on the command line, in order; with no command line given, the
    flags a person's words quote ("The plan included --swap-space 0 as a flag on both serve
    scripts"): a thread that only tells of its line still names the flag."""
    cmd = ctx.inputs.command
    if cmd is not None:
        return list(cmd.engine_args())
    named: list[str] = []
    for line in ctx.prose_lines:
        for found in _QUOTED_FLAG.finditer(line):
            spec = lookup_option(found.group(0))
            if spec is not None and spec.dest not in named:
                named.append(spec.dest)
    return named


def _stated_release(ctx) -> str | None:
    """The release given or written out, never one Context.version infers from wording (V0's
    phrases, an old torch message): a guess must not take a flag away."""
    if ctx.inputs.vllm_version:
        return str(ctx.inputs.vllm_version)
    release = ctx.version
    if release and any(release in line for line in ctx.raw_lines[:50]):
        return release
    return None


def flag_not_in_release(ctx) -> list[Finding]:
    """Flags the stated release does not accept: unset each (module doc)."""
    release = _stated_release(ctx)
    if release is None or ctx.events:
        return []
    gone = [(name, row) for name in _typed(ctx) if (row := gone_in(name, release)) is not None]
    if not gone:
        return []
    evidence = []
    acts: list[Action] = []
    for name, row in gone:
        evidence.append(
            f"{row.flag} is in vLLM's argument parser up to {row.last_with} and gone by "
            f"{row.first_without} (the releases read); {release} would refuse it as an "
            f"unrecognized argument: {row.instead}"
        )
        cmd = ctx.inputs.command
        value = cmd.get(name) if cmd is not None else None
        replaced = replacement_action(row.flag, None if value is None else str(value))
        if replaced is None and row.replacement is not None:
            knob, new = row.replacement
            replaced = Action(knob, "set", new, row.instead, "")
        if replaced is not None:
            acts.append(replaced)
        acts.append(Action(name, "unset", None, f"vLLM {release} has no {row.flag}: remove it", ""))
    title = f"{gone[0][1].flag} is not a flag of vLLM {release}"
    return [Finding(ID, None, "error", title, tuple(evidence), tuple(acts))]


RULES = (flag_not_in_release,)
