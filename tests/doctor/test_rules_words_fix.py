"""A log of words that names the fix, the cause, the model or the GPUs
(headroom/doctor/rules_words_fix.py, headroom/doctor/words_setup.py): the texts are issue
titles and sentences of public threads (named beside each). Each family also has the cases
where nothing may be said, because a wrong direction is worse than no answer."""

from __future__ import annotations

import pytest

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.context import Context
from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.vllm_cmd import parse_command

# noonghunna/club-3090#96 (pull request title)
UNTIL_REDUCED = (
    "Add/vllm-qwen36-27b-dual-nvlink-dflash-noviz -- OOM during verify-stress.sh until reduce "
    "max_model_len to 188000"
)
# gpustack/gpustack#1342 (issue title)
DEFAULT_LENGTH = (
    "Failed to get derived_max_model_len of ModelScope/ZhipuAI/glm-4-9b-chat-1m and using "
    "default value caused OOM"
)


def _inputs(log: str, command: str | None = None, gpus: str | None = None) -> DoctorInputs:
    return DoctorInputs(
        log=log,
        command=parse_command(command.split()) if command else None,
        gpu_spec=parse_gpu_spec(gpus) if gpus else None,
    )


def _turns(diagnosis) -> set[tuple[str, str]]:
    return {(a.knob, a.direction) for f in diagnosis.findings for a in f.actions}


def test_a_fix_stated_in_the_title_is_the_answer():
    d = diagnose(_inputs(UNTIL_REDUCED))
    top = d.findings[0]
    assert top.id == "words-stated-fix" and top.step == 4
    assert (top.actions[0].knob, top.actions[0].direction, top.actions[0].value) == (
        "max_model_len",
        "lower",
        188000,
    )
    assert ("max_model_len", "raise") not in _turns(d)


@pytest.mark.parametrize(
    ("command", "value"),
    [
        ("--max-model-len 32768", 8192),  # the value set is below what ran: lowered
        (None, 8192),  # nothing ran to compare with: a length set after an OOM went down
    ],
)
def test_a_length_set_after_an_oom_is_a_lowering(command, value):
    # vllm-project/vllm#1949, as its resolution quotes vllm-project/vllm#188
    d = diagnose(_inputs("After setting --max-model-len 8192 the OOM went away", command))
    top = d.findings[0]
    assert top.id == "words-stated-fix"
    assert (top.actions[0].knob, top.actions[0].direction, top.actions[0].value) == (
        "max_model_len",
        "lower",
        value,
    )


@pytest.mark.parametrize(
    "log",
    [
        # vllm-project/vllm#14992: a change described without any failure beside it
        "set --max-num-seqs=256 (the default value of v0) solve the issue.",
        # vllm-project/vllm#5993 (title): the change did not help
        "[Bug]: OOM when loading Qwen2 GPTQ 8bit and modify gpu_memory_utilization didn't help",
        # vllm-project/vllm#16551: reduced, and still OOM
        "even after I reduced max-model-len, for example for the 7b model, I reduced "
        "max-model-len from 26000 to 16384, still OOM.",
    ],
)
def test_no_stated_fix_without_a_failure_or_when_it_did_not_help(log):
    assert "words-stated-fix" not in {f.id for f in diagnose(_inputs(log)).findings}


def test_a_value_that_already_ran_is_not_a_fix():
    d = diagnose(_inputs("After setting --max-model-len 8192 the OOM went away",
                         "--max-model-len 8192"))  # fmt: skip
    assert "words-stated-fix" not in {f.id for f in d.findings}


def _finding(diagnosis, finding_id):
    return next(f for f in diagnosis.findings if f.id == finding_id)


def test_an_oom_the_words_blame_on_the_length_lowers_max_model_len():
    d = diagnose(_inputs(DEFAULT_LENGTH))
    top = d.findings[0]
    assert (top.actions[0].knob, top.actions[0].direction) == ("max_model_len", "lower")
    # the sizes' finding (rules_long_context) says by how much; the words' blame repeats
    # the same turn, so its action is folded into the one above
    blamed = _finding(d, "words-length-blamed")
    assert all((a.knob, a.direction) == ("max_model_len", "lower") for a in blamed.actions)
    assert ("max_model_len", "raise") not in _turns(d)


def test_the_words_blame_outranks_a_release_defaults_guess():
    # gpustack/gpustack#364 (title): a multimodal model, whose release default max_num_seqs
    # might also have sized the profile; the words name the length
    d = diagnose(_inputs("Model instance OOM due to large context length in "
                         "OpenGVLab/internvl2-4b model"))  # fmt: skip
    top = d.findings[0]
    assert top.id == "words-length-blamed"
    assert (top.actions[0].knob, top.actions[0].direction) == ("max_model_len", "lower")
    assert ("max_model_len", "raise") not in _turns(d)


def test_the_blamed_length_is_halved_from_what_ran():
    # ai-dynamo/aiconfigurator#238: "OOM caused by missing `--max-model-len`"
    d = diagnose(_inputs("OOM caused by missing `--max-model-len`", "--max-model-len 40960"))
    assert d.findings[0].actions[0].knob == "max_model_len"
    assert _finding(d, "words-length-blamed").actions[0].value == 20480


# --- the model and the GPUs named in words -----------------------------------------------------


def test_the_model_and_gpu_a_title_names_feed_the_memory_model():
    ctx = Context(_inputs("Llama-3.2-11B-Vision gives OOM error on 96GB H100"))  # vllm#9630
    assert ctx.model_read is not None and "11B-Vision" in ctx.model_read.name
    # a datacenter GPU without a count: a node of 8 assumed, and said in `lacking`
    assert ctx.gpu is not None and ctx.gpu.count == 8 and ctx.gpu.memory_gib == 96
    lacking = diagnose(_inputs("Llama-3.2-11B-Vision gives OOM error on 96GB H100")).lacking
    assert any("model read from the words" in line for line in lacking)
    assert any("a node of 8 is assumed" in line for line in lacking)


def test_a_desktop_card_or_one_said_is_one_gpu():
    # vllm-project/vllm#10797 (title), vllm-project/vllm#15216 (title)
    for log in ("cannot load llama 3.2 3b on a 16gb gpu when gpu_memory_utilisation=1",
                "I used vllm 0.8.0 to deploy whisper-large-v3-turbo . The model is only 1.6G , "
                "and i use a 3060 with 12G."):  # fmt: skip
        ctx = Context(_inputs(log))
        assert ctx.gpu is not None and ctx.gpu.count == 1


def test_a_model_name_written_apart_is_found():
    ctx = Context(_inputs("运行qwen-1.5-72B报错"))  # hiyouga/LLaMA-Factory#5173
    assert ctx.model_read is not None and ctx.model_read.num_attention_heads == 64


def test_the_count_said_beside_the_gpu_is_the_spec_count():
    ctx = Context(_inputs("[Bug]: InternVL3-78B OOM on 4 A100 40G in 0.8.4"))  # vllm#16749
    assert ctx.gpu is not None and (ctx.gpu.count, ctx.gpu.name, ctx.gpu.memory_gib) == (
        4,
        "A100",
        40,
    )


def test_the_command_and_gpus_given_win_over_the_words():
    ctx = Context(_inputs("Llama-3.2-11B-Vision gives OOM error on 96GB H100",
                          "--model Qwen/Qwen2-7B-Instruct", "8xA100:40"))  # fmt: skip
    assert ctx.model_read is not None and "Qwen2-7B" in ctx.model_read.name
    assert ctx.gpu is not None and ctx.gpu.count == 8


def test_names_of_two_models_name_none():
    # vllm-project/vllm#16551: three models served, one of which the table knows
    ctx = Context(_inputs("I used to serve Qwen-QwQ-32b, Qwen2.5-vl-32b-awq and qwen2.5-vl-7b in "
                          "vllm 0.7.2，both of them can load successfully."))  # fmt: skip
    assert ctx.model_read is None


def test_two_kinds_of_gpu_name_none():
    # vllm-project/vllm#17631 (title)
    ctx = Context(_inputs("[Usage]: Getting OOM error while deploying llama 3.3 on A10 & A100"))
    assert ctx.gpu is None


def test_a_total_of_several_gpus_is_not_one_gpus_memory():
    # rhymes-ai/Aria#24: "(96GB VRAM)" is four L4s together; one L4 has 24 GB
    ctx = Context(_inputs("I couldn't get it working on the 4xL4 (96GB VRAM) even adjusting the "
                          "GPU utilisation, sequence length, etc."))  # fmt: skip
    assert ctx.gpu is not None and (ctx.gpu.count, ctx.gpu.name) == (4, "L4")
    assert ctx.gpu.memory_gib < 30


def test_a_count_and_size_in_chinese():
    # QwenLM/Qwen3-VL#518: four 80 GB cards
    ctx = Context(
        _inputs("我用四张80g显卡，使用仓库提供的vllm脚本，但是一直爆显存，始终没法跑起来。")
    )
    assert ctx.gpu is not None and (ctx.gpu.count, ctx.gpu.memory_gib) == (4, 80)


def test_a_real_vllm_error_line_keeps_the_words_out():
    log = (  # vllm-project/vllm#2418 (title), then lm-sys/FastChat#2771's title
        "ValueError: The model's max seq len (4096) is larger than the maximum number of tokens "
        "that can be stored in KV cache (3664). Try increasing `gpu_memory_utilization` or "
        "decreasing `max_model_len` when initializing the engine.\n"
        "vllm not support Yi-34B-Chat"
    )
    ctx = Context(_inputs(log))
    assert ctx.model_read is None and ctx.gpu is None


# --- CUDA-graph capture said to fail -----------------------------------------------------------


def test_a_capture_failure_in_words_lowers_the_budget_first():
    # xencon/aixcl#694: an 8 GB card at 0.8; vLLM's hint before capture names the utilization
    # first, then eager mode, then max_num_seqs
    d = diagnose(_inputs("Error: CUDA graph capture fails during profiling",
                         "--gpu-memory-utilization 0.8 --max-model-len 32768", "1xRTX4060:8"))  # fmt: skip
    top = d.findings[0]
    assert top.id == "words-graph-capture" and top.step == 4
    assert [(a.knob, a.direction) for a in top.actions][:2] == [
        ("gpu_memory_utilization", "lower"),
        ("enforce_eager", "set"),
    ]
    assert ("gpu_memory_utilization", "raise") not in _turns(d)


def test_eager_mode_already_on_is_not_offered_again():
    d = diagnose(_inputs("Error: CUDA graph capture fails during profiling", "--enforce-eager"))
    top = d.findings[0]
    assert top.id == "words-graph-capture"
    assert "enforce_eager" not in {a.knob for a in top.actions}


def test_vllms_own_capture_hint_is_no_failure():
    # V0 model_runner.py's hint, as vllm-project/vllm#11452 pastes it
    line = ("If out-of-memory error occurs during cudagraph capture, consider decreasing "
            "`gpu_memory_utilization` or switching to eager mode.")  # fmt: skip
    assert "words-graph-capture" not in {f.id for f in diagnose(_inputs(line)).findings}
