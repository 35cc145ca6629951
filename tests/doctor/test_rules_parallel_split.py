"""vLLM's bare divide() assertion: a size split over TP after the heads check passed.

The texts are vLLM's own: `ensure_divisibility` (vllm/distributed/utils.py, 0.2.7-0.25.1)
asserts with "{} is not divisible by {}".format(numerator, denominator); the titles of
vllm#24004 ("AssertionError: 12 is not divisible by 8", GLM-4.5V at TP 8) and vllm#8097
("AssertionError: 25 is not divisible by 4", InternVL2-26B at TP 4) carry it verbatim.
QKVParallelLinear (model_executor/layers/linear.py) calls divide(total_num_kv_heads, tp)
and, for TP above the KV heads, divide(tp, total_num_kv_heads)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.doctor.rules_parallel_split import safe_tps
from headroom.doctor.vision_towers import data_mode_available, tower_for
from headroom.vllm_cmd import parse_command


def _top(log: str, argv: list[str] | None = None, gpus: str | None = None, version=None):
    d = diagnose(
        DoctorInputs(
            log=log,
            command=parse_command(argv) if argv else None,
            gpu_spec=parse_gpu_spec(gpus) if gpus else None,
            vllm_version=version,
        )
    )
    return d.findings[0]


def _turns(finding) -> dict[str, tuple[str, object]]:
    return {a.knob: (a.direction, a.value) for a in finding.actions}


def test_glm_vision_heads_lower_tp_to_a_divisor_of_both_and_keep_the_gpus_as_pp():
    # 12 vision heads, TP 8: TP 6 divides 12 but not the language model's 8 KV heads; only a
    # divisor of 8 is known to pass the heads check, so TP 4, and PP 2 keeps the 8 GPUs.
    top = _top("AssertionError: 12 is not divisible by 8", ["vllm", "serve", "zai-org/GLM-4.5V",
               "--tensor-parallel-size", "8"], "8xH100")  # fmt: skip
    turns = _turns(top)
    assert top.step == 2 and top.actions[0].knob == "tensor_parallel_size"
    assert turns["tensor_parallel_size"] == ("lower", 4)
    assert turns["pipeline_parallel_size"] == ("raise", 2)
    assert "GLM-4.1V/4.5V" in top.title


def test_the_encoders_data_mode_is_offered_only_where_the_release_has_it():
    argv = ["vllm", "serve", "zai-org/GLM-4.5V", "-tp", "8"]
    log = "AssertionError: 12 is not divisible by 8"
    assert "mm_encoder_tp_mode" in _turns(_top(log, argv, version="0.10.2"))
    assert "mm_encoder_tp_mode" not in _turns(_top(log, argv, version="0.10.1.1"))


def test_internvits_25_heads_are_an_upgrade_not_a_knob():
    # No release splits InternViT-6B's heads over a TP that does not divide them: 0.5.5 ran
    # them unsplit, 0.6.0 falls back to SDPA (intern_vit.py _init_attn); vllm#8097 / #8061.
    for argv in (
        ["--tensor-parallel-size", "4"],
        ["--model", "OpenGVLab/InternVL2-26B", "-tp", "4"],
    ):
        top = _top("AssertionError: 25 is not divisible by 4", argv, "8xA10")
        assert top.id == "vision-heads-split-fixed" and top.step is None
        assert not [a for a in top.actions if a.knob]


def test_25_from_a_model_that_is_not_internvl_is_a_size_to_divide():
    top = _top(
        "AssertionError: 25 is not divisible by 4", ["--model", "/models/custom", "-tp", "4"]
    )
    assert top.id == "tp-heads-not-divisible"
    assert _turns(top)["tensor_parallel_size"] == ("lower", 1)


def test_kv_heads_with_the_model_known_are_searched_against_the_weights():
    # InternLM2-20B: 48 heads pass TP 6, its 8 KV heads do not; the search proposes a TP that
    # divides both and holds the weights (TP 4, the largest of 1, 2, 4 on six 80 GB GPUs).
    top = _top("AssertionError: 8 is not divisible by 6",
               ["vllm", "serve", "internlm/internlm2-chat-20b", "-tp", "6"], "6xA100-80GB")  # fmt: skip
    assert _turns(top)["tensor_parallel_size"] == ("lower", 4)
    assert any("checked" in e for e in top.evidence)


def test_the_replication_puts_the_tp_first():
    # TP 6 above 4 KV heads: divide(6, 4). A TP below 6 that divides 6 and 4: 2 (x PP 3).
    top = _top("AssertionError: 6 is not divisible by 4", ["--model", "/m", "-tp", "6"])
    turns = _turns(top)
    assert turns["tensor_parallel_size"] == ("lower", 2)
    assert turns["pipeline_parallel_size"] == ("raise", 3)
    assert "replicates" in " ".join(top.evidence)


def test_no_pp_is_proposed_on_a_release_without_it():
    top = _top("AssertionError: 12 is not divisible by 8", ["--model", "/m", "-tp", "8"],
               version="0.4.3")  # fmt: skip
    turns = _turns(top)
    assert turns["tensor_parallel_size"] == ("lower", 4) and "pipeline_parallel_size" not in turns


def test_the_tp_is_read_from_the_assertion_without_a_command_line():
    top = _top("AssertionError: 12 is not divisible by 8")
    assert _turns(top)["tensor_parallel_size"] == ("lower", 4)


def test_towers_are_named_by_the_model_or_a_frame_only():
    assert tower_for(12, model_name="zai-org/GLM-4.5V", architecture=None).heads == 12
    assert tower_for(16, model_name=None, architecture="Qwen2_5_VLForConditionalGeneration")
    assert tower_for(16, model_name=None, architecture=None) is None  # 16 is too common
    frame = '  File "/usr/lib/python3/site-packages/vllm/model_executor/models/glm4_1v.py", line 9'
    assert tower_for(12, model_name="/models/x", architecture=None, frames=frame) is not None
    assert tower_for(25, model_name="gpt2-xl", architecture=None) is None
    qwen2_vl = tower_for(16, model_name="Qwen/Qwen2-VL-7B-Instruct", architecture=None)
    assert qwen2_vl is not None and not data_mode_available(qwen2_vl, "0.10.2")
    assert data_mode_available(qwen2_vl, "0.12.0")


@given(st.integers(1, 256), st.integers(2, 64), st.booleans())
def test_safe_tps_divide_the_tp_and_pass_the_split(count, tp, replication):
    for t in safe_tps(count, tp, replication):
        assert 1 <= t < tp and tp % t == 0
        assert (count % t == 0 or t % count == 0) if replication else count % t == 0
    assert 1 in safe_tps(count, tp, replication)  # TP 1 always passes


# 0.25.1's frames for GLM-4.xV's vision attention: glm4_1v.py:289 calls dist_utils.divide
# (distributed/utils.py:63 -> ensure_divisibility's assert at :55).
GLM_TRACE = """\
  File "/usr/local/lib/python3.12/dist-packages/vllm/model_executor/models/glm4_1v.py", line 289, in __init__
    self.num_attention_heads_per_partition = dist_utils.divide(
  File "/usr/local/lib/python3.12/dist-packages/vllm/distributed/utils.py", line 63, in divide
    ensure_divisibility(numerator, denominator)
  File "/usr/local/lib/python3.12/dist-packages/vllm/distributed/utils.py", line 55, in ensure_divisibility
    assert numerator % denominator == 0, "{} is not divisible by {}".format(
AssertionError: 12 is not divisible by 8"""


def test_the_tracebacks_model_file_names_the_encoder_of_an_unnamed_checkpoint():
    top = _top(GLM_TRACE, ["vllm", "serve", "/models/glm", "-tp", "8"], "8xH100")
    assert "GLM-4.1V/4.5V" in top.title
    assert _turns(top)["tensor_parallel_size"] == ("lower", 4)


def test_a_bare_heads_assert_the_language_model_passes_names_another_part_and_no_same_tp():
    # "assert self.total_num_heads % tp_size == 0" (models/*.py); Qwen2.5-7B's 28 heads and
    # 4 KV heads pass TP 4, so the refused heads are another part's: no TP value to guess.
    log = "    assert self.total_num_heads % tp_size == 0\nAssertionError"
    top = _top(log, ["vllm", "serve", "Qwen/Qwen2.5-7B-Instruct", "-tp", "4"], "4xRTX4090")
    assert top.id == "tp-heads-not-divisible"
    assert _turns(top)["tensor_parallel_size"] == ("set", None)
    assert any("another part" in e for e in top.evidence)


def test_a_bare_heads_assert_without_the_model_guesses_no_encoder():
    top = _top(
        "    assert self.total_num_heads % tp_size == 0\nAssertionError",
        ["--model", "/m", "-tp", "4"],
    )
    assert top.id == "tp-heads-not-divisible" and "InternViT" not in top.title


def test_before_any_log_a_named_encoder_whose_heads_tp_does_not_divide_is_refused():
    # GLM-4.5V at TP 8 (vllm#24004's command): the same answer as the assertion it would print.
    d = diagnose(
        DoctorInputs(command=parse_command(["vllm", "serve", "zai-org/GLM-4.5V", "-tp", "8"]))
    )
    top = d.findings[0]
    assert top.id == "tp-heads-not-divisible" and _turns(top)["tensor_parallel_size"] == (
        "lower",
        4,
    )
    for argv in (["vllm", "serve", "zai-org/GLM-4.5V", "-tp", "8", "--mm-encoder-tp-mode", "data"],
                 ["vllm", "serve", "zai-org/GLM-4.5V", "-tp", "4"],
                 ["vllm", "serve", "OpenGVLab/InternVL2-26B", "-tp", "4"]):  # fmt: skip
        found = diagnose(DoctorInputs(command=parse_command(argv))).findings
        assert "tp-heads-not-divisible" not in {f.id for f in found}, argv
