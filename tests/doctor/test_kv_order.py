"""Which knob first when the KV cache gets no memory or too little (step 4): utilization
first, then max_model_len, one at a time, unless the numbers say the first cannot work
(headroom/doctor/rules_no_cache.py). Texts are vLLM's own (0.10.x gpu_worker.py
"Available KV cache memory: %.2f GiB", kv_cache_utils.py's refusals) or real threads'
(tests/fixtures/incidents: vllm#23278, vllm#49351, Qwen3#12)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.context import Context
from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.vllm_cmd import parse_command

NO_BLOCKS = (
    "ValueError: No available memory for the cache blocks. Try increasing "
    "`gpu_memory_utilization` when initializing the engine."
)
# vllm#23278 (gpt-oss-120b on one H100): V1 0.10.1's lines, with the engine's prefix
NEGATIVE_V1 = (
    "(EngineCore_0 pid=5839) INFO 08-20 18:04:10 [gpu_model_runner.py:2007] Model loading "
    "took 65.9651 GiB and 12.799889 seconds\n"
    "(EngineCore_0 pid=5839) INFO 08-20 18:04:22 [gpu_worker.py:276] Available KV cache "
    "memory: -2.14 GiB\n"
    "(EngineCore_0 pid=5839) ERROR 08-20 18:04:22 [core.py:700] EngineCore failed to start.\n"
)


def _top(log, argv=None, gpus=None, version=None):
    d = diagnose(
        DoctorInputs(
            log=log,
            command=parse_command(argv) if argv else None,
            gpu_spec=parse_gpu_spec(gpus) if gpus else None,
            vllm_version=version,
        )
    )
    assert d.findings
    return d.findings[0]


def _turns(finding):
    return [(a.knob, a.direction) for a in finding.actions]


def test_engine_core_index_prefix_dates_a_release_before_0_10_2():
    assert Context(DoctorInputs(log=NEGATIVE_V1)).version == "0.9.2"
    dp = NEGATIVE_V1.replace("EngineCore_0", "EngineCore_DP0")
    assert Context(DoctorInputs(log=dp)).version is None


def test_a_negative_budget_the_raise_covers_raises_first_then_max_model_len():
    """0.9 by default there: 0.95 adds 0.05 x 79 GiB = 3.96 GiB, 2.14 of it to reach zero.
    The raise leads; about 1.8 GiB of KV is left, so max_model_len follows it."""
    top = _top(NEGATIVE_V1, gpus="1xH100")
    assert top.id == "no-cache-memory" and top.step == 4
    turns = _turns(top)
    assert turns[0] == ("gpu_memory_utilization", "raise")
    assert top.actions[0].value == 0.95
    assert turns[1] == ("max_model_len", "lower")
    assert any("1.82 GiB of KV cache per GPU is left" in line for line in top.evidence)
    # 0.10.1 puts CUDA graphs outside the budget: eager mode frees nothing for the KV cache
    assert ("enforce_eager", "set") not in turns


def test_a_negative_budget_the_raise_cannot_cover_leads_with_the_next_knob():
    """At 0.93 the raise adds 0.02 x 79 GiB = 1.6 GiB, not the 2.14 GiB short: the next
    knob (V1: fewer batched tokens) leads and the raise follows it as a companion."""
    top = _top(NEGATIVE_V1, ["vllm", "serve", "m", "--gpu-memory-utilization", "0.93"], "1xH100")
    turns = _turns(top)
    assert turns[0] == ("max_num_batched_tokens", "lower")
    assert ("gpu_memory_utilization", "raise") in turns[1:]
    assert not any(d == "lower" and k == "gpu_memory_utilization" for k, d in turns)


def test_at_0_95_the_raise_is_gone_and_step_4_still_answers():
    """Qwen3#12's shape of problem: 0.95 on a V100-32GB, release unknown, a model the
    built-in table does not hold. Before, the finding had no action at all (step None); now
    the table's next knob, max_model_len, leads."""
    argv = ["vllm", "serve", "data/Some-14B-Chat", "--gpu-memory-utilization", "0.95"]
    top = _top(NO_BLOCKS, argv, "1xV100:32")
    assert top.step == 4 and top.actions
    turns = _turns(top)
    assert turns[0] == ("max_model_len", "lower")
    assert ("gpu_memory_utilization", "raise") not in turns
    assert any("already 0.95" in line for line in top.evidence)


def test_at_0_95_a_table_model_is_sized_and_the_release_that_explains_it_decides():
    """Qwen3#12 itself: Qwen1.5-14B-Chat is in the built-in table (40 layers, MHA, 32768
    positions). With the release unknown, the newest rules would leave KV memory and V0's
    whole-prompt profile leaves none, so V0 decides (no_cache_v0.py): a shorter context,
    which shrinks the profile and the request at once, leads. No raise past 0.95."""
    argv = ["vllm", "serve", "data/Qwen1.5-14B-Chat", "--gpu-memory-utilization", "0.95"]
    top = _top(NO_BLOCKS, argv, "1xV100:32")
    assert top.step == 4
    turns = _turns(top)
    assert turns[0] == ("max_model_len", "lower")
    assert ("max_num_batched_tokens", "lower") not in turns
    assert ("gpu_memory_utilization", "raise") not in turns


def test_at_0_95_the_release_picks_the_next_knob():
    argv = ["vllm", "serve", "m", "--gpu-memory-utilization", "0.95", "--max-model-len", "32768"]
    # V0: the profile is one whole max_model_len prefill
    v0 = _turns(_top(NO_BLOCKS, argv, "1xV100:32", version="0.4.3"))
    assert v0[0] == ("max_model_len", "lower")
    # V1: the profile runs max_num_batched_tokens; graphs outside the budget before 0.20
    v1 = _turns(_top(NO_BLOCKS, argv, "1xV100:32", version="0.10.2"))
    assert v1[0] == ("max_num_batched_tokens", "lower")
    assert ("enforce_eager", "set") not in v1
    # 0.20+: the CUDA-graph estimate is inside the budget, eager mode gives it back
    new = _turns(_top(NO_BLOCKS, argv, "1xV100:32", version="0.33.0"))
    assert new[0] == ("max_num_batched_tokens", "lower")
    assert ("enforce_eager", "set") in new


def test_room_for_the_raise_keeps_the_table_default_and_offers_the_rest():
    """bonito#22: 0.9, nothing else known: the raise (vLLM's own advice) leads, the other
    knobs follow it."""
    top = _top(NO_BLOCKS, ["vllm", "serve", "BatsResearch/bonito-v1"])
    turns = _turns(top)
    assert turns[0] == ("gpu_memory_utilization", "raise")
    assert ("max_model_len", "lower") in turns and ("enforce_eager", "set") in turns


def test_a_cut_refusal_still_offers_the_length_that_fits():
    """vllm#49351 (L4, --max-model-len 2048): the message is cut before vLLM's estimate. The
    raise covers 0.02 GiB, so it leads; the length that fits, from the two GiB numbers with
    their rounding, follows it (before: no max_model_len action at all)."""
    line = (
        "ValueError: To serve at least one request with the model's max seq len (2048), 0.66 "
        "GiB KV cache is needed, which is larger than the available KV cache memory (0.64 GiB)."
    )
    top = _top(line, ["vllm", "serve", "m", "--max-model-len", "2048"], "1xL4")
    assert top.id == "max-seq-len-exceeds-kv"
    turns = _turns(top)
    assert turns[0] == ("gpu_memory_utilization", "raise")
    cut = next(a for a in top.actions if a.knob == "max_model_len")
    # 2048 x 0.635 / 0.665 = 1955 -> 1952: below vLLM's own ~1985, never above it
    assert cut.direction == "lower" and cut.value == 1952
    assert "two GiB numbers" in cut.why


def test_eager_only_where_graphs_sit_in_the_budget_and_cover_the_gap():
    line = (
        "ValueError: To serve at least one request with the model's max seq len (8192), (2.63 "
        "GiB KV cache is needed, which is larger than the available KV cache memory (1.64 GiB)."
    )
    old = _turns(_top(line, gpus="1xL4", version="0.11.0"))
    assert ("enforce_eager", "set") not in old
    new = _turns(_top(line, gpus="1xL4", version="0.33.0"))
    assert ("enforce_eager", "set") in new
    small = "INFO [gpu_model_runner.py:6410] Estimated CUDA graph memory: 0.36 GiB total\n" + line
    assert ("enforce_eager", "set") not in _turns(_top(small, gpus="1xL4", version="0.33.0"))


def test_v0_cpu_backend_raises_its_kv_space_not_the_gpu_utilization():
    """V0's CPU worker (0.4.3-0.9.2 cpu_worker.py) names VLLM_CPU_KVCACHE_SPACE: that
    environment variable is the KV budget there; gpu_memory_utilization does nothing."""
    refusal = (
        "ValueError: The model's max seq len (131072) is larger than the maximum number of "
        "tokens that can be stored in KV cache (21840). Try increasing `VLLM_CPU_KVCACHE_SPACE` "
        "or decreasing `max_model_len` when initializing the engine."
    )
    warning = (
        "WARNING 05-20 10:00:00 cpu.py:131] Environment variable VLLM_CPU_KVCACHE_SPACE (GiB) "
        "for CPU backend is not set, using 4 by default.\n"
    )
    top = _top(warning + refusal)
    assert top.id == "max-seq-len-exceeds-kv" and top.step == 4
    assert (top.actions[0].knob, top.actions[0].direction) == ("VLLM_CPU_KVCACHE_SPACE", "raise")
    assert top.actions[0].value == 26  # 4 GiB x 131072 / 21840 x 1.05, rounded up
    assert ("max_model_len", "lower") in _turns(top)
    assert not any(a.knob == "gpu_memory_utilization" for a in top.actions)
    none_left = (
        "ValueError: No available memory for the cache blocks. Try increasing "
        "`VLLM_CPU_KVCACHE_SPACE` when initializing the engine."
    )
    top = _top(none_left)
    assert top.actions[0].knob == "VLLM_CPU_KVCACHE_SPACE"
    assert not any(a.knob == "gpu_memory_utilization" for a in top.actions)


def test_a_sized_no_cache_finding_keeps_its_lead_and_adds_the_release_knobs():
    """With the model's shape the doctor sizes one request and searches; the release's other
    knobs follow, each once."""
    from headroom.doctor.model_table import find_model

    d = diagnose(
        DoctorInputs(
            log=NO_BLOCKS,
            command=parse_command(["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct"]),
            gpu_spec=parse_gpu_spec("1xRTX4090"),
            model=find_model("Llama-3.1-8B"),
            vllm_version="0.10.2",
        )
    )
    top = d.findings[0]
    knobs = [a.knob for a in top.actions]
    assert len(knobs) == len(set(knobs))
    assert "max_num_batched_tokens" in knobs and "max_num_seqs" in knobs
    assert "enforce_eager" not in knobs  # graphs outside the budget before 0.20


def test_an_oom_with_pinned_kv_bytes_lowers_the_bytes_not_the_utilization():
    """vLLM 0.10.2+ reserves --kv-cache-memory-bytes exactly and "does not respect the
    gpu_memory_utilization config ... If OOM'ed, ... update it correspondingly"."""
    oom = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 786.00 MiB. GPU 0 has a "
        "total capacity of 23.56 GiB of which 140.75 MiB is free. Including non-PyTorch memory, "
        "this process has 23.40 GiB memory in use."
    )
    argv = ["vllm", "serve", "m", "--kv-cache-memory-bytes", "5583457484"]
    d = diagnose(DoctorInputs(log=oom, command=parse_command(argv)))
    turns = [(a.knob, a.direction) for f in d.findings for a in f.actions]
    assert ("kv_cache_memory_bytes", "lower") in turns
    assert ("gpu_memory_utilization", "lower") not in turns
    lowered = next(a for f in d.findings for a in f.actions if a.knob == "kv_cache_memory_bytes")
    assert lowered.value < 5583457484 and lowered.value % 2**20 == 0
    # without the pin, the utilization is the knob (the table's CUDA-OOM order)
    plain = diagnose(DoctorInputs(log=oom, command=parse_command(["vllm", "serve", "m"])))
    assert plain.findings[0].actions[0].knob == "gpu_memory_utilization"


def test_a_v0_worker_frame_dates_the_v0_engine_and_its_next_knob():
    """tests/fixtures/gpu-startup-logs/gpu-qwen2.5-0.5b-no-cache-blocks-v0.6.4.log's frame:
    V0's worker.py raises it (0.4.3-0.10.2); at 0.95 the V0 profile's knob leads."""
    frame = (
        'ERROR 11-18 18:07:28 engine.py:366]   File "/usr/local/lib/python3.12/dist-packages/'
        'vllm/worker/worker.py", line 493, in raise_if_cache_size_invalid\n'
    )
    assert Context(DoctorInputs(log=frame + NO_BLOCKS)).version == "0.7.3"
    argv = ["vllm", "serve", "m", "--gpu-memory-utilization", "0.95", "--max-model-len", "8192"]
    top = _top(frame + NO_BLOCKS, argv, "1xL4")
    assert _turns(top)[0] == ("max_model_len", "lower") and top.actions[0].value == 4096


@settings(max_examples=150, deadline=None)
@given(
    util=st.sampled_from([0.3, 0.5, 0.8, 0.85, 0.9, 0.92, 0.94, 0.95, 0.98]),
    deficit=st.floats(min_value=0.01, max_value=60.0),
    gpus=st.sampled_from(["1xH100", "1xL4", "1xRTX4090", "2xA100", None]),
    version=st.sampled_from([None, "0.4.3", "0.9.2", "0.10.2", "0.33.0"]),
)
def test_the_lead_follows_the_numbers_and_never_turns_the_wrong_way(util, deficit, gpus, version):
    """Any negative budget, utilization, GPU and release: never a lower utilization for a KV
    shortage, no raise above 0.95; the raise leads exactly when 0.95 covers the deficit (plus
    the 1 % margin) on a known GPU, or when nothing sizes it and there is room."""
    deficit = round(deficit, 2)  # as vLLM prints it
    log = f"INFO [gpu_worker.py:276] Available KV cache memory: -{deficit:.2f} GiB\n" + NO_BLOCKS
    argv = ["vllm", "serve", "m", "--gpu-memory-utilization", str(util)]
    top = _top(log, argv, gpus, version)
    turns = _turns(top)
    assert ("gpu_memory_utilization", "lower") not in turns
    raises = [a for a in top.actions if a.knob == "gpu_memory_utilization"]
    assert all(util < a.value <= 0.95 for a in raises)
    if util >= 0.95:
        assert not raises and top.actions
        return
    if gpus is None:
        from headroom.doctor.actions import largest_known_gpu_gib

        some_gpu = (0.955 - util) * largest_known_gpu_gib() >= deficit
        assert (turns[0] == ("gpu_memory_utilization", "raise")) == some_gpu
        return
    total = parse_gpu_spec(gpus).min_usable_gib
    covers = (0.955 - util) >= deficit / total + 0.01
    assert (turns[0] == ("gpu_memory_utilization", "raise")) == covers
    assert raises  # it stays, after the lead, when it is not enough alone


def test_auto_fit_has_no_length_to_cut():
    """--max-model-len -1 (0.32+) fits the length to memory itself; "Cannot auto-fit
    max_model_len" means not one token fits: the budget, never a max_model_len cut."""
    text = (
        "ValueError: Cannot auto-fit max_model_len: not enough GPU memory available to serve "
        "even a single token. Try increasing `gpu_memory_utilization`."
    )
    for typed in ("-1", "auto"):
        top = _top(text, ["vllm", "serve", "m", "--max-model-len", typed], "1xL4", "0.33.0")
        turns = _turns(top)
        assert turns[0] == ("gpu_memory_utilization", "raise")
        assert not any(k == "max_model_len" for k, _ in turns)
