"""V0's start-up profile is one whole prompt (headroom/doctor/v0_profile.py, no_cache_v0.py,
versions.RELEASE_TABLE rows 0.2.5-0.9.1). Texts are vLLM's own: V0's worker.py
raise_if_cache_size_invalid (0.4.3-0.10.2, read in 0.5.4) prints "No available memory for
the cache blocks. ..." and "The model's max seq len (%d) is larger than the maximum number of
tokens that can be stored in KV cache (%d). ..."; the numbers in them are the test's."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.candidates import _fit_len_at
from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.doctor.memory_model import Knobs, account
from headroom.doctor.model_table import find_model
from headroom.doctor.versions import (
    batch_defaults,
    chunked_by_default,
    context_in_budget,
    others_in_budget,
)
from headroom.vllm_cmd import parse_command

NO_BLOCKS = (
    "ValueError: No available memory for the cache blocks. Try increasing "
    "`gpu_memory_utilization` when initializing the engine."
)


def _refusal(max_len: int, tokens: int) -> str:
    return (
        f"ValueError: The model's max seq len ({max_len}) is larger than the maximum number of "
        f"tokens that can be stored in KV cache ({tokens}). Try increasing "
        "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."
    )


def _top(log, argv, gpus=None, version=None):
    d = diagnose(
        DoctorInputs(
            log=log,
            command=parse_command(argv),
            gpu_spec=parse_gpu_spec(gpus) if gpus else None,
            vllm_version=version,
        )
    )
    return d.findings[0]


def _turns(finding):
    return [(a.knob, a.direction) for a in finding.actions]


def test_which_releases_count_other_processes_memory_in_the_budget():
    """0.2.7 worker.py: total - free; 0.3.3-0.6.3: init free - free; 0.6.4.post1: used -
    torch again (PR #9352) until 0.6.5's baseline; V1 0.8.5 and 0.9.0: used - torch; 0.9.1:
    the start-up snapshot (PR #18974)."""
    counted = [(0, 2, 7), (0, 6, 4), (0, 8, 0), (0, 8, 5), (0, 9, 0)]
    own = [(0, 3, 3), (0, 4, 3), (0, 6, 3), (0, 6, 5), (0, 7, 3), (0, 9, 1), (0, 11, 0)]
    assert all(others_in_budget(v) for v in counted)
    assert not any(others_in_budget(v) for v in own)
    assert context_in_budget((0, 9, 0)) and not context_in_budget((0, 9, 1))


def test_chunked_prefill_turns_itself_on_only_above_32k_from_0_5_4():
    assert not chunked_by_default((0, 5, 0), 65536)  # 0.5.0's arg_utils has no such default
    assert chunked_by_default((0, 5, 4), 65536) and not chunked_by_default((0, 5, 4), 32768)
    assert chunked_by_default((0, 8, 0), 1024)  # V1: always
    # the batch default follows: one whole prompt before 0.5.4, a chunk after
    assert batch_defaults((0, 4, 3), 24.0, "", 65536) == (65536, 256)
    assert batch_defaults((0, 6, 3), 24.0, "", 65536) == (512, 256)
    assert batch_defaults((0, 7, 3), 24.0, "", 65536) == (2048, 256)
    assert batch_defaults((0, 6, 3), 24.0, "", 30000) == (30000, 256)


def test_v0_fit_is_searched_because_the_profile_shrinks_with_the_length():
    """Qwen1.5-14B at 0.95 on a V100-32GB: V0's 32k-token profile leaves no KV memory at
    all, so the KV left says nothing; a shorter context shrinks the profile too, and the
    longest length whose own account fits is found. V1's fit is the closed form."""
    model, gpu = find_model("Qwen/Qwen1.5-14B-Chat"), parse_gpu_spec("1xV100:32")
    knobs = Knobs(gpu_memory_utilization=0.95, max_model_len=32768)
    assert account(model, gpu, knobs, "0.6.3").kv_cache_gib < 0
    fit = _fit_len_at(model, gpu, knobs, "0.6.3")
    assert 2048 < fit < 32768 and fit % 16 == 0
    assert account(model, gpu, replace(knobs, max_model_len=fit), "0.6.3").fits
    assert not account(model, gpu, replace(knobs, max_model_len=fit + 16), "0.6.3").fits
    v1 = _fit_len_at(model, gpu, knobs, "0.10.2")
    assert v1 == account(model, gpu, knobs, "0.10.2").max_model_len_fit


def test_no_kv_at_0_95_with_the_release_unknown_leads_with_the_v0_cut():
    """Qwen3#12's shape: only V0's whole-prompt profile explains no KV memory (the newest
    rules would leave some), and at 0.95 nothing but a shorter context starts: max_model_len
    first, sized by V0's account; no raise past 0.95, no fewer batched tokens (below
    max_model_len V0 refuses them without chunked prefill)."""
    argv = ["vllm", "serve", "Qwen/Qwen1.5-14B-Chat", "--gpu-memory-utilization", "0.95"]
    top = _top(NO_BLOCKS, argv, "1xV100:32")
    turns = _turns(top)
    assert turns[0] == ("max_model_len", "lower")
    assert 2048 < top.actions[0].value < 32768
    assert ("gpu_memory_utilization", "raise") not in turns
    assert ("max_num_batched_tokens", "lower") not in turns
    assert ("enable_chunked_prefill", "set") in turns
    assert any("only V0 explains" in line for line in top.evidence)
    # the same with the release given as V0; with a V1 release its own order answers
    assert _turns(_top(NO_BLOCKS, argv, "1xV100:32", "0.4.3"))[0] == ("max_model_len", "lower")
    v1 = _turns(_top(NO_BLOCKS, argv, "1xV100:32", "0.10.2"))
    assert ("enable_chunked_prefill", "set") not in v1


def test_chunked_prefill_leads_when_it_alone_holds_the_full_length():
    """Llama-3.1-8B, 32k context at 0.75 on a 24 GiB card, V0 0.6.3: a raise to 0.95 still
    cannot hold one 32k request beside the 32k-token profile; with a 512-token profile a
    smaller raise does, and the context stays: chunked prefill first, with its raise."""
    argv = ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "32768",
            "--gpu-memory-utilization", "0.75"]  # fmt: skip
    top = _top(NO_BLOCKS, argv, "1xRTX4090", "0.6.3")
    lead = top.actions[0]
    assert (lead.knob, lead.value) == ("enable_chunked_prefill", True)
    raised = dict(lead.also)["gpu_memory_utilization"]
    assert 0.75 < raised <= 0.95
    assert ("gpu_memory_utilization", "raise") in _turns(top)
    cut = next(a for a in top.actions if a.knob == "max_model_len")
    assert cut.direction == "lower" and dict(cut.also)["gpu_memory_utilization"] <= 0.95


def test_a_v0_refusal_the_raise_cannot_close_is_answered_by_chunked_prefill():
    """At 0.95 on V0 0.6.3 the raise adds nothing; Qwen2-7B's 32k-token profile is a few GiB
    of activation, more than the KV the refusal is short of: chunked prefill leads, the
    length vLLM says fits follows."""
    argv = ["vllm", "serve", "Qwen/Qwen2-7B-Instruct", "--gpu-memory-utilization", "0.95"]
    top = _top(_refusal(32768, 8000), argv, "1xL4", "0.6.3")
    assert _turns(top)[:2] == [("enable_chunked_prefill", "set"), ("max_model_len", "lower")]
    assert any("gives back about" in line for line in top.evidence)


def test_chunked_prefill_is_offered_where_it_exists_and_is_not_excluded():
    """vllm#7526's shape (30000 tokens, model unknown): offered, unsized, after the table's
    knobs. Not before 0.4.0 (no flag), not in V1, not beside LoRA."""
    argv = ["vllm", "serve", "m", "--max-model-len", "30000"]
    line = _refusal(30000, 3984)
    turns = _turns(_top(line, argv))
    assert ("enable_chunked_prefill", "set") in turns[1:]
    assert turns[0] != ("enable_chunked_prefill", "set")
    assert ("enable_chunked_prefill", "set") not in _turns(_top(line, argv, version="0.3.3"))
    assert ("enable_chunked_prefill", "set") not in _turns(_top(line, argv, version="0.10.2"))
    lora = _turns(_top(line, [*argv, "--enable-lora"]))
    assert ("enable_chunked_prefill", "set") not in lora
    already = _turns(_top(line, [*argv, "--enable-chunked-prefill"]))
    assert ("enable_chunked_prefill", "set") not in already


@settings(max_examples=60, deadline=None)
@given(
    util=st.sampled_from([0.5, 0.75, 0.9, 0.95]),
    length=st.sampled_from([4096, 16384, 32768]),
    version=st.sampled_from([None, "0.4.3", "0.6.3", "0.7.3", "0.10.2"]),
    model=st.sampled_from(
        ["Qwen/Qwen1.5-14B-Chat", "meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen2-7B-Instruct"]
    ),  # fmt: skip
    gpus=st.sampled_from(["1xV100:32", "1xRTX4090", "1xL4"]),
)
def test_no_kv_never_lowers_the_budget_and_v1_never_gets_chunked_prefill(
    util, length, version, model, gpus
):
    argv = ["vllm", "serve", model, "--gpu-memory-utilization", str(util),
            "--max-model-len", str(length)]  # fmt: skip
    top = _top(NO_BLOCKS, argv, gpus, version)
    assert top.actions
    for a in top.actions:
        assert not (a.knob == "gpu_memory_utilization" and a.direction == "lower")
        assert not (a.knob == "max_model_len" and a.direction == "raise")
        for knob, value in ((a.knob, a.value), *a.also):
            if knob == "gpu_memory_utilization" and value is not None:
                assert util <= value <= 0.95
    if version == "0.10.2":
        assert ("enable_chunked_prefill", "set") not in _turns(top)


def test_the_v0_refusal_is_sized_by_the_logs_own_numbers():
    """tests/fixtures/gpu-startup-logs/rtx3090-llama3.1-8b-maxlen29000-fail-v0.6.log (vllm
    #10517): no model given. The log's KV (2.89 GiB = 23,648 tokens) prices a token, its
    total (23.58 GiB) sizes the raise, which closes the 5,352-token gap: the raise leads; its
    profile's peak (peak_torch 17.98 - weights 14.99 GiB) says chunked prefill would too."""
    from pathlib import Path

    path = Path(__file__).parents[1] / "fixtures/gpu-startup-logs"
    log = (path / "rtx3090-llama3.1-8b-maxlen29000-fail-v0.6.log").read_text()
    top = diagnose(DoctorInputs(log=log)).findings[0]
    assert top.id == "max-seq-len-exceeds-kv"
    assert _turns(top)[0] == ("gpu_memory_utilization", "raise")
    assert 0.9 < top.actions[0].value <= 0.95
    assert ("enable_chunked_prefill", "set") in _turns(top)
    assert any("short by about 0.65 GiB" in line for line in top.evidence)
    assert any("the log's activation peak" in line and ">=" in line for line in top.evidence)


def test_no_chunked_prefill_for_models_v0_kept_off_it():
    line = _refusal(8192, 2400)
    vl = _turns(_top(line, ["vllm", "serve", "Qwen/Qwen2.5-VL-7B-Instruct"]))
    assert ("enable_chunked_prefill", "set") not in vl
    text = _turns(_top(line, ["vllm", "serve", "Qwen/Qwen2.5-7B-Instruct"]))
    assert ("enable_chunked_prefill", "set") in text


def test_a_v1_log_is_never_read_as_v0():
    """vllm#14376's line comes from V1's engine core (core.py): whatever the accounts say,
    the release is V1 and V0's order does not answer."""
    line = (
        "ERROR 03-05 13:46:50 core.py:291] ValueError: No available memory for the cache "
        "blocks. Try increasing `gpu_memory_utilization` when initializing the engine."
    )
    argv = ["vllm", "serve", "Qwen/Qwen1.5-14B-Chat", "--gpu-memory-utilization", "0.95"]
    top = _top(line, argv, "1xV100:32")
    assert not any("only V0 explains" in e for e in top.evidence)
    assert ("enable_chunked_prefill", "set") not in _turns(top)


def test_releases_that_deduct_others_memory_say_so_and_raise():
    """vllm#14376's shape (a second TinyLlama at 0.2 on an L40S): on 0.8.5 the first
    instance's memory is deducted from the second's budget (gpu_worker.py 0.8.5: non-torch =
    used - torch allocated), the estimate leaves GiB the log did not get, and the raise leads;
    from 0.9.1 (PR #18974) the note is gone."""
    line = (
        "ERROR 03-05 13:46:50 core.py:291] ValueError: No available memory for the cache "
        "blocks. Try increasing `gpu_memory_utilization` when initializing the engine."
    )
    argv = ["vllm", "serve", "TinyLlama/TinyLlama-1.1B-Chat-v1.0", "--max-model-len", "1024",
            "--gpu-memory-utilization", "0.2"]  # fmt: skip
    old = _top(line, argv, "1xL40S", "0.8.5")
    assert _turns(old)[0] == ("gpu_memory_utilization", "raise")
    note = next(e for e in old.evidence if "deducts every process's memory" in e)
    assert "not this model's" in note
    new = _top(line, argv, "1xL40S", "0.9.1")
    assert not any("deducts every process's memory" in e for e in new.evidence)


def _v1_refusal(max_len: int, needed: float, available: float) -> str:
    """vllm/v1/core/kv_cache_planning.py (0.33.0), cut before the estimate as threads paste it."""
    return (
        f"ValueError: To serve at least one request with the model's max seq len ({max_len}), "
        f"({needed:.2f} GiB KV cache is needed, which is larger than the available KV cache "
        f"memory ({available:.2f} GiB)."
    )


def test_v1_with_chunked_prefill_turned_off_profiles_a_whole_prompt_from_0_12():
    """0.12.0+ arg_utils.py honours --no-enable-chunked-prefill and sets
    max_num_batched_tokens = max(max_model_len, default); 0.11.0 turned it back on."""
    model, gpu = find_model("meta-llama/Llama-3.1-8B-Instruct"), parse_gpu_spec("1xL4")
    off = Knobs(max_model_len=32768, chunked_prefill=False)
    assert account(model, gpu, off, "0.33.0").batched_tokens == 32768
    assert account(model, gpu, off, "0.11.0").batched_tokens == 2048
    assert account(model, gpu, replace(off, chunked_prefill=None), "0.33.0").batched_tokens == 2048
    # V0 with the flag on: its own chunk
    on = Knobs(max_model_len=8192, chunked_prefill=True)
    assert account(model, gpu, on, "0.6.3").batched_tokens == 512


def test_chunked_prefill_given_back_leads_a_v1_refusal_it_closes():
    """Llama-3.1-8B, 32k, chunked prefill off on an L4 (0.33.0): 2.5 GiB short, 0.95 adds
    about 0.7 GiB; the whole-prompt profile holds more than the gap: chunked prefill first."""
    argv = ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "32768",
            "--no-enable-chunked-prefill"]  # fmt: skip
    top = _top(_v1_refusal(32768, 4.0, 1.5), argv, "1xL4", "0.33.0")
    assert _turns(top)[0] == ("enable_chunked_prefill", "set")
    assert any("more than the 2.50 GiB short" in line for line in top.evidence)
    # not where the release turned it on anyway, nor without the flag
    old = _top(_v1_refusal(32768, 4.0, 1.5), argv, "1xL4", "0.11.0")
    assert ("enable_chunked_prefill", "set") not in _turns(old)
    plain = _top(_v1_refusal(32768, 4.0, 1.5), argv[:-1], "1xL4", "0.33.0")
    assert ("enable_chunked_prefill", "set") not in _turns(plain)


def test_no_kv_with_chunked_prefill_off_gives_it_back_before_cutting_the_context():
    """No KV at all, V1 0.33.0 with chunked prefill off: fewer batched tokens would be
    refused (below max_model_len), so it is not offered; chunked prefill is."""
    argv = ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "32768",
            "--no-enable-chunked-prefill", "--gpu-memory-utilization", "0.8"]  # fmt: skip
    top = _top(NO_BLOCKS, argv, "1xL4", "0.33.0")
    turns = _turns(top)
    assert ("enable_chunked_prefill", "set") in turns
    assert ("max_num_batched_tokens", "lower") not in turns
    assert ("gpu_memory_utilization", "lower") not in turns
