"""Eager mode in force and decoding said to be slow: drop --enforce-eager (an "unset").

`--enforce-eager` turns CUDA graphs off, and with them the replay that makes each decoding
step cheap: vLLM's help for the flag says "Always use eager-mode PyTorch. If False, will use
eager mode and CUDA graph in hybrid for maximal performance and flexibility." (arg_utils.py,
read at 0.6.3, 0.7.1, 0.7.2; ModelConfig's docstring at 0.9.2; the newest releases'
ModelConfig: it "disables both torch.compile and CUDA graphs"), and 0.6.x warns "To see
benefits of async output processing, enable CUDA graph. Since, enforce-eager is enabled,
async output processor cannot be used" (config.py 0.6.3). The field's answer to slow
decoding under that flag is to remove it: 11.2 -> 45.9 tokens/s on an A6000
(Project-MONAI/VLM-Surgical-Agent-Framework#5), "massively slows down decode"
(scaleapi/llm-engine#851), "prefer perf over pod launch time" (ai-dynamo/dynamo#2109).

Fires when the launch runs eager mode (the command line's `--enforce-eager`, the log's
non-default args, the engine's config line `enforce_eager=True`, or, with no command line
given, words that remove the flag) and a sentence of the log
says generation is slow or names dropping eager mode (probes.symptom_speed). The cost is
said: CUDA graphs take GPU memory of their own again (V0's capture log: "CUDA graphs can take
additional 1~3 GiB memory per GPU", model_runner.py 0.6.3), so a GPU filled close to its
limit may need a lower gpu_memory_utilization beside it.

Silent beside any failure event (an OOM, a KV shortage, a CUDA-graph capture or support
error: eager mode is their answer, never to be taken away), when the words say memory is
short or graph capture fails, where the log names an out-of-memory or a capture failure in
any words, and on a backend without CUDA graphs (the CPU, TPU, XPU or HPU engine config).
"""

from __future__ import annotations

import re

from headroom.doctor.findings import Action, Finding
from headroom.doctor.rules_throughput_caps import NEUTRAL_KINDS
from headroom.probes.symptom_speed import decoding_slow, eager_removal_named

ID = "eager-slows-decoding"
_HELP = (
    "vLLM's --enforce-eager help: 'Always use eager-mode PyTorch. If False, will use eager "
    "mode and CUDA graph in hybrid for maximal performance and flexibility.'"
)
# The engine's config line ("Initializing an LLM engine (v0.6.3) with config: ...,
# enforce_eager=True, ..."; V1: "Initializing a V1 LLM engine ..."), never the capture
# advice "To run the model in eager mode, set 'enforce_eager=True'", which says graphs run.
_CONFIG_EAGER = re.compile(r"LLM engine\b.{0,40}?with config: .*?[\s,]enforce_eager=True\b")
_DEVICE = re.compile(r"(?<!\w)device_config=(\w+)")
_NO_GRAPHS = frozenset({"cpu", "tpu", "xpu", "hpu", "neuron"})
# Memory or capture trouble in any words of the log: eager mode may be its fix.
_MEMORY_TROUBLE = re.compile(
    r"out\s+of\s+memory|\bOOM\b|OutOfMemory|显存不足|爆显存|"
    r"(?:cuda\s*graph|cudagraph|graph\s+captur\w*)[^.\n]{0,60}?"
    r"(?:fail|error|crash|hang|stuck|oom)",
    re.IGNORECASE,
)
_TIGHT_UTILIZATION = 0.95
_SCAN_LINES = 200


def _eager_in_force(ctx) -> str | None:
    """What says the launch runs eager mode, in words; None when nothing does."""
    if ctx.inputs.command is not None:
        if ctx.inputs.command.get("enforce_eager") is True:
            return "the command line runs eager mode (--enforce-eager)"
        return None
    if ctx.launched_args.get("enforce_eager") is True:
        return "the log's non-default args say enforce_eager: True"
    for line in ctx.raw_lines[:_SCAN_LINES]:
        if _CONFIG_EAGER.search(line):
            return "the engine's config line says enforce_eager=True"
    # With no command line given, words that remove the flag ("rm enforce eager from vllm
    # deploy", "Remove enforce-eager to enable HPU graphs") say it was on: one removes
    # only what is set.
    if any(eager_removal_named(line) for line in ctx.prose_lines):
        return "the words remove --enforce-eager: the launch ran with it"
    return None


def _graphs_impossible(ctx) -> bool:
    for line in ctx.raw_lines[:_SCAN_LINES]:
        found = _DEVICE.search(line)
        if found and found.group(1).lower() in _NO_GRAPHS:
            return True
    return False


def _memory_or_capture_trouble(ctx) -> bool:
    if any(e.kind not in NEUTRAL_KINDS for e in ctx.events):
        return True
    words = ctx.words
    if words is not None and (words.memory_short or words.graph_capture_failed):
        return True
    return any(_MEMORY_TROUBLE.search(line) for line in ctx.prose_lines)


def _slowness_said(ctx) -> str | None:
    for line in ctx.prose_lines:
        if decoding_slow(line) or eager_removal_named(line):
            return line.strip()
    return None


def eager_slows_decoding(ctx) -> list[Finding]:
    """Slow decoding said under --enforce-eager: unset it (module doc)."""
    eager = _eager_in_force(ctx)
    if eager is None:
        return []
    said = _slowness_said(ctx)
    if said is None or _memory_or_capture_trouble(ctx) or _graphs_impossible(ctx):
        return []
    evidence = [said[:400], eager, _HELP]
    util = (
        ctx.knobs.gpu_memory_utilization
        if ctx.knob_state("gpu_memory_utilization") == "set"
        else None
    )
    if util is not None and util >= _TIGHT_UTILIZATION:
        evidence.append(
            f"gpu_memory_utilization {util} leaves little room outside the budget for CUDA "
            "graphs: lower it if the restart runs out of memory during capture"
        )
    action = Action(
        "enforce_eager",
        "unset",
        None,
        "eager mode runs every decoding step without CUDA graphs: the slow part of the "
        "workload it reports",
        "CUDA graphs take GPU memory of their own again (vLLM: 'CUDA graphs can take "
        "additional 1~3 GiB memory per GPU') and a longer start-up to capture; on a GPU "
        "filled close to its limit lower gpu_memory_utilization with it",
    )
    return [
        Finding(
            ID,
            4,
            "warning",
            "Decoding said to be slow with eager mode on: CUDA graphs are off",
            tuple(evidence),
            (action,),
        )
    ]


RULES = (eager_slows_decoding,)
