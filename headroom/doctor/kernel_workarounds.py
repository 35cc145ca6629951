"""A kernel bug of a known release that its threads worked around with a setting.

An illegal memory access is a bug, not a configuration: the answer is an upgrade
(rules_catalog.not_config_failures names it so). One family has a setting the field used
while waiting for the fix: on the V0 engine's releases (0.4.1-0.7.x, where V0 is the default
engine) the flash-attention backend was the usual suspect, and `VLLM_ATTENTION_BACKEND=XFORMERS`
the workaround (vllm-project/vllm #5376 on 0.4.3, confirmed by a second user; verl's FAQ on
"illegal memory access" recommends it for its vLLM 0.6/0.7 rollouts). vLLM reads the variable
from 0.4.1 (attention/selector.py; envs.py from 0.4.2) and ships the XFORMERS backend in V0
only: V1 (the default from 0.8) has none, so from 0.8 on, or with the release unknown, no knob
is offered (vllm #17295 on 0.8.5: a PyTorch 2.6 Inductor bug, fixed by 2.7).
"""

from __future__ import annotations

from headroom.doctor.findings import Action
from headroom.doctor.versions import parse_version

__all__ = ["illegal_memory_workaround"]

_XFORMERS_FROM = (0, 4, 1)  # attention/selector.py reads VLLM_ATTENTION_BACKEND
_V1_DEFAULT_FROM = (0, 8, 0)  # the V1 engine (no XFORMERS backend) is the default


def illegal_memory_workaround(ctx) -> Action | None:
    """XFORMERS attention for an illegal memory access on a V0-era release, else None."""
    version = parse_version(ctx.version)
    if version is None or not (_XFORMERS_FROM <= version < _V1_DEFAULT_FROM):
        return None
    backend = str(ctx.arg("attention_backend") or "").upper()
    if "XFORMERS" in backend:
        return None
    return Action(
        "VLLM_ATTENTION_BACKEND",
        "set",
        "XFORMERS",
        f"vLLM {ctx.version} runs the V0 engine, whose flash-attention backend is the usual "
        "source of this crash; xFormers attention avoids that kernel until an upgrade",
        "slower attention than flash-attention",
    )
