"""scripts/catalog_coverage.py: the walk over vLLM's sources that lists the user-facing texts
the signature catalog does not know. Fed small source files written here (the real trees live
outside the repository)."""

from __future__ import annotations

from support.repo_scripts import load_repo_script

from headroom.probes.vllm_log_patterns import classify_line

cc = load_repo_script("scripts/catalog_coverage.py")

# Shapes vLLM's sources use (0.2.7's config.py, 0.10's scheduler.py, executor/ray_utils.py).
SOURCE = """
def verify(self, total_cpu_memory, cpu_memory_usage):
    msg = (f"{cpu_memory_usage / _GB:.2f} GiB out of "
           f"the {total_cpu_memory / _GB:.2f} GiB total CPU memory is "
           "allocated for the swap space.")
    if cpu_memory_usage > 0.7 * total_cpu_memory:
        raise ValueError("Too large swap space. " + msg)
    logger.warning("Possibly too large swap space. %s", msg)
    assert self.max_num_seqs > 0, (
        "max_num_seqs must be positive, got %d" % self.max_num_seqs)
    raise RuntimeError("driver node id {} is not included in a placement group".format(node))
    raise ValueError(unrelated_variable)
    logger.info("Chunked prefill is enabled with max_num_batched_tokens=%d.", n)
"""


def test_messages_of_raise_log_and_assert_with_values_as_braces():
    found = {(o, t): cc._normal(text) for o, t, _, text in cc.texts_of(SOURCE)}
    assert found[("raise", "ValueError")] == "Too large swap space. {}"
    assert found[("log", "warning")] == "Possibly too large swap space. {}"
    assert found[("assert", "AssertionError")] == "max_num_seqs must be positive, got {}"
    assert found[("raise", "RuntimeError")].startswith("driver node id {} is not included")
    # info lines are facts, not failures; a bare variable carries no text
    assert all(t != "info" for _, t in found)
    assert len(found) == 4


def test_topics_sort_the_texts_and_skip_the_rest():
    assert cc.topic_of("Too large swap space. {}") == "swap"
    assert cc.topic_of("max_num_seqs must be positive, got {}") == "batch"
    assert cc.topic_of("Invalid repository ID or local directory") is None


def test_known_means_a_specific_catalog_entry_not_the_generic_exception():
    known = "Too large swap space. {} GiB out of the {} GiB total CPU memory is allocated for the swap space."
    assert cc.known_by(classify_line, known, "raise", "ValueError") == "too_large_swap_space"
    # "{}s" of a device: rendered with "GPU" it is the catalog's placement-group text
    placement = "The number of required {}s exceeds the total number of available {}s in the placement group."
    assert cc.known_by(classify_line, placement, "raise", "ValueError") == "ray_placement_gpus"
    unknown = "max_num_seqs must be positive, got {}"
    assert cc.known_by(classify_line, unknown, "assert", "AssertionError") is None


def test_walk_counts_each_text_once_over_releases_and_leaves_out_kernels(tmp_path):
    for release in ("0.2.7", "0.3.3"):
        config = tmp_path / release / "src" / "vllm" / "config.py"
        config.parent.mkdir(parents=True)
        config.write_text(SOURCE)
        kernel = tmp_path / release / "src" / "vllm" / "attention" / "ops" / "k.py"
        kernel.parent.mkdir(parents=True)
        kernel.write_text('assert x, "block_size must be a multiple of 16 for the KV cache"\n')
    table = cc.walk(tmp_path, ["0.2.7", "0.3.3"])
    row = table["Too large swap space. {}"]
    assert row["releases"] == ["0.2.7", "0.3.3"] and row["where"] == "0.2.7: vllm/config.py:7"
    assert not any("block_size" in words for words in table)
    # config.py is on every server's start-up path; a kernel is not
    assert cc.START_UP_PATH.search(row["where"])
    assert not cc.START_UP_PATH.search("0.2.7: vllm/attention/ops/k.py:1")
