"""What a vLLM release chose for the knobs a user did not set, and what changed between two.

The numbers are the ones versions.RELEASE_TABLE records from vLLM's own source (each row
names its file and release). A memory failure on a release whose default is large for the
GPU, or after an upgrade that raised a default, is answered with the knob the user never
turned: the evidence is the default itself.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from headroom.doctor.versions import (
    batch_defaults,
    chunked_by_default,
    default_utilization,
    format_version,
    is_v1,
)

# V0's default (0.2.7 .. 0.7.3 arg_utils.py): the one PR #16158 restored below 70 GiB.
V0_MAX_NUM_SEQS = 256
# vLLM's vision-language example (examples/offline_inference_vision_language.py, run_mllama):
# "The default setting of max_num_seqs (256) and max_model_len (131072) for this model may
# cause OOM" -> max_num_seqs=16, enforce_eager=True, confirmed to launch on one L40.
ENCODER_DECODER_MAX_NUM_SEQS = 16
# The GPU sizes of the memory tiers (0.8.5+ get_device_total_memory >= 70 GiB; 0.22+ 160).
SMALL_GPU_GIB, LARGE_GPU_GIB = 48.0, 80.0
# V0's batch rules as of its last release as the default engine (0.7.3): the ones a V0-only
# model still gets from a V1 release (arg_utils _set_default_args_v0).
LAST_V0_DEFAULT = (0, 7, 3)


@dataclass(frozen=True)
class ReleaseDefaults:
    """The engine args one release applies by itself (`vllm serve`, the OpenAI server)."""

    version: tuple[int, int, int]
    gpu_gib: float  # the GPU memory these were worked out for
    engine: str  # "V0" | "V1"
    max_num_seqs: int
    max_num_batched_tokens: int
    chunked_prefill: bool
    cuda_graphs: bool  # enforce_eager left False: CUDA graphs are captured
    largest_graph_batch: int  # the largest batch size CUDA graphs are captured for
    utilization: float
    sampler_warmup: bool  # the profile run samples max_num_seqs dummy requests (V1)


def release_defaults(
    version: tuple[int, int, int],
    usable_gib: float,
    gpu_name: str = "",
    max_model_len: int = 8192,
    encoder_decoder: bool = False,
    throughput: bool = False,
) -> ReleaseDefaults:
    """The defaults of `version` on a GPU of `usable_gib` (see RELEASE_TABLE). An
    encoder-decoder model runs on V0 in every release that has it (mllama is SupportsV0Only
    0.6.4-0.10.2): V1's defaults never applied to it."""
    v1 = is_v1(version) and not encoder_decoder
    batch_rules = version if v1 or not is_v1(version) else LAST_V0_DEFAULT
    tokens, seqs = batch_defaults(batch_rules, usable_gib, gpu_name, max_model_len)
    if v1 and version >= (0, 32, 0) and throughput:
        tokens, seqs = tokens * 2, seqs * 2  # --performance-mode throughput
    if v1 and version >= (0, 10, 2):
        seqs = min(seqs, tokens)  # "min(default_max_num_seqs, max_num_batched_tokens)"
    if not v1:
        chunked = chunked_by_default(version, max_model_len)
        graph = min(seqs, 256)  # _BATCH_SIZES_TO_CAPTURE: 1, 2, 4, 8..256
    else:
        chunked = True
        graph = min(2 * seqs, 512) if version >= (0, 10, 2) else 512
    # 0.5.x forced an encoder-decoder model eager when enforce_eager was unset; 0.6.4 did not.
    graphs = not (encoder_decoder and (0, 5, 0) <= version < (0, 6, 0))
    return ReleaseDefaults(
        version=version,
        gpu_gib=usable_gib,
        engine="V1" if v1 else "V0",
        max_num_seqs=seqs,
        max_num_batched_tokens=tokens,
        chunked_prefill=chunked,
        cuda_graphs=graphs,
        largest_graph_batch=graph if graphs else 0,
        utilization=default_utilization(version),
        sampler_warmup=v1,
    )


def possible_defaults(
    version: tuple[int, int, int], usable_gib: float | None, gpu_name: str = "", **kw
) -> list[ReleaseDefaults]:
    """The release's defaults on the given GPU, or on a small and a large one when the GPU is
    not known (the batch defaults depend on its memory from 0.8.5)."""
    if usable_gib:
        return [release_defaults(version, usable_gib, gpu_name, **kw)]
    found = [release_defaults(version, gib, "", **kw) for gib in (SMALL_GPU_GIB, LARGE_GPU_GIB)]
    same = replace(found[1], gpu_gib=found[0].gpu_gib) == found[0]
    return found[:1] if same else found


def seqs_text(defaults: list[ReleaseDefaults]) -> str:
    values = sorted({d.max_num_seqs for d in defaults})
    if len(values) == 1:
        return str(values[0])
    return f"{values[0]} (GPUs under 70 GiB) or {values[-1]} (70 GiB and more)"


def changed_defaults(
    old: ReleaseDefaults, new: ReleaseDefaults, tokens_known: bool = True
) -> list[str]:
    """The defaults that differ between two releases, in words, the memory-relevant first.
    `tokens_known`: False when max_model_len was guessed (V0's batch default follows it)."""
    a, b = format_version(old.version), format_version(new.version)
    out = []
    if old.max_num_seqs != new.max_num_seqs:
        out.append(f"default max_num_seqs {old.max_num_seqs} in {a} -> {new.max_num_seqs} in {b}")
    if old.engine != new.engine:
        out.append(
            f"engine {old.engine} -> {new.engine}: the start-up profile also warms the sampler "
            f"over max_num_seqs ({new.max_num_seqs}) dummy requests"
            if new.sampler_warmup
            else f"engine {old.engine} -> {new.engine}"
        )
    if tokens_known and old.max_num_batched_tokens != new.max_num_batched_tokens:
        out.append(
            f"default max_num_batched_tokens {old.max_num_batched_tokens} -> "
            f"{new.max_num_batched_tokens}"
        )
    if old.chunked_prefill != new.chunked_prefill:
        out.append(f"chunked prefill {'on' if new.chunked_prefill else 'off'} by default")
    if (old.cuda_graphs, old.largest_graph_batch) != (new.cuda_graphs, new.largest_graph_batch):
        out.append(
            f"CUDA graphs captured up to batch {new.largest_graph_batch}"
            if new.cuda_graphs
            else "no CUDA graphs by default"
        )
    if old.utilization != new.utilization:
        out.append(f"default gpu_memory_utilization {old.utilization} -> {new.utilization}")
    return out


def seqs_target(defaults: ReleaseDefaults, encoder_decoder: bool) -> int:
    """A max_num_seqs the table justifies: 16 for an encoder-decoder model (vLLM's example),
    V0's 256 where a V1 release raised it to 1024, else a quarter of the default."""
    if encoder_decoder:
        return min(ENCODER_DECODER_MAX_NUM_SEQS, defaults.max_num_seqs)
    if defaults.max_num_seqs > V0_MAX_NUM_SEQS:
        return V0_MAX_NUM_SEQS
    return max(defaults.max_num_seqs // 4, ENCODER_DECODER_MAX_NUM_SEQS)
