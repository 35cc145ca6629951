"""An OOM after an upgrade the text states ("ok in 0.9.2, OOM on 0.20.0"): the defaults that
grew between the two releases, each turned back towards the release that worked.

The release table (versions.RELEASE_TABLE) says what each release applies when a knob is not
set; release_defaults.changed_defaults names the difference. Only the changes that need
MORE memory, on knobs the user did not set, become actions, and each goes the OOM's way:
a larger default utilization back down to the old one, CUDA graphs (or larger captures)
off with --enforce-eager, a larger batched-token default back to the old one. A raised
max_num_seqs is rules_defaults' (it ranks first and says so); this rule answers the rest.
"""

from __future__ import annotations

from headroom.doctor import actions as A
from headroom.doctor.findings import Action, Finding, compact_actions
from headroom.doctor.model_family import model_family
from headroom.doctor.multimodal_models import runs_encoder_decoder_on_v0
from headroom.doctor.release_defaults import ReleaseDefaults, changed_defaults, possible_defaults
from headroom.doctor.rules_defaults import gpu_of, max_len_of, memory_failure
from headroom.doctor.version_claims import stated_regression
from headroom.doctor.versions import format_version

FINDING_ID = "release-default-changed"


def _grown(
    ctx, old: ReleaseDefaults, new: ReleaseDefaults, tokens_known: bool
) -> list[Action | None]:
    """The actions that turn back each default that grew, for knobs the user left unset."""
    knobs = ctx.knobs
    acts: list[Action | None] = []
    old_v, new_v = format_version(old.version), format_version(new.version)
    if knobs.gpu_memory_utilization is None and new.utilization > old.utilization:
        acts.append(
            A.lower_utilization(
                ctx,
                old.utilization,
                f"the default utilization went from {old.utilization} ({old_v}) to "
                f"{new.utilization} ({new_v})",
            )
        )
    more_graphs = new.cuda_graphs and (
        not old.cuda_graphs or new.largest_graph_batch > old.largest_graph_batch
    )
    if not knobs.enforce_eager and more_graphs:
        acts.append(
            A.enforce_eager(
                f"{new_v} captures CUDA graphs up to batch {new.largest_graph_batch} by default "
                f"({old_v}: {old.largest_graph_batch if old.cuda_graphs else 'none'})"
            )
        )
    if (
        knobs.max_num_batched_tokens is None
        and tokens_known
        and new.max_num_batched_tokens > old.max_num_batched_tokens
    ):
        acts.append(
            Action(
                "max_num_batched_tokens",
                "lower",
                old.max_num_batched_tokens,
                f"the default went from {old.max_num_batched_tokens} ({old_v}) to "
                f"{new.max_num_batched_tokens} ({new_v}): a larger activation peak",
                "long prompts prefill in more chunks: slower time to first token",
            )
        )
    return acts


def upgrade_grew_defaults(ctx) -> list[Finding]:
    failure = memory_failure(ctx)
    if failure is None or failure[0] != "oom":
        return []
    regression = stated_regression(ctx.raw_lines)
    if regression is None or regression.good is None or regression.bad is None:
        return []
    if regression.bad <= regression.good:
        return []  # a downgrade that fails is not a default that grew
    family = model_family(ctx)
    enc_dec = bool(
        family
        and family.encoder_decoder
        and runs_encoder_decoder_on_v0(family.name, regression.bad)
    )
    gib, name = gpu_of(ctx)
    max_len = max_len_of(ctx)
    kw = {"max_model_len": max_len or 8192, "encoder_decoder": enc_dec}
    before = possible_defaults(regression.good, gib, name, **kw)
    after = possible_defaults(regression.bad, gib, name, **kw)
    old, new = before[0], after[0]  # the smaller GPU tier when the GPU is not known
    acts = compact_actions(_grown(ctx, old, new, max_len is not None))
    if not acts:
        return []
    good, bad = format_version(regression.good), format_version(regression.bad)
    evidence = (
        failure[1].line.strip()[:300],
        f"stated: worked on {good}, fails on {bad} ({regression.line[:120]})",
        f"defaults that changed from {good} to {bad} (versions.RELEASE_TABLE): "
        + "; ".join(changed_defaults(old, new, max_len is not None)),
    )
    title = f"Out of GPU memory after the upgrade from {good} to {bad}: defaults that grew"
    # A warning, not the root cause: an upgrade that fails is as often a bug of the new
    # release (a thread answered "upgrade/downgrade") as a default; the error findings lead.
    return [Finding(FINDING_ID, 4, "warning", title, evidence, acts)]


RULES = (upgrade_grew_defaults,)
