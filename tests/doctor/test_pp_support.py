"""Pipeline parallelism a model lacks (rules_parallel.pp_unsupported, doctor/pp_support.py).

The refusal is vLLM's own (config.py 0.6.4+: "Pipeline parallelism is not supported for this
model. Supported models implement the `SupportsPP` interface."); "Resolved architecture: %s" is
config/model.py's info line (0.10.2+). The threads: vllm#16231 (Llama 4 Maverick, TP 8 x PP 2 on
0.8.3: "rebase to latest main, it should be supported"), vllm#45455 (MiniMax-M3 on
0.22.1rc1.dev490: PP added by PR #45810), vllm#54635 (MTP drafters without SupportsPP)."""

from __future__ import annotations

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.pp_support import NEWEST_READ, PP_NEVER, PP_SINCE
from headroom.doctor.versions import parse_version
from headroom.vllm_cmd import parse_command

PP = (
    "NotImplementedError: Pipeline parallelism is not supported for this model. Supported "
    "models implement the `SupportsPP` interface."
)


def _top(log, argv=None, version=None):
    command = parse_command(argv) if argv else None
    return diagnose(DoctorInputs(log=log, command=command, vllm_version=version)).findings[0]


def test_the_table_holds_what_the_releases_say():
    # 0.5.5's _PP_SUPPORTED_MODELS has Llama; Llama 4 gained SupportsPP after 0.8.3 (#16231)
    assert PP_SINCE["LlamaForCausalLM"] == "0.5.5"
    assert PP_SINCE["Llama4ForConditionalGeneration"] == "0.8.5"
    assert parse_version(PP_SINCE["MiniMaxM3SparseForConditionalGeneration"]) >= (0, 23, 0)
    assert "MllamaForConditionalGeneration" in PP_NEVER
    assert not set(PP_SINCE) & PP_NEVER
    assert parse_version(NEWEST_READ) >= (0, 33, 0)


def test_an_architecture_a_later_release_runs_pp_is_an_upgrade():
    argv = [
        "vllm",
        "serve",
        "meta-llama/Llama-4-Maverick-17B-128E-Instruct",
        "-tp",
        "8",
        "-pp",
        "2",
    ]
    top = _top(PP, argv, version="0.8.3")
    assert top.id == "pp-unsupported-upgrade" and top.step is None
    assert not [a for a in top.actions if a.knob]
    assert any("0.8.5" in e for e in top.evidence)


def test_the_resolved_architecture_line_names_the_model():
    log = (
        "(APIServer pid=956833) INFO 06-12 23:17:24 [model.py:609] Resolved architecture: "
        f"MiniMaxM3SparseForConditionalGeneration\n{PP}"
    )
    top = _top(
        log, ["vllm", "serve", "/mnt/llms/models/m", "-pp", "7"], "0.22.1rc1.dev490+g4a560dd8d"
    )
    assert top.id == "pp-unsupported-upgrade"
    assert "MiniMaxM3SparseForConditionalGeneration" in top.title


def test_an_unnamed_model_is_an_upgrade_with_the_layout_to_start_now():
    top = _top(PP)
    assert top.id == "pp-unsupported-upgrade" and not top.actions
    assert any("--pipeline-parallel-size 1" in e for e in top.evidence)


def test_an_architecture_this_release_runs_pp_is_not_the_model_refused():
    # Llama since 0.5.5: at 0.9.2 the refusal is about another model (a draft model): the
    # layout without PP, the GPUs as TP.
    top = _top(PP, ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "-tp", "2", "-pp", "2"],
               version="0.9.2")  # fmt: skip
    assert top.id == "pp-unsupported"
    turns = [(a.knob, a.direction, a.value) for a in top.actions]
    assert turns[0] == ("pipeline_parallel_size", "lower", 1)
    assert ("tensor_parallel_size", "raise", 4) in turns
