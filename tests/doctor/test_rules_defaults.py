"""rules_defaults: a start-up memory failure with max_num_seqs left to the release's default
lowers max_num_seqs first, for an encoder-decoder / multimodal model, a release whose
default is large for the GPU, or a stated upgrade that raised the default. Log texts are
real: the OOM line of OpenBMB/MiniCPM-V#640, the mllama frame of vllm-project/vllm#8879,
the line of #612 (tests/fixtures/incidents), vLLM's "No available memory for the cache
blocks" (vllm/v1/core/kv_cache_utils.py, the catalog's example)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.gpu_spec import parse_gpu_spec
from headroom.doctor.model_family import model_family
from headroom.doctor.rules_defaults import FINDING_ID
from headroom.probes.model import shape_from_config
from headroom.vllm_cmd import parse_command

# The start-up profile's OOM: the process holds 18.71 GiB of 22.18, under 0.9 x 22.18.
PROFILE_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total "
    "capacity of 22.18 GiB of which 3.47 GiB is free. Process 8007 has 18.71 GiB memory in use. "
    "Of the allocated memory 18.29 GiB is allocated by PyTorch, and 142.04 MiB is reserved by "
    "PyTorch but unallocated."
)
# Serving: the process holds 22.73 GiB of 23.69, more than its 0.9 budget: KV already exists.
RUNTIME_OOM = (
    "[rank0]: torch.OutOfMemoryError: Error in model execution (input dumped to "
    "/tmp/err_execute_model_input_20241010-154829.pkl): CUDA out of memory. Tried to allocate "
    "2.00 GiB. GPU 0 has a total capacity of 23.69 GiB of which 979.69 MiB is free. Process "
    "115625 has 22.73 GiB memory in use. Of the allocated memory 22.29 GiB is allocated by "
    "PyTorch, and 129.54 MiB is reserved by PyTorch but unallocated."
)
MLLAMA_FRAME = (
    'File "/home/heerak/miniconda3/envs/eval/lib/python3.10/site-packages/vllm/model_executor/'
    'models/mllama.py", line 1084, in forward\n'
    "cross_attention_states = self.vision_model(pixel_values,\n"
)
NO_CACHE = (
    "ERROR 04-27 11:08:32 [core.py:340] ValueError: No available memory for the cache blocks. "
    "Try increasing `gpu_memory_utilization` when initializing the engine."
)
VISION = ["vllm", "serve", "meta-llama/Llama-3.2-11B-Vision-Instruct"]
_MORE_MEMORY = {("gpu_memory_utilization", "raise"), ("max_num_seqs", "raise"),
                ("max_num_batched_tokens", "raise"), ("max_model_len", "raise")}  # fmt: skip


def _diagnose(log: str, argv: list[str] | None = None, **kw):
    command = parse_command(argv) if argv else None
    return diagnose(DoctorInputs(log=log, command=command, **kw)).findings


def _mine(findings):
    return [f for f in findings if f.id == FINDING_ID]


def test_encoder_decoder_oom_lowers_max_num_seqs_to_16_and_goes_eager():
    findings = _diagnose(MLLAMA_FRAME + PROFILE_OOM, VISION)
    top = findings[0]
    assert top.id == FINDING_ID and top.step == 4
    first = top.actions[0]
    assert (first.knob, first.direction, first.value) == ("max_num_seqs", "lower", 16)
    assert ("enforce_eager", "set") in [(a.knob, a.direction) for a in top.actions]
    assert any("encoder-decoder" in line for line in top.evidence)
    # an OOM never gets a knob turned towards more memory, by any finding
    assert not {(a.knob, a.direction) for f in findings for a in f.actions} & _MORE_MEMORY


def test_the_users_own_settings_win():
    assert not _mine(_diagnose(PROFILE_OOM, [*VISION, "--max-num-seqs", "8"]))
    # a utilization raised above the default is the first suspect (rules_oom's answer)
    assert not _mine(_diagnose(PROFILE_OOM, [*VISION, "--gpu-memory-utilization", "0.98"]))


def test_a_text_model_on_an_unknown_release_is_not_this_family():
    assert not _mine(_diagnose(PROFILE_OOM, ["vllm", "serve", "meta-llama/Llama-3.1-8B"]))


def test_an_oom_after_the_kv_cache_exists_is_not_the_profile():
    assert not _mine(_diagnose(RUNTIME_OOM, VISION))


def test_multimodal_architecture_from_the_config_on_a_small_gpu():
    config = {"architectures": ["Qwen2VLForConditionalGeneration"], "hidden_size": 3584,
              "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
              "vocab_size": 152064, "vision_config": {"depth": 32}}  # fmt: skip
    shape = shape_from_config(config, "Qwen2-VL-7B")
    findings = _diagnose(PROFILE_OOM, model=shape, gpu_spec=parse_gpu_spec("1xA10"))
    top = findings[0]
    assert top.id == FINDING_ID
    # newest release on a 24 GiB GPU: 256 by default, a quarter of it
    assert (top.actions[0].knob, top.actions[0].value) == ("max_num_seqs", 64)


def test_no_kv_memory_on_a_release_that_applied_1024_on_a_24_gib_gpu():
    """vllm-project/vllm#17238's shape: V1 0.8.1 gave a 24 GiB GPU 1024 sequences (vLLM put
    256 back below 70 GiB, PR #16158): fewer sequences first, the KV budget raise next."""
    argv = ["vllm", "serve", "Qwen2.5-32B-Instruct-INT8-W8A16", "--tensor-parallel-size", "2",
            "--max-model-len", "4096", "--enforce-eager"]  # fmt: skip
    findings = _diagnose(NO_CACHE, argv, vllm_version="0.8.1", gpu_spec=parse_gpu_spec("2xRTX3090"))
    top = findings[0]
    assert top.id == FINDING_ID
    turns = [(a.knob, a.direction, a.value) for a in top.actions]
    assert turns[0] == ("max_num_seqs", "lower", 256)
    assert ("gpu_memory_utilization", "raise") in [(k, d) for k, d, _ in turns]
    # the same release on an 80 GiB GPU applied 1024 on purpose: not this family
    big = _diagnose(NO_CACHE, argv, vllm_version="0.8.1", gpu_spec=parse_gpu_spec("2xH100"))
    assert not _mine(big)


def test_a_stated_upgrade_names_the_defaults_that_changed():
    log = "works with vllm 0.7.2, OOM after upgrading to 0.8.3\n" + PROFILE_OOM
    top = _diagnose(log, ["vllm", "serve", "some-org/some-text-model"])[0]
    assert top.id == FINDING_ID and top.actions[0].value == 256
    assert any("default max_num_seqs 256 in 0.7.2 -> 1024 in 0.8.3" in e for e in top.evidence)


def test_model_family_sources():
    class Ctx:
        def __init__(self, lines, name=None, shape=None):
            self.raw_lines, self.model_read = lines, shape
            self.inputs = DoctorInputs(
                command=parse_command(["vllm", "serve", name]) if name else None
            )
            self.facts = None

    assert model_family(Ctx(MLLAMA_FRAME.splitlines())).encoder_decoder
    assert model_family(Ctx(["Llama-3.2-11B-Vision gives OOM error on 96GB H100"])).encoder_decoder
    qwen_vl = model_family(Ctx([], "Qwen/Qwen2.5-VL-7B-Instruct"))
    assert qwen_vl.multimodal and not qwen_vl.encoder_decoder
    for text_only in ("meta-llama/Llama-3.1-8B", "google/gemma-3-1b-it", "Qwen/Qwen2.5-7B"):
        assert model_family(Ctx([], text_only)) is None
    frame = 'File "/x/vllm/model_executor/models/llama.py", line 3, in forward'
    assert model_family(Ctx([frame])) is None


# vLLM's V1 profile line (gpu_model_runner.profile_run, 0.7.3-0.33.0), as printed in a public
# log found with the search tool (a Qwen2.5-VL server, 09-25): 31 items under an 8192 budget.
ENCODER_31 = (
    "(EngineCore_DP0 pid=278) INFO 09-25 13:39:07 [gpu_model_runner.py:3269] Encoder cache will "
    "be initialized with a budget of 8192 tokens, and profiled with 31 image items of the "
    "maximum feature size.\n"
)


def test_the_encoder_profile_line_says_multimodal_and_which_budget_bound_it():
    findings = _diagnose(ENCODER_31 + PROFILE_OOM, gpu_spec=parse_gpu_spec("1xA10"))
    top = findings[0]
    assert top.id == FINDING_ID
    turns = [(a.knob, a.direction) for a in top.actions]
    assert turns[0] == ("max_num_seqs", "lower")
    # 31 items < 256 sequences: the batched-token (encoder) budget set them
    assert ("max_num_batched_tokens", "lower") in turns
    assert any("31 dummy image items" in e for e in top.evidence)


def test_a_paste_that_stops_in_an_encoder_decoder_forward_is_a_conditional_hint():
    """vllm-project/vllm#8879: only the frame through mllama's vision model was pasted."""
    findings = _diagnose(MLLAMA_FRAME)
    top = findings[0]
    assert top.id == f"{FINDING_ID}-encoder-trace" and top.severity == "warning"
    assert (top.actions[0].knob, top.actions[0].value) == ("max_num_seqs", 16)
    assert top.title.startswith("The log stops inside mllama") and "if it ran out" in top.title
    # a frame in a text model's code, or a real error line, is not this hint
    llama = MLLAMA_FRAME.replace("mllama.py", "llama.py")
    assert not any(f.id.endswith("encoder-trace") for f in _diagnose(llama))
    # with the error line there, the error is read instead of guessed
    with_error = _diagnose(MLLAMA_FRAME + PROFILE_OOM)
    assert not any(f.id.endswith("encoder-trace") for f in with_error)


def test_an_upgrade_that_grew_other_defaults_turns_each_back_the_ooms_way():
    """No max_num_seqs change on this 22 GiB GPU (0.8.5 gives it 256, as V0 did): the rest
    of what grew is named and turned back, never towards more memory."""
    log = "works with vllm 0.7.3, OOM after upgrading to 0.8.5\n" + PROFILE_OOM
    findings = _diagnose(log, ["vllm", "serve", "some-org/some-text-model"])
    # a warning beside the OOM's own finding: a failing upgrade may as well be a bug
    (grew,) = [f for f in findings if f.id == "release-default-changed"]
    assert grew.severity == "warning"
    # --enforce-eager is already the OOM finding's action: said once, pointed to here
    assert not grew.actions and any("set enforce_eager: see" in e for e in grew.evidence)
    assert any("CUDA graphs captured up to batch 512" in e for e in grew.evidence)
    later = _diagnose("fine on 0.11.0, OOM after upgrading to 0.20.0\n" + PROFILE_OOM)
    (util,) = [f for f in later if f.id == "release-default-changed"]
    assert "0.9 -> 0.92" in util.evidence[-1]
    assert (util.actions[0].knob, util.actions[0].direction) == ("gpu_memory_utilization", "lower")
    # a utilization the user set is theirs; a downgrade is not a default that grew
    mine = _diagnose(log, ["vllm", "serve", "m", "--enforce-eager"])
    assert not any(f.id == "release-default-changed" for f in mine)
    down = _diagnose("ok in 0.20.0, OOM on 0.11.0\n" + PROFILE_OOM)
    assert not any(f.id == "release-default-changed" for f in down)
    for f in findings:
        assert not {(a.knob, a.direction) for a in f.actions} & _MORE_MEMORY


@given(st.lists(st.text(max_size=200), max_size=6))
def test_model_family_never_raises_on_any_text(lines):
    class Ctx:
        raw_lines, model_read, facts = lines, None, None
        inputs = DoctorInputs()

    found = model_family(Ctx())
    assert found is None or found.multimodal


def test_words_that_hold_a_model_name_are_not_one():
    class Ctx:
        model_read, facts, inputs = None, None, DoctorInputs()
        raw_lines = ["provisioning the --revision of a television model OOM"]

    assert model_family(Ctx()) is None


def test_the_kv_cache_bounds_the_target(monkeypatch):
    """More sequences than KV blocks can never run at once: a smaller KV cache lowers the
    table's target to its block count."""
    from headroom.doctor import rules_defaults

    monkeypatch.setattr(rules_defaults, "_kv_blocks", lambda ctx: 40)
    config = {"architectures": ["Qwen2VLForConditionalGeneration"], "hidden_size": 3584,
              "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
              "vocab_size": 152064}  # fmt: skip
    shape = shape_from_config(config, "Qwen2-VL-7B")
    top = _diagnose(PROFILE_OOM, model=shape, gpu_spec=parse_gpu_spec("1xA10"))[0]
    assert (top.actions[0].knob, top.actions[0].value) == ("max_num_seqs", 40)
    assert any("about 40 blocks" in e for e in top.evidence)


def test_whisper_is_encoder_decoder_on_v0_only_until_v1_took_it_over():
    """vllm-project/vllm#15216's words: Whisper on 0.8.0 ran on V0's encoder-decoder runner
    (SupportsV0Only until 0.10.2): 16. On the newest release V1 runs it: a multimodal model."""
    title = "I used vllm 0.8.0 to deploy whisper-large-v3-turbo . The model is only 1.6G\n"
    gpu = parse_gpu_spec("1xRTX3060:12")
    old = _diagnose(title + PROFILE_OOM, gpu_spec=gpu)[0]
    assert old.id == FINDING_ID and old.actions[0].value == 16
    new = _diagnose(title.replace("vllm 0.8.0", "vllm") + PROFILE_OOM, gpu_spec=gpu)[0]
    assert new.id == FINDING_ID and new.actions[0].value == 64
    assert not any("encoder-decoder" in e for e in new.evidence)


# vLLM's own text (v1/worker/gpu_model_runner.py _dummy_sampler_run, the catalog's example).
SAMPLER_OOM = (
    "RuntimeError: CUDA out of memory occurred when warming up sampler with 1024 dummy "
    "requests. Please try lowering `max_num_seqs` or `gpu_memory_utilization` when "
    "initializing the engine."
)


def test_a_sampler_warmup_oom_with_the_default_goes_back_to_v0s_256():
    top = _diagnose(SAMPLER_OOM, ["vllm", "serve", "some-org/m"])[0]
    assert top.id == "cuda-oom-sampler"
    assert (top.actions[0].knob, top.actions[0].value) == ("max_num_seqs", 256)
    assert any("default 1024 applied" in e for e in top.evidence)
    # set by the user: theirs, halved
    own = _diagnose(SAMPLER_OOM, ["vllm", "serve", "some-org/m", "--max-num-seqs", "1024"])[0]
    assert (own.actions[0].knob, own.actions[0].value) == ("max_num_seqs", 512)


def test_throughput_mode_doubles_the_default_on_0_32_and_later():
    argv = ["vllm", "serve", "some-org/m", "--performance-mode", "throughput"]
    top = _diagnose(PROFILE_OOM, argv, vllm_version="0.33.0", gpu_spec=parse_gpu_spec("1xA10"))[0]
    assert top.id == FINDING_ID and top.actions[0].value == 256
    assert any("doubled the default to 512" in e for e in top.evidence)
    # the balanced default on the same GPU (256) is not large: not this family
    plain = _diagnose(
        PROFILE_OOM, argv[:3], vllm_version="0.33.0", gpu_spec=parse_gpu_spec("1xA10")
    )
    assert not _mine(plain)
