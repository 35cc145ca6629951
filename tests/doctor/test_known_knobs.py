"""A knob is set, left to the release's default, or not known (headroom/doctor/known_knobs.py),
and rules that draw a conclusion from a knob's value do not state an unknown one as fact.

Texts: the threads' own pastes (tests/fixtures/incidents, train split, read by id: the
DeepSeek-V3.1 OOM on 16 B200 of vllm-project/vllm#25290, the "Severe OOM in 0.8.3 (ok in
0.7.2)" title of #16551, the DeepSeek-r1-awq title of #13252, the 8-GPU A6000 OOM of #4417),
and real start-up logs: tests/fixtures/startup-logs (dennislee22/vLLM-benchmarking, vLLM
0.10.1.1 `vllm serve`, whose "non-default args: {...}" line names what was set) and
tests/fixtures/gpu-startup-logs (the 0.4 engine config line "tensor_parallel_size=1 ...
max_seq_len=4096" of rtx3090-qwen-7b-zero-gpu-blocks-v0.4.log; the sources are in the
SOURCES.md files next to them).
"""

from __future__ import annotations

import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st
from support.fixtures import read_fixture

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.context import Context
from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.doctor.known_knobs import DEFAULT, SET, UNKNOWN
from headroom.doctor.model_table import find_model
from headroom.vllm_cmd import parse_command


def _incident_log(name: str) -> str:
    incident = json.loads(read_fixture("incidents", f"{name}.json"))
    assert incident["split"] == "train"
    return incident["log"]


DEEPSEEK_B200_OOM = _incident_log("vllm-project--vllm--25290")
UPGRADE_OOM_TITLE = _incident_log("vllm-project--vllm--16551")
R1_AWQ_TITLE = _incident_log("vllm-project--vllm--13252")
A6000_OOM = _incident_log("vllm-project--vllm--4417")
NON_DEFAULT_ARGS_LOG = read_fixture(
    "startup-logs", "dennislee22-vllm-120B-4gpuA10080GB-0.8GRAM-diff-nodes-v0.10.1.1.log"
)
V04_ENGINE_LOG = read_fixture("gpu-startup-logs", "rtx3090-qwen-7b-zero-gpu-blocks-v0.4.log")


def _ctx(log=None, argv=None, model=None, gpus=None, nodes=1, version=None) -> Context:
    return Context(_inputs(log, argv, model, gpus, nodes, version))


def _inputs(log=None, argv=None, model=None, gpus=None, nodes=1, version=None) -> DoctorInputs:
    return DoctorInputs(
        command=parse_command(argv) if argv else None,
        log=log,
        model=find_model(model) if model else None,
        gpu_spec=parse_gpu_spec(gpus) if gpus else None,
        nodes=nodes,
        vllm_version=version,
    )


# -- the three states ------------------------------------------------------------------------


def test_a_command_line_sets_what_it_gives_and_leaves_the_rest_to_the_default():
    ctx = _ctx(DEEPSEEK_B200_OOM, ["vllm", "serve", "deepseek-ai/DeepSeek-V3.1", "-tp", "8"])
    assert ctx.knob_state("tensor_parallel_size") == SET
    assert ctx.knob_state("max_model_len") == DEFAULT
    assert ctx.known("max_num_seqs") and ctx.known("pipeline_parallel_size")


def test_without_a_command_line_an_oom_alone_says_no_knob():
    ctx = _ctx(DEEPSEEK_B200_OOM, gpus="16xB200")
    for arg in ("tensor_parallel_size", "max_model_len", "max_num_seqs", "gpu_memory_utilization"):
        assert ctx.knob_state(arg) == UNKNOWN
        assert not ctx.known(arg)
    lacking = diagnose(_inputs(DEEPSEEK_B200_OOM, gpus="16xB200")).lacking
    assert any("TP, PP, max_model_len, max_num_seqs" in line for line in lacking)


def test_the_non_default_args_line_sets_its_knobs_and_makes_the_others_defaults():
    ctx = _ctx(NON_DEFAULT_ARGS_LOG)
    assert ctx.knob_state("tensor_parallel_size") == SET and ctx.knobs.tp == 4
    assert ctx.knob_state("max_model_len") == SET and ctx.knobs.max_model_len == 16384
    assert ctx.knob_state("gpu_memory_utilization") == SET
    assert ctx.knob_state("max_num_seqs") == DEFAULT  # not among the args the line lists


def test_the_engine_config_line_says_the_tp_and_length_it_ran_with():
    ctx = _ctx(V04_ENGINE_LOG)
    assert ctx.knob_state("tensor_parallel_size") == SET  # tensor_parallel_size=1 is said
    assert ctx.knob_state("max_model_len") == SET  # max_seq_len=4096
    assert ctx.knob_state("max_num_seqs") == UNKNOWN  # the engine line does not carry it


def test_one_gpu_at_hand_is_tp_one_whatever_the_command_line_says():
    assert _ctx(A6000_OOM, gpus="1xA6000").known("tensor_parallel_size")
    assert not _ctx(A6000_OOM, gpus="8xA6000").known("tensor_parallel_size")


def test_the_utilization_in_evidence_says_when_it_is_only_the_default():
    assert "the one in use is not given" in _ctx(A6000_OOM, gpus="8xA6000").utilization_said
    assert _ctx(NON_DEFAULT_ARGS_LOG).utilization_said == "0.80"  # the line's 0.8
    argv = ["vllm", "serve", "Qwen/Qwen3-8B"]  # a command line that leaves it: the default
    assert _ctx(A6000_OOM, argv).utilization_said == f"{_ctx(A6000_OOM, argv).utilization:.2f}"


# -- rules over an unknown knob ----------------------------------------------------------------


def test_weights_that_fit_at_some_tp_are_a_condition_not_the_lead():
    """vllm#25290: DeepSeek-V3.1 (626 GiB of weights) on 16 B200, the TP not pasted. The OOM
    came at graph capture; the weights fit from TP 4: not 'raise TP' as the cause."""
    found = diagnose(_inputs(DEEPSEEK_B200_OOM, model="deepseek-ai/DeepSeek-V3.1",
                             gpus="16xB200")).findings  # fmt: skip
    assert found[0].id != "cuda-oom-weights"
    assert not any(a.knob == "tensor_parallel_size" for a in found[0].actions)
    assert not any("at TP 1" in line for f in found for line in f.evidence)


def test_weights_stated_at_the_default_tp_are_the_cause():
    """The same OOM with a command line that leaves TP at its default 1: the weights are the
    cause, and TP is raised."""
    argv = ["vllm", "serve", "deepseek-ai/DeepSeek-V3.1"]
    top = diagnose(_inputs(DEEPSEEK_B200_OOM, argv, gpus="16xB200")).findings[0]
    assert top.id == "cuda-oom-weights"
    assert (top.actions[0].knob, top.actions[0].direction) == ("tensor_parallel_size", "raise")


def test_weights_no_layout_of_the_gpus_holds_stay_a_weights_finding():
    """Two B200 cannot hold 626 GiB at any TP x PP: that is said whatever TP ran."""
    found = diagnose(_inputs(DEEPSEEK_B200_OOM, model="deepseek-ai/DeepSeek-V3.1",
                             gpus="2xB200")).findings  # fmt: skip
    weights = next(f for f in found if f.id == "cuda-oom-weights")
    assert any("no TP x PP the 2 GPUs at hand allow holds them" in e for e in weights.evidence)


def test_a_default_length_not_known_to_be_in_force_leaves_the_lead_to_the_upgrade():
    """vllm#16551 with the model named: Qwen2.5-VL-7B's own 128,000 tokens are only vLLM's
    default; the stated upgrade (ok in 0.7.2, OOM in 0.8.3) raised the default max_num_seqs
    from 256 to 1024, the maintainer's answer."""
    found = diagnose(_inputs(UPGRADE_OOM_TITLE, model="Qwen/Qwen2.5-VL-7B-Instruct",
                             version="0.8.3")).findings  # fmt: skip
    top = found[0]
    assert top.id == "release-default-max-num-seqs"
    assert top.title.startswith("Out of GPU memory, if max_num_seqs was left at")
    assert any("max_num_seqs in force is not known" in e for e in top.evidence)
    assert any("an upgrade alone changes only what the release chooses" in e for e in top.evidence)
    long = next(f for f in found if f.id == "cuda-oom-if-long-context")
    assert found.index(long) > 0 and "if max_model_len was left at" in long.title


def test_a_title_naming_a_long_context_model_given_by_name_cuts_the_length():
    """vllm#13252 with the model given (--model-config DeepSeek-r1-awq): the table's length is
    the default, the conclusion the same (decrease max_model_len), said as a condition."""
    top = diagnose(_inputs(R1_AWQ_TITLE, model="DeepSeek-r1-awq", version="0.7.2")).findings[0]
    assert top.id == "cuda-oom-if-long-context"
    assert (top.actions[0].knob, top.actions[0].direction) == ("max_model_len", "lower")
    assert any("the max_model_len in force is not known" in e for e in top.evidence)


def test_idle_gpus_without_a_command_line_say_the_tp_as_a_condition():
    top = diagnose(_inputs(A6000_OOM, gpus="8xA6000")).findings[0]
    assert top.id == "cuda-oom-idle-gpus"
    assert "if TP was left at its default 1" in top.title
    assert not any("in force is 1" in e for e in top.evidence)


# -- property: no evidence line states a TP / max_model_len / max_num_seqs nothing gave -----------

# The forms in which the doctor states a knob's value as in force (not a proposal).
_TP_CLAIMS = (
    re.compile(r"\bat TP (\d+)\b"),
    re.compile(r"\bTP (\d+) divides\b"),
    re.compile(r"\bTP (\d+) x PP \d+ on\b"),
    re.compile(r"\bTP (\d+) leaves\b"),
    re.compile(r"TP x PP x DP in force is (\d+)"),
)
_LEN_CLAIMS = (
    re.compile(r"\bmax_model_len ([\d,]+): (?:the model's own|the engine)"),
    re.compile(r"\bwith a ([\d,]+)-token max_model_len"),
    re.compile(r"\bmax_model_len ([\d,]+) ran\b"),
    re.compile(r"requests of ([\d,]+)$"),
)
_SEQS_CLAIMS = (
    re.compile(r"max_num_seqs was not set"),
    re.compile(r"with the release's default max_num_seqs \((\d+)\)"),
)
# A line that says its value is a condition or a search result (a candidate checked or
# refused), not what ran.
_CONDITIONAL = re.compile(
    r"\bif\b|not known|not given|would|\bchecked\b|estimate is for|not proposing"
)

_LOGS = (
    DEEPSEEK_B200_OOM,
    UPGRADE_OOM_TITLE,
    R1_AWQ_TITLE,
    A6000_OOM,
    _incident_log("gpustack--gpustack--1342"),
    _incident_log("hiyouga--easyr1--409"),
    _incident_log("vllm-project--vllm-ascend--5139"),
    read_fixture("gpu-startup-logs", "a100-80gb-wizardlm2-8x22b-oom.log"),
    read_fixture("gpu-startup-logs", "h100-gpt-oss-120b-sampler-warmup-oom.log"),
    V04_ENGINE_LOG,
    NON_DEFAULT_ARGS_LOG,
)
_MODELS = (
    None,
    "deepseek-ai/DeepSeek-V3.1",
    "Qwen/Qwen2.5-VL-7B-Instruct",
    "THUDM/glm-4-9b-chat",
    "DeepSeek-r1-awq",
    "meta-llama/Llama-3.1-70B-Instruct",
    "Qwen/Qwen3-8B",
)
_GPUS = (None, "1xH100", "2xRTX4090:24", "8xA6000", "8xA100:80", "16xB200")


def _given_by_input(kind: str, value: str, log: str, ctx: Context) -> bool:
    number = value.replace(",", "")
    if kind == "tp":
        if number == "1" and ctx.known("tensor_parallel_size"):
            return True  # one GPU at hand, or the log said it
        said = rf"(?i)(?:tensor_parallel_size\W{{0,4}}|\btp\W{{0,2}}){number}\b"
        return re.search(said, log) is not None
    if kind == "len":
        return number in log.replace(",", "") or ctx.known("max_model_len")
    return ctx.known("max_num_seqs")


@settings(max_examples=120, deadline=None)
@given(
    log=st.sampled_from(_LOGS),
    model=st.sampled_from(_MODELS),
    gpus=st.sampled_from(_GPUS),
    nodes=st.sampled_from((1, 2)),
    version=st.sampled_from((None, "0.7.2", "0.8.3", "0.10.1")),
)
def test_no_command_line_never_states_a_knob_value_no_input_gave(log, model, gpus, nodes, version):
    inputs = _inputs(log, None, model, gpus, nodes, version)
    ctx = Context(inputs)
    diagnosis = diagnose(inputs)
    lines = [line for f in diagnosis.findings for line in (f.title, *f.evidence)]
    lines += [s.why for s in diagnosis.steps]
    for line in lines:
        if line in log or _CONDITIONAL.search(line):
            continue  # the log's own words, or a condition
        for kind, claims in (("tp", _TP_CLAIMS), ("len", _LEN_CLAIMS), ("seqs", _SEQS_CLAIMS)):
            for claim in claims:
                for found in claim.finditer(line):
                    value = found.group(1) if claim.groups else ""
                    assert _given_by_input(kind, value, log, ctx), (kind, line)
