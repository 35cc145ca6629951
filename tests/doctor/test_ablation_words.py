"""The words rules read a sentence however a thread wrapped it, and eager mode removed in
words says it was on (scripts/incident_ablation.py's wrap80_words and no_command flips).

Texts, each a training thread's own: zai-org/GLM-V#165's body ("While using vLLM versions
0.10.*, I encountered the problem that the memory of my GPUs is rapidly clogging up during
inference."), Project-MONAI/VLM-Surgical-Agent-Framework#5's body (the slow A6000 sentence),
ai-dynamo/dynamo#2109's title ("fix: rm enforce eager from vllm deploy - prefer perf over pod
launch time") and opea-project/GenAIComps#954's ("Remove enforce-eager to enable HPU graphs
for better vLLM perf"). The wraps are Python's textwrap at 80 columns, as an editor breaks.
"""

from __future__ import annotations

import textwrap

from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.doctor import DoctorInputs, diagnose
from headroom.probes.prose_lines import rejoined_prose
from headroom.vllm_cmd import parse_command

GLM_LEAK = (
    "While using vLLM versions 0.10.*, I encountered the problem that the memory of my GPUs "
    "is rapidly clogging up during inference."
)
MONAI_SLOW = (
    "However, this disables the [cuda graph acceleration](https://pytorch.org/blog/"
    "accelerating-pytorch-with-cuda-graphs/), and as a result, the token generation on A6000 "
    "(Holoscan IGX, arm64) is very slow (11.2 tokes/s)"
)
DYNAMO_TITLE = "fix: rm enforce eager from vllm deploy - prefer perf over pod launch time"
GENAICOMPS_TITLE = "Remove enforce-eager to enable HPU graphs for better vLLM perf"
# tests/fixtures/gpu-startup-logs: a V0 start-up line and a PyTorch OOM line, which no
# wrapped sentence may swallow.
INFO_LINE = "INFO 11-11 14:17:08 selector.py:135] Using Flash Attention backend."
OOM_LINE = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB."


def _top(log: str, **inputs):
    findings = diagnose(DoctorInputs(log=log + "\n", **inputs)).findings
    return findings[0] if findings else None


def _wrapped(text: str) -> str:
    wrapped = "\n".join(textwrap.wrap(text, 80))
    assert "\n" in wrapped
    return wrapped


def test_a_leak_said_over_two_lines_is_still_a_leak_on_v1():
    for text in (GLM_LEAK, _wrapped(GLM_LEAK)):
        top = _top(text, vllm_version="0.10")
        assert top is not None and top.id == "v1-words-hang-or-leak"
        assert (top.actions[0].knob, top.actions[0].value) == ("VLLM_USE_V1", "0")


def test_slow_decoding_said_over_four_lines_is_still_read_under_eager():
    command = parse_command(["vllm", "serve", "some-org/some-model", "--enforce-eager"])
    for text in (MONAI_SLOW, _wrapped(MONAI_SLOW)):
        top = _top(text, command=command)
        assert top is not None and top.id == "eager-slows-decoding"
        assert (top.actions[0].knob, top.actions[0].direction) == ("enforce_eager", "unset")


def test_words_that_remove_eager_mode_say_it_was_on():
    for title in (DYNAMO_TITLE, GENAICOMPS_TITLE):
        top = _top(title)
        assert top is not None and top.id == "eager-slows-decoding", title
        assert top.actions[0].direction == "unset"


def test_a_command_line_without_the_flag_outweighs_the_words():
    command = parse_command(["vllm", "serve", "some-org/some-model"])
    top = _top(DYNAMO_TITLE, command=command)
    assert top is None or top.id != "eager-slows-decoding"


def test_slowness_without_the_flag_anywhere_is_not_eager_modes():
    top = _top(_wrapped(MONAI_SLOW))  # the words say "this disables", never which flag
    assert top is None or top.id != "eager-slows-decoding"


def test_rejoined_prose_joins_a_wrapped_sentence_and_nothing_else():
    lines = _wrapped(GLM_LEAK).split("\n")
    assert rejoined_prose(lines) == [GLM_LEAK]
    assert rejoined_prose([INFO_LINE, "the rest of a line"]) == [INFO_LINE, "the rest of a line"]
    # a sentence that ended, a short title line, and an exception are their own entries
    kept = [GLM_LEAK, "memory grows", "Memory leak then i use vLLM", OOM_LINE]
    assert rejoined_prose(kept) == kept
    cut = [GLM_LEAK[:70], OOM_LINE]
    assert rejoined_prose(cut) == cut


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=120), max_size=20))
def test_rejoined_prose_never_raises_and_keeps_every_word_in_order(lines):
    lines = [x.replace("\n", " ").replace("\r", " ") for x in lines]
    out = rejoined_prose(lines)
    assert len(out) <= len(lines)
    assert " ".join(out).split() == " ".join(lines).split()


# vllm-project/vllm#7996's title (V0's merge of image embeddings, vllm/model_executor/models/
# utils.py merge_multimodal_embeddings) and zai-org/GLM-V#165's, each retyped in lower case
# as the ablation's words_lower variant does.
# xorbitsai/inference#2440's title: V0's KV refusal as vLLM prints it.
KV_TITLE = (
    "The model's max seq len (131072) is larger than the maximum number of tokens that can be "
    "stored in KV cache (53376)."
)
MM_TITLE = "Attempted to assign 7 x 256 = 1792 multimodal tokens to 506 placeholders"


def test_a_title_in_lower_case_keeps_its_answer():
    for text in (MM_TITLE, MM_TITLE.lower()):
        top = _top(text)
        assert top is not None and top.actions[0].knob == "max_num_batched_tokens", text
    for text in (GLM_LEAK, GLM_LEAK.lower()):
        top = _top(text, vllm_version="0.10")
        assert top is not None and top.id == "v1-words-hang-or-leak", text


def test_words_lower_retypes_only_a_persons_title():
    from support.repo_scripts import load_repo_script

    variants = load_repo_script("scripts/incident_variants.py")
    title = {
        "log": "Memory leak then i use vLLM",
        "source": {"title": "Memory leak then i use vLLM"},
    }
    assert variants.words_lower(title)["log"] == "memory leak then i use vllm"
    quoted = {"log": KV_TITLE, "source": {"title": KV_TITLE}}
    assert variants.words_lower(quoted) is None  # vLLM's own message is copied, case and all
    body = {"log": GLM_LEAK, "source": {"title": "Memory leak then i use vLLM"}}
    assert variants.words_lower(body) is None
