"""A CUDA OOM the log does not place, decided by the sizes the input carries
(headroom/doctor/oom_sizes.py, oom_weights.py, oom_lengths.py, rules_long_context.py).

Texts: the threads' own pastes (tests/fixtures/incidents, train split, read by id), vLLM's
own warning (vllm/engine/arg_utils.py, 0.5.4-0.7.3: "The model has a long context length ...")
and the 0.2/0.3 engine config line (vllm-project/vllm#1559's paste)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.fixtures import read_fixture

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.context import Context
from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.doctor.model_table import find_model
from headroom.doctor.oom_lengths import (
    context_from_name,
    derived_length,
    long_name_shape,
    whole_prompt_profile,
)
from headroom.vllm_cmd import parse_command


def _incident_log(name: str) -> str:
    incident = json.loads(read_fixture("incidents", f"{name}.json"))
    assert incident["split"] == "train"
    return incident["log"]


# vllm#4417: PyTorch 2.2+ wording, one process named (this one), 46.14 of 47.54 GiB
FULL_A6000 = _incident_log("vllm-project--vllm--4417")
# functionary#88: torch 2.1 ("capacty"), GPU 1 of a TP 2 pair, 47.32 of 47.54 GiB
FULL_A6000_TP2 = _incident_log("meetkai--functionary--88")
# gpustack#1342's title: a person's words
SAID_1M = _incident_log("gpustack--gpustack--1342")
# vllm#1559: the 0.2/0.3 engine config line with a rope-scaled length
ENGINE_LINE_524K = _incident_log("vllm-project--vllm--1559")
# vllm/engine/arg_utils.py (0.5.4 .. 0.7.3), logged as a WARNING when chunked prefill stays off
LONG_WARNING = (
    "WARNING 05-06 10:00:00 arg_utils.py:1023] The model has a long context length (131072). "
    "This may cause OOM errors during the initial memory profiling phase, or result in low "
    "performance due to small KV cache space. Consider setting --max-model-len to a smaller "
    "value."
)


def _findings(log: str, argv: list[str] | None = None, gpus: str | None = None, **kw):
    inputs = DoctorInputs(
        log=log,
        command=parse_command(argv) if argv else None,
        gpu_spec=parse_gpu_spec(gpus) if gpus else None,
        **kw,
    )
    return diagnose(inputs).findings


def _turns(finding) -> list[tuple[str, str]]:
    return [(a.knob, a.direction) for a in finding.actions]


# -- idle GPUs ---------------------------------------------------------------------------


def test_a_full_gpu_with_seven_idle_raises_tp_first_and_lowers_utilization_second():
    top = _findings(FULL_A6000, gpus="8xA6000")[0]
    assert top.id == "cuda-oom-idle-gpus" and top.step == 1
    assert _turns(top)[:2] == [
        ("tensor_parallel_size", "raise"),
        ("gpu_memory_utilization", "lower"),
    ]
    assert any("46.14 GiB" in e for e in top.evidence)


def test_no_idle_gpus_no_spreading():
    for gpus, argv in (
        ("1xA6000", None),
        ("8xA6000", ["vllm", "serve", "some-org/some-model", "-tp", "8"]),
        ("8xA6000", ["vllm", "serve", "some-org/some-model", "-tp", "4", "-pp", "2"]),
    ):
        found = _findings(FULL_A6000, argv, gpus)
        assert found[0].id != "cuda-oom-idle-gpus", (gpus, argv)
        assert ("gpu_memory_utilization", "lower") in _turns(found[0])


def test_cuda_visible_devices_counts_the_gpus_at_hand():
    argv = ["env", "CUDA_VISIBLE_DEVICES=0,1,2,3", "vllm", "serve", "some-org/some-model"]
    top = _findings(FULL_A6000, argv)[0]
    assert top.id == "cuda-oom-idle-gpus"
    one = ["env", "CUDA_VISIBLE_DEVICES=0", "vllm", "serve", "some-org/some-model"]
    assert _findings(FULL_A6000, one, "8xA6000")[0].id != "cuda-oom-idle-gpus"


def test_an_oom_on_a_later_rank_does_not_say_tp_1():
    """ "GPU 3 has ..." with no command: the OOM is a worker of some larger TP (or DP), so
    the TP in force is not known and nothing says GPUs sit idle."""
    rank3 = FULL_A6000.replace("GPU 0 has a total", "GPU 3 has a total")
    assert _findings(rank3, gpus="8xA6000")[0].id != "cuda-oom-idle-gpus"


def test_an_oom_after_the_kv_cache_was_sized_is_not_spread():
    """The KV cache's block count logged before the OOM (vllm#11210's V1 line, 0.6.5): the
    weights and the profile fitted at this TP, what overflowed came later."""
    blocks = _incident_log("vllm-project--vllm--11210").splitlines()[0]
    assert "# GPU blocks" in blocks
    top = _findings(blocks + "\n" + FULL_A6000, gpus="8xA6000")[0]
    assert top.id != "cuda-oom-idle-gpus"
    assert not any(knob == "tensor_parallel_size" for knob, _ in _turns(top))


def test_small_known_weights_are_not_helped_by_more_gpus():
    """Qwen2-7B's ~14 GiB is under half the budget of a 48 GiB GPU: the idle GPUs are not
    what is missing, the table's OOM order stands."""
    top = _findings(FULL_A6000, ["vllm", "serve", "Qwen/Qwen2-7B"], "8xA6000")[0]
    assert top.id != "cuda-oom-idle-gpus"
    assert not any(knob == "tensor_parallel_size" for knob, _ in _turns(top))


def test_a_process_within_its_budget_is_not_spread():
    within = FULL_A6000.replace("Process 876965 has 46.14 GiB", "Process 876965 has 30.00 GiB")
    assert _findings(within, gpus="8xA6000")[0].id != "cuda-oom-idle-gpus"


# -- weights against the budget in force -------------------------------------------------


def test_weights_over_the_budget_in_force_are_step_one_never_a_higher_utilization():
    """A Mixtral-8x7B shape (functionary-medium) at TP 2 on two A6000: 43.5 GiB per GPU, past
    0.9 x 47.2 GiB. Below 0.95 x total, but a CUDA OOM never wants a higher utilization."""
    argv = ["vllm", "serve", "mistralai/Mixtral-8x7B-Instruct-v0.1", "-tp", "2"]
    found = _findings(FULL_A6000_TP2, argv, "2xA6000")
    assert found[0].id == "cuda-oom-weights" and found[0].step == 1
    assert any("vLLM's budget" in e for e in found[0].evidence)
    assert not any(
        (a.knob, a.direction) == ("gpu_memory_utilization", "raise")
        for f in found
        for a in f.actions
    )
    # at TP 4 the share is ~22 GiB: not the weights
    argv4 = [*argv[:-1], "4"]
    assert _findings(FULL_A6000_TP2, argv4, "4xA6000")[0].id != "cuda-oom-weights"


# -- the max_model_len in force and the release's profile --------------------------------


def test_a_1m_model_said_to_oom_lowers_max_model_len_and_leaves_the_utilization():
    """No command line: the 1M length is only vLLM's default for the model, so the finding
    is a condition on it, and the words' own blame on the length leads (with no value: the
    length in force is not known)."""
    found = _findings(SAID_1M)
    top = found[0]
    assert top.id == "words-length-blamed" and top.step == 4
    assert _turns(top) == [("max_model_len", "lower")] and top.actions[0].value is None
    long = next(f for f in found if f.id == "cuda-oom-if-long-context")
    assert long.title.startswith("Out of GPU memory, if max_model_len was left at")
    assert long.actions[0].value == 32768
    # glm-4-9b-chat-1m: 4 KV groups (its config.json; the 9B's 2), 80 KiB a token
    assert any("80.00 GiB of KV cache" in e for e in long.evidence)
    assert any("max_model_len in force is not known" in e for e in long.evidence)
    assert not any(a.knob == "gpu_memory_utilization" for f in (top, long) for a in f.actions)


def test_a_title_quoting_the_oom_and_naming_a_long_context_model_cuts_the_length():
    """vllm-project/vllm#13252's title quotes PyTorch's words without their numbers and names
    the model: the table's DeepSeek-R1 (163,840 tokens, its config's own length) run at that
    length; the weights fit no GPU at TP 1, so only one request's KV cache is weighed (the
    TP in use is not given). The thread's answer: decrease max_model_len."""
    title = (
        "[Bug]: Using VLLM0.7.2 server to start DeepSeek-r1-awq model, there is a phenomenon "
        "of cuda out of memory and service shutting down."
    )
    top = _findings(title)[0]
    assert top.id == "cuda-oom-if-long-context"  # no command line: vLLM's default length
    assert _turns(top) == [("max_model_len", "lower")]
    assert any("163,840" in e and "table" in e for e in top.evidence)
    assert any("the TP in use is not given" in e for e in top.evidence)
    # PyTorch's own line, numbers and all (OpenBMB/MiniCPM-V#640), names no model
    bare = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a "
        "total capacity of 22.18 GiB of which 3.47 GiB is free."
    )
    assert not any(f.id.endswith("long-context") for f in _findings(bare))


def test_a_gpu_that_holds_the_long_length_is_not_told_to_cut_it():
    """One request of 1M tokens (80 GiB) and the weights (17.7 GiB) fit an H200's budget."""
    found = _findings(SAID_1M, gpus="1xH200")
    assert not any(f.id.endswith("long-context") for f in found)


def test_an_engine_line_of_0_3_with_a_rope_scaled_length_warns_before_any_oom():
    top = _findings(ENGINE_LINE_524K)[0]
    assert top.id == "preflight-long-context-profile" and top.step == 4
    assert _turns(top) == [("max_model_len", "lower")]
    assert any("0.2-0.3" in e for e in top.evidence)


def test_no_warning_when_the_profile_is_bounded_or_the_length_short():
    line = ENGINE_LINE_524K
    for argv in (
        ["vllm", "serve", "NousResearch/Yarn-Mistral-7b-128k", "--enable-chunked-prefill"],
        ["vllm", "serve", "NousResearch/Yarn-Mistral-7b-128k", "--max-num-batched-tokens", "4096"],
    ):
        assert not any(f.id.startswith("preflight-long") for f in _findings(line, argv))
    short = line.replace("max_seq_len=524288", "max_seq_len=32768")
    assert not any(f.id.startswith("preflight-long") for f in _findings(short))
    # a V1 release profiles max_num_batched_tokens
    found = _findings(line, vllm_version="0.8.5")
    assert not any(f.id.startswith("preflight-long") for f in found)


def _ctx(argv=None, version=None, log=""):
    cmd = parse_command(argv) if argv else None
    return Context(DoctorInputs(log=log, command=cmd, vllm_version=version))


@pytest.mark.parametrize(
    ("version", "argv", "tokens", "whole"),
    [
        ("0.4.3", None, 65536, True),  # before PR #6666: never chunked by itself
        ("0.5.5", None, 65536, False),  # chunked above 32K
        ("0.5.5", None, 32768, True),  # not above 32K: max(max_model_len, 2048)
        ("0.5.5", ["vllm", "serve", "m", "--enable-prefix-caching"], 65536, True),
        ("0.6.4", ["vllm", "serve", "m", "--enable-prefix-caching"], 65536, False),
        ("0.6.4", ["vllm", "serve", "m", "--enable-lora"], 65536, True),
        ("0.8.5", None, 131072, False),  # V1
        ("0.10.2", ["vllm", "serve", "m", "--no-enable-chunked-prefill"], 131072, True),
        (None, None, 131072, None),
    ],
)
def test_whole_prompt_profile_follows_each_release(version, argv, tokens, whole):
    assert whole_prompt_profile(_ctx(argv, version), tokens)[0] is whole


def test_a_multimodal_model_is_left_unchunked_from_0_6_3():
    argv = ["vllm", "serve", "openbmb/MiniCPM-V-2_6"]
    assert whole_prompt_profile(_ctx(argv, "0.6.4"), 65536)[0] is True
    assert whole_prompt_profile(_ctx(argv, "0.5.5"), 65536)[0] is False


def test_vllms_own_warning_says_the_profile_is_whole():
    assert whole_prompt_profile(_ctx(log=LONG_WARNING), 131072)[0] is True


def test_the_derived_length_applies_rope_scaling_as_vllm_does():
    base = find_model("Mistral-7B-v0.1")
    assert base is not None
    from dataclasses import replace

    yarn = replace(base, rope_scaling={"type": "yarn", "factor": 4.0,
                                       "original_max_position_embeddings": 32768})  # fmt: skip
    assert derived_length(yarn) == 131072
    llama3 = replace(base, rope_scaling={"rope_type": "llama3", "factor": 8.0})
    assert derived_length(llama3) == 32768  # vLLM leaves llama3 scaling out
    linear = replace(base, rope_scaling={"type": "linear", "factor": 2.0})
    assert derived_length(linear) == 65536


def test_a_long_context_name_finds_its_base_shape():
    shape = long_name_shape("NousResearch/Yarn-Mistral-7b-128k")
    assert shape is not None and shape.max_position_embeddings == 131072
    assert shape.hidden_size == find_model("Mistral-7B").hidden_size
    assert long_name_shape("some-org/Unknown-7b-128k") is None
    assert context_from_name("glm-4-9b-chat-1m") == 1024 * 1024
    assert context_from_name("Llama-2-7b-hf") is None
    # millions of parameters, not of tokens
    assert context_from_name("facebook/opt-125m") is None
    assert context_from_name("HuggingFaceTB/SmolLM-360M") is None
    assert context_from_name("gradientai/Llama-3-8B-Instruct-Gradient-1048k") == 1048 * 1024


@given(st.text(max_size=120))
def test_a_model_named_in_words_is_part_of_the_words(text):
    from headroom.doctor.oom_lengths import model_in_words

    found = model_in_words(text)
    assert found is None or found in text


@given(st.text(max_size=80))
def test_context_from_name_never_raises(text):
    found = context_from_name(text)
    assert found is None or (isinstance(found, int) and found >= 4096)


def test_the_weights_search_counts_the_gpus_cuda_visible_devices_lists():
    """Llama-3.1-70B (~131 GiB at 16 bits) at TP 1 on A6000s (the OOM's 47.54 GiB), with no
    --gpus: CUDA_VISIBLE_DEVICES=0,1,2,3 says four GPUs, so TP is searched on those four
    and the answer is not hedged "if the node has" them (vllm#7538's setup)."""
    argv = ["env", "CUDA_VISIBLE_DEVICES=0,1,2,3", "vllm", "serve", "meta-llama/Llama-3.1-70B"]
    top = _findings(FULL_A6000, argv)[0]
    assert top.id == "cuda-oom-weights" and top.step == 1
    tp = next(a for a in top.actions if a.knob == "tensor_parallel_size")
    assert tp.direction == "raise" and tp.value is not None and tp.value <= 4
    assert "if the node has" not in tp.why
    unhedged = _findings(FULL_A6000, argv[3:])[0]
    assert any("if the node has" in a.why for a in unhedged.actions)


def test_the_engine_config_line_gives_the_tp_in_force_without_a_command():
    """A V1 engine config line (0.10.1.1, tests/fixtures/startup-logs) says TP 4: the weights
    are sized per GPU at TP 4, not as if one GPU held them all."""
    log = read_fixture(
        "startup-logs", "dennislee22-vllm-120B-4gpuA10080GB-0.8GRAM-diff-nodes-v0.10.1.1.log"
    )
    engine = next(line for line in log.splitlines() if "Initializing a V1 LLM engine" in line)
    assert Context(DoctorInputs(log=engine)).knobs.tp == 4
    assert Context(DoctorInputs(log=FULL_A6000)).knobs.tp == 1
