"""One entry of the signature catalog, in a module of its own so the catalog's parts
(client, startup, failures, runtime) and the package that gathers them import it without a
cycle. The package (`headroom.probes.vllm_catalog`) re-exports both names."""

from __future__ import annotations

from dataclasses import dataclass

NOT_CONFIG = "not a configuration problem (upgrade / known bug)"


@dataclass(frozen=True)
class Signature:
    """One text of the catalog (see the module docstring)."""

    id: str
    kind: str | None  # the LogEvent kind; None: recognised, never an event
    severity: str  # "info" | "warning" | "error"
    needles: tuple[str, ...]  # at least one must be in the message
    pattern: str | None = None  # regex for the fields (searched in the message)
    extract: str | None = None  # name of a field extractor (vllm_log_fields.EXTRACTORS)
    require_match: bool = True  # False: the needle alone classifies, the regex adds fields
    origin: str = "log"
    probe: tuple[str, ...] = ()  # literal pieces of the source text (provenance lookup)
    fields: tuple[str, ...] = ()  # the numbers/values it carries
    feeds: str = ""  # the doctor rule / fact it feeds, or NOT_CONFIG
    examples: tuple[str, ...] = ()  # real messages (without prefix)
    library: str = ""  # for non-vLLM origins: which library prints it
    quoted: bool = False  # the text itself sits inside quotes (Triton's ValueError("..."))
    # filled from provenance.py:
    releases: tuple[str, ...] = ()  # releases read that contain the text
    sources: tuple[str, ...] = ()  # "release: path:line" in vLLM's source
    printed_by: tuple[str, ...] = ()  # file names in the prefix of a logger line

    @property
    def anywhere(self) -> bool:
        """Printed by something other than one known vLLM logger call."""
        return self.origin != "log"
