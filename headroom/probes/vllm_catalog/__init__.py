"""The signature catalog: every vLLM (and PyTorch/NCCL/Ray/Triton) log text Headroom reads.

One entry per text, as data: the needles and regex that find it, the numbers it carries,
the event kind it becomes (or None: recognised and deliberately never an event), the rule
it feeds (or "not a configuration problem"), where it comes from and the releases it
exists in. The log reader (probes/vllm_log_patterns.py) builds its rules from this table,
in this order: the first entry whose needle and regex match wins, so specific causes come
before generic ones.

Where the texts come from: vLLM's own source, read from the PyPI wheels listed in RELEASES
(their vllm/*.py, unpacked; `scripts/catalog_provenance.py` re-derives `provenance.py`
from such a tree), plus the libraries vLLM runs on (PyTorch, NCCL, Ray, Triton, uvicorn,
argparse, pydantic), whose texts are copied from real logs in tests/fixtures.

Origins (how the text reaches a log, which decides how it is checked, see `classify_line`):
- "log": printed by a vLLM logger call; a line with vLLM's prefix counts only when the
  `[file:line]` of the prefix is one of the files that print it (`printed_by`).
- "raise" / "assert": the text of an exception vLLM raises; it arrives bare (`ValueError:
  ...`), behind a process tag or `[rank0]:`, or re-printed by a logger that relays
  tracebacks, so any printer is accepted.
- "source": a source line of vLLM quoted in a traceback (a bare `assert` has no message).
- "torch", "nccl", "ray", "triton", "python", "uvicorn", "argparse", "pydantic": printed by
  that library or tool, not by vLLM's logger.
"""

from __future__ import annotations

from headroom.probes.vllm_catalog import (
    client,
    comms,
    config_checks,
    engine_switch,
    environment,
    failures,
    field,
    limits,
    loading,
    multinode,
    parallel,
    runtime,
    startup,
)
from headroom.probes.vllm_catalog.provenance import PROVENANCE
from headroom.probes.vllm_catalog.signature import NOT_CONFIG, PREFIX_FORMS, RELEASES, Signature

__all__ = [
    "NOT_CONFIG",
    "PREFIX_FORMS",
    "RELEASES",
    "SIGNATURES",
    "Signature",
]


def _with_provenance(sig: Signature) -> Signature:
    found = PROVENANCE.get(sig.id)
    if found is None:
        return sig
    releases, sources, printed_by = found
    return Signature(
        **{
            **sig.__dict__,
            "releases": tuple(releases),
            "sources": tuple(sources),
            "printed_by": tuple(printed_by),
        }
    )


_ENTRIES = (
    *client.ENTRIES, *field.ENTRIES, *startup.ENTRIES, *parallel.ENTRIES, *limits.ENTRIES, *config_checks.ENTRIES,
    *loading.ENTRIES, *environment.ENTRIES, *engine_switch.ENTRIES, *failures.ENTRIES,
    *multinode.ENTRIES, *runtime.ENTRIES, *comms.ENTRIES
)  # fmt: skip
SIGNATURES: tuple[Signature, ...] = tuple(_with_provenance(s) for s in _ENTRIES)
