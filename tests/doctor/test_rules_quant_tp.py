"""Quantized weights a TP splits off their groups (headroom/doctor/rules_quant_tp.py).

Texts: vllm#13640 ("Weight input_size_per_partition = 14784 is not divisible by min_thread_k =
128. Consider reducing tensor_parallel_size or running with --quantization gptq.",
Qwen2.5-VL-72B-Instruct-AWQ at TP 2, vLLM 0.7.2), vllm#17569 ("The output_size of gate's and
up's weight = 192 is not divisible by weight quantization block_n = 128.", Qwen3-235B-A22B-FP8
at TP 8: 1536 / 8), QwenLM/Qwen3#360 (AWQ/GPTQ's "The input size is not aligned with the
quantized weight shape. This can be caused by too large tensor parallel size." for a
Qwen1.5-14B GPTQ checkpoint, whose MLP width 13696 is 107 groups of 128: "a historical issue
for the 14B models due to its intermediate size"), and the catalog's examples."""

from __future__ import annotations

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.probes.model import shape_from_config
from headroom.probes.vllm_catalog import SIGNATURES
from headroom.vllm_cmd import parse_command

BY_ID = {s.id: s for s in SIGNATURES}
MARLIN_K = (
    "ValueError: Weight input_size_per_partition = 14784 is not divisible by min_thread_k = 128. "
    "Consider reducing tensor_parallel_size or running with --quantization gptq."
)
FP8_MOE = (
    "ValueError: The output_size of gate's and up's weight = 192 is not divisible by weight "
    "quantization block_n = 128."
)
AWQ = (
    "ValueError: The input size is not aligned with the quantized weight shape. This can be "
    "caused by too large tensor parallel size."
)
# Qwen1.5-14B-Chat's config.json (hidden 5120, MLP 13696, 40 heads, 40 layers) as a GPTQ
# checkpoint with group_size 128 (the Qwen1.5 GPTQ releases' quantize_config).
QWEN15_14B_GPTQ = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 5120,
    "intermediate_size": 13696, "num_attention_heads": 40, "num_key_value_heads": 40,
    "num_hidden_layers": 40, "vocab_size": 152064, "max_position_embeddings": 32768,
    "torch_dtype": "float16",
    "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 128},
}  # fmt: skip


def _finding(log, argv=None, gpus=None, version=None, model=None):
    d = diagnose(
        DoctorInputs(
            log=log,
            command=parse_command(argv) if argv else None,
            gpu_spec=parse_gpu_spec(gpus) if gpus else None,
            vllm_version=version,
            model=model,
        )
    )
    found = {f.id: f for f in d.findings}
    assert "quantized-tp-split" in found, [f.id for f in d.findings]
    return found["quantized-tp-split"], d


def _turns(finding) -> list[tuple[str, str, object]]:
    return [(a.knob, a.direction, a.value) for a in finding.actions]


def test_231_groups_leave_only_tp_1_and_pp_keeps_the_two_gpus():
    # 14784 x 2 = 29568 = 231 x 128: no TP of 2, 4 or 8 divides 231.
    f, d = _finding(MARLIN_K, ["--model", "Qwen/Qwen2.5-VL-72B-Instruct-AWQ", "-tp", "2"], "2xA800")
    turns = _turns(f)
    assert turns[0] == ("tensor_parallel_size", "lower", 1)
    assert ("pipeline_parallel_size", "raise", 2) in turns
    assert ("quantization", "set", "awq") in turns  # the AWQ checkpoint's plain kernel
    assert any("231 groups" in e for e in f.evidence)
    assert d.findings[0].id == "quantized-tp-split"


def test_a_divisor_of_the_tp_in_use_not_a_tp_the_heads_may_not_take():
    # The catalog's text: 1792 x 8 = 14336 = 112 groups of 128; 7 divides 112 but almost no
    # model's heads divide by both 8 and 7, so the answer is 4 (a divisor of 8 and of 112).
    text = BY_ID["quantized_shard_not_divisible"].examples[0]
    f, _ = _finding(text, ["vllm", "serve", "m-gptq", "-tp", "8"])
    assert f.step == 2 and _turns(f)[0] == ("tensor_parallel_size", "lower", 4)
    assert ("quantization", "set", "gptq") in _turns(f)


def test_the_models_heads_bound_the_split_when_the_shape_is_known():
    text = BY_ID["quantized_shard_not_divisible"].examples[0]
    f, _ = _finding(text, ["vllm", "serve", "meta-llama/Llama-3.1-70B-Instruct", "-tp", "8"])
    tp = _turns(f)[0]
    assert tp[:2] == ("tensor_parallel_size", "lower") and 64 % tp[2] == 0 and 8 % tp[2] == 0


def test_a_moe_block_split_lowers_tp_or_keeps_it_with_expert_parallel():
    # Qwen3-30B-A3B-FP8 at TP 4 (vllm#25292's title): 768 / 4 = 192, 6 blocks of 128 -> TP 2.
    f, _ = _finding(FP8_MOE, ["vllm", "serve", "Qwen/Qwen3-30B-A3B-FP8", "-tp", "4"])
    turns = _turns(f)
    assert turns[0][:3] == ("tensor_parallel_size", "lower", 2)
    assert ("enable_expert_parallel", "set", True) in turns


def test_the_235b_moe_is_searched_against_the_weights_on_its_gpus():
    # 8 x RTX 5090 (vllm#17569's GPUs): TP 4 alone cannot hold ~219 GiB of fp8 weights; the
    # layout search keeps the 8 GPUs (TP 4 x PP 2) or expert parallelism keeps TP 8.
    f, _ = _finding(FP8_MOE, ["vllm", "serve", "Qwen/Qwen3-235B-A22B-FP8", "-tp", "8"], "8xRTX5090")
    turns = {t[0]: t for t in _turns(f)}
    assert ("enable_expert_parallel", "set", True) == turns["enable_expert_parallel"]
    tp = turns.get("tensor_parallel_size")
    assert tp is None or (tp[1] == "lower" and 12 % tp[2] == 0)
    assert not any(t[1] == "raise" and t[0] == "tensor_parallel_size" for t in _turns(f))


def test_expert_parallel_only_where_the_release_has_it():
    argv = ["vllm", "serve", "Qwen/Qwen3-30B-A3B-FP8", "-tp", "4"]
    old, _ = _finding(FP8_MOE, argv, version="0.7.3")
    assert "enable_expert_parallel" not in {t[0] for t in _turns(old)}
    on, _ = _finding(FP8_MOE, [*argv, "--enable-expert-parallel"], version="0.8.5")
    assert "enable_expert_parallel" not in {t[0] for t in _turns(on)}


def test_awqs_text_reads_the_groups_from_the_config():
    # 13696 / 128 = 107, a prime: no TP above 1 loads this checkpoint (QwenLM/Qwen3#360).
    model = shape_from_config(QWEN15_14B_GPTQ, "qwen1.5-14b-chat-gptq")
    f, _ = _finding(AWQ, ["--model", "/models/qwen1.5-14b-chat-gptq", "-tp", "2"], model=model)
    assert _turns(f)[0] == ("tensor_parallel_size", "lower", 1)
    assert any("107 groups" in e for e in f.evidence)


def test_awqs_text_without_numbers_or_config_halves_tp_and_keeps_the_gpus():
    f, _ = _finding(AWQ, ["vllm", "serve", "m-awq", "-tp", "4"])
    assert _turns(f) == [
        ("tensor_parallel_size", "lower", 2),
        ("pipeline_parallel_size", "raise", 2),
    ]


def test_a_shape_no_tp_divides_wants_the_plain_kernel():
    # 1848 x 4 = 7392 is not a multiple of 64: Marlin cannot run it at TP 1 either.
    text = BY_ID["quantized_shard_not_divisible"].examples[1]
    f, _ = _finding(text, ["vllm", "serve", "m-gptq", "-tp", "4"])
    assert _turns(f) == [("quantization", "set", "gptq")]


def test_without_the_tp_the_split_is_named_and_no_knob_turned():
    """No command line: no TP to count a smaller one from."""
    f, _ = _finding(BY_ID["quantized_shard_not_divisible"].examples[1])
    assert f.actions == () and any("smaller TP" in e for e in f.evidence)


def test_no_tp_is_ever_raised_for_a_split():
    for text in (MARLIN_K, FP8_MOE, AWQ):
        for tp in ("2", "3", "4", "6", "8"):
            _, d = _finding(text, ["vllm", "serve", "m", "-tp", tp])
            for finding in d.findings:
                for a in finding.actions:
                    assert not (a.knob == "tensor_parallel_size" and a.direction == "raise")


# --- before any log: the checkpoint's config says it (rules_quant_preflight) ---------------------
# Qwen2.5-VL-72B-Instruct-AWQ's text config (vllm#13640, QwenLM/Qwen3-VL#231: "intermediate_size
# 29568 / group 128 = 231, not divisible by 2, 4 or 8"); Qwen2.5-72B-Instruct-AWQ pads it to 29696.
QWEN25_72B_AWQ = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 8192,
    "intermediate_size": 29696, "num_attention_heads": 64, "num_key_value_heads": 8,
    "num_hidden_layers": 80, "vocab_size": 152064, "max_position_embeddings": 32768,
    "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128, "version": "gemm",
                            "zero_point": True},
}  # fmt: skip
# Qwen3-30B-A3B-FP8's config.json: 48 layers of 128 experts of width 768, fp8 blocks [128, 128].
QWEN3_30B_FP8 = {
    "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 2048,
    "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts": 128,
    "num_experts_per_tok": 8, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
    "num_hidden_layers": 48, "vocab_size": 151936, "max_position_embeddings": 40960,
    "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                            "weight_block_size": [128, 128]},
}  # fmt: skip


def _preflight(config, name, tp, extra=()):
    model = shape_from_config(config, name)
    argv = ["vllm", "serve", f"/models/{name}", "-tp", str(tp), *extra]
    d = diagnose(DoctorInputs(command=parse_command(argv), model=model))
    return {f.id: f for f in d.findings}.get("quantized-tp-split")


def test_a_config_whose_mlp_tp_splits_off_its_groups_is_refused_before_start():
    unpadded = dict(QWEN25_72B_AWQ, intermediate_size=29568)
    f = _preflight(unpadded, "qwen2.5-vl-72b-awq-text", 4)
    assert f is not None and f.step == 2
    assert _turns(f)[0] == ("tensor_parallel_size", "lower", 1)
    assert _preflight(QWEN25_72B_AWQ, "qwen2.5-72b-instruct-awq", 8) is None  # 29696: 232 groups


def test_fp8_blocks_of_the_experts_and_expert_parallel_keeping_them_whole():
    f = _preflight(QWEN3_30B_FP8, "qwen3-30b-a3b-fp8", 8)  # 768 / 8 = 96 < a block of 128
    assert f is not None and _turns(f)[0][:2] == ("tensor_parallel_size", "lower")
    assert 6 % _turns(f)[0][2] == 0  # 768 = 6 blocks: TP 2 (or 1)
    assert _preflight(QWEN3_30B_FP8, "qwen3-30b-a3b-fp8", 2) is None
    assert _preflight(QWEN3_30B_FP8, "qwen3-30b-a3b-fp8", 8, ("--enable-expert-parallel",)) is None


def test_a_table_shape_says_nothing_before_start():
    d = diagnose(
        DoctorInputs(command=parse_command(["vllm", "serve", "Qwen/Qwen3-30B-A3B-FP8", "-tp", "8"]))
    )
    assert "quantized-tp-split" not in {f.id for f in d.findings}
