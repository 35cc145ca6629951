"""The defaults each release applies when the user sets nothing (versions.RELEASE_TABLE, read
from vLLM's arg_utils.py / config.py per release) and what changed between two releases."""

from __future__ import annotations

import pytest

from headroom.doctor.release_defaults import (
    changed_defaults,
    possible_defaults,
    release_defaults,
    seqs_target,
    seqs_text,
)
from headroom.doctor.versions import RELEASE_TABLE, parse_version


@pytest.mark.parametrize(
    ("version", "gib", "name", "seqs", "engine", "graph"),
    [
        ((0, 7, 3), 23.6, "RTX3090", 256, "V0", 256),  # V0: 256, graphs up to 256
        ((0, 8, 3), 23.6, "RTX3090", 1024, "V1", 512),  # V1 0.8.0-0.8.4: 1024 on every GPU
        ((0, 8, 5), 23.6, "RTX3090", 256, "V1", 512),  # PR #16158: 256 below 70 GiB
        ((0, 8, 5), 79.1, "H100", 1024, "V1", 512),
        ((0, 10, 2), 79.1, "H100", 1024, "V1", 512),  # graphs up to min(2 x seqs, 512)
        ((0, 10, 2), 23.6, "RTX3090", 256, "V1", 512),
    ],
)
def test_defaults_by_release_and_gpu(version, gib, name, seqs, engine, graph):
    d = release_defaults(version, gib, name, max_model_len=8192)
    assert (d.max_num_seqs, d.engine, d.largest_graph_batch) == (seqs, engine, graph)
    assert d.sampler_warmup == (engine == "V1")


def test_encoder_decoder_models_get_v0_defaults_and_0_5_forced_them_eager():
    # mllama is SupportsV0Only: a V1 release still applies V0's 256 to it
    on_v1 = release_defaults((0, 9, 2), 79.1, "H100", encoder_decoder=True)
    assert (on_v1.engine, on_v1.max_num_seqs, on_v1.cuda_graphs) == ("V0", 256, True)
    # 0.5.5 forced an encoder-decoder model eager when enforce_eager was unset; 0.6.4 did not
    assert not release_defaults((0, 5, 5), 23.6, encoder_decoder=True).cuda_graphs
    assert release_defaults((0, 6, 4), 23.6, encoder_decoder=True).cuda_graphs
    assert seqs_target(on_v1, encoder_decoder=True) == 16  # vLLM's vision example


def test_unknown_gpu_gives_both_tiers_only_where_they_differ():
    assert [d.max_num_seqs for d in possible_defaults((0, 8, 3), None)] == [1024]
    both = possible_defaults((0, 8, 5), None)
    assert [d.max_num_seqs for d in both] == [256, 1024]
    assert seqs_text(both) == "256 (GPUs under 70 GiB) or 1024 (70 GiB and more)"


def test_upgrade_from_v0_to_v1_names_the_raised_max_num_seqs():
    old = release_defaults((0, 7, 2), 23.6, "RTX3090", 8192)
    new = release_defaults((0, 8, 3), 23.6, "RTX3090", 8192)
    changes = changed_defaults(old, new)
    assert changes[0] == "default max_num_seqs 256 in 0.7.2 -> 1024 in 0.8.3"
    assert any("engine V0 -> V1" in c and "sampler" in c for c in changes)
    assert not changed_defaults(new, new)
    # a V1 release that put 256 back: no max_num_seqs change on a small GPU
    back = release_defaults((0, 8, 5), 23.6, "RTX3090", 8192)
    assert not any(c.startswith("default max_num_seqs") for c in changed_defaults(old, back))


def test_release_table_rows_cite_the_defaults_they_record():
    text = {since: what for since, what, _ in RELEASE_TABLE}
    assert "max_num_seqs 256" in text["0.2.7"] and "16158" in text["0.8.5"]
    assert "EVERY GPU" in text["0.8.0"] and "mllama" in text["0.6.4"]
    versions = [parse_version(v) for v, _, _ in RELEASE_TABLE]
    assert versions == sorted(versions)


def test_throughput_mode_doubles_both_batch_defaults_from_0_32():
    plain = release_defaults((0, 33, 0), 23.6, "A10", 8192)
    fast = release_defaults((0, 33, 0), 23.6, "A10", 8192, throughput=True)
    assert (fast.max_num_seqs, fast.max_num_batched_tokens) == (512, 4096)
    assert (plain.max_num_seqs, plain.max_num_batched_tokens) == (256, 2048)
    assert release_defaults((0, 11, 0), 23.6, "A10", 8192, throughput=True).max_num_seqs == 256
