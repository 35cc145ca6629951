"""The fix a vLLM message names (probes.vllm_hints), over the texts vLLM really prints.

tests/fixtures/vllm_hints/texts.json holds vLLM's own raise/logger/assert texts that name a
knob, walked out of the wheels 0.1.2-0.33.0 by scripts/hint_survey.py (each with its
releases and first source place; "{}" where the source formats a value, rendered "8" here, as
scripts/catalog_coverage.py renders them), and the fix each means, read by hand (see
SOURCES.md there). The person's sentences are real titles of public threads (named beside
each).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.doctor.hint_knobs import KNOWN_NAMES
from headroom.probes.vllm_hint_words import SENTENCE_END
from headroom.probes.vllm_hints import NamedFix, fixes_in_message

FIXTURE = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "vllm_hints" / "texts.json").read_text()
)
NAMED = FIXTURE["named"]
NO_FIX = FIXTURE["no_fix"]


def _reading(text: str) -> list[list[object]]:
    out: list[list[object]] = []
    for fix in fixes_in_message(text.replace("{}", "8"), KNOWN_NAMES):
        out.append([fix.knob, "remove" if fix.remove else fix.direction,
                    None if fix.remove else fix.value])  # fmt: skip
    return out


@pytest.mark.parametrize("entry", NAMED, ids=[e["where"] for e in NAMED])
def test_each_surveyed_hint_yields_the_knob_and_way_vllm_means(entry):
    assert _reading(entry["text"]) == entry["fixes"], entry["releases"]


@pytest.mark.parametrize("entry", NO_FIX, ids=[e["where"] for e in NO_FIX])
def test_statements_narration_and_advice_to_silence_name_no_fix(entry):
    """vLLM saying what it does ("Setting VLLM_WORKER_MULTIPROC_METHOD to 'spawn'."), what is
    not supported, what the user set ("You set ... in `--limit-mm-per-prompt`"), "Cannot set
    both", a way to see more ("set `VLLM_LOGGING_LEVEL=DEBUG`"): no fix."""
    assert _reading(entry["text"]) == [], entry["releases"]


def test_the_survey_covers_every_way_and_every_form():
    """The fixture is broad: raises, lowers, sets and removals; flags, env vars, arg names."""
    ways = {fix[1] for entry in NAMED for fix in entry["fixes"]}
    assert ways == {"raise", "lower", "set", "remove"}
    knobs = {fix[0] for entry in NAMED for fix in entry["fixes"]}
    assert {"gpu_memory_utilization", "max_model_len", "trust_remote_code", "VLLM_USE_V1"} <= knobs
    releases = {entry["releases"].split("..")[0] for entry in NAMED}
    assert {"0.1.2", "0.2.7", "0.6.3", "0.8.5", "0.10.2", "0.33.0"} <= releases


def test_a_verb_governs_the_list_after_it_and_the_next_verb_takes_over():
    """0.2.7-0.10.2 llm_engine.py; 0.8.5+ gpu_model_runner.py (the sampler warm-up)."""
    assert _reading(
        "The model's max seq len (8) is larger than the maximum number of tokens that can be "
        "stored in KV cache (8). Try increasing `gpu_memory_utilization` or decreasing "
        "`max_model_len` when initializing the engine."
    ) == [["gpu_memory_utilization", "raise", None], ["max_model_len", "lower", None]]
    assert _reading(
        "CUDA out of memory occurred when warming up sampler with 8 dummy requests. Please try "
        "lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the engine."
    ) == [["max_num_seqs", "lower", None], ["gpu_memory_utilization", "lower", None]]


def test_values_come_from_the_example_the_comparison_and_from_to():
    """0.3.3 worker.py (for example: --dtype=half), 0.12.0 ray_utils.py (to 8 or less), 0.20.2
    gpu_worker.py (from A to B), 0.7.3 tpu_model_runner.py (a smaller value, like 8)."""
    assert _reading(
        "Your Tesla T4 GPU has compute capability 7.5. You can use float16 instead by explicitly "
        "setting the`dtype` flag in CLI, for example: --dtype=half."
    ) == [["dtype", "set", "half"]]
    assert _reading("Consider reducing tensor_parallel_size to 4 or less, or ensure your Ray "
                    "cluster has 4 GPUs available.") == [["tensor_parallel_size", "lower", "4"]]  # fmt: skip
    assert _reading(
        "Consider re-enabling it (the default as of v0.21.0) and increasing "
        "--gpu-memory-utilization from 0.85 to 0.9."
    ) == [["gpu_memory_utilization", "raise", "0.9"]]
    assert _reading(
        "The max_model_len (8) is too large. This may degrade the performance due to the "
        "insufficient smem size. Consider setting --max-model-len to a smaller value, like 4096."
    ) == [["max_model_len", "lower", "4096"]]


@pytest.mark.parametrize(
    "title",
    [
        "How can I set the gpu_memory_utilization?",  # batsresearch/bonito#22
        "[Bug]OOM occurs after setting gpu_memory_utilization to 1.0",  # vllm-project/vllm#1298
        "[Usage]: can not use --kv-cache-dtype fp8",  # 1Cat-vLLM#27
        "'OOM' if I set --VLLM",  # allenai/open-instruct#163
        # vllm-project/vllm#10409
        "[Bug]: (Program crashes after increasing --tensor-parallel-size) with error "
        "pynvml.NVMLError_InvalidArgument: Invalid Argument",
        # noonghunna/club-3090#96
        "Add/vllm-qwen36-27b-dual-nvlink-dflash-noviz -- OOM during verify-stress.sh until "
        "reduce max_model_len to 188000",
    ],
)
def test_a_persons_question_report_or_story_names_no_fix(title):
    assert _reading(title) == []


def _sentences_with_a_fix() -> list[str]:
    return [e["text"].replace("{}", "8") for e in NAMED if len(e["text"]) <= 380]


def _asked(text: str, mark: str = "?") -> str:
    return " ".join(part.rstrip(".;") + mark for part in SENTENCE_END.split(text) if part)


def _hedged(text: str, hedge: str) -> str:
    parts = SENTENCE_END.split(text)
    return " ".join(hedge + part[:1].lower() + part[1:] for part in parts if part)


def test_every_surveyed_hint_asked_hedged_or_quoted_is_no_fix():
    """Each real hint of the fixture, asked as a question, hedged by a person, or quoted whole
    in someone's sentence ('It says "Try increasing ..."'): never a fix."""
    for text in _sentences_with_a_fix():
        assert fixes_in_message(_asked(text), KNOWN_NAMES) == (), text
        assert fixes_in_message(_hedged(text, "Maybe "), KNOWN_NAMES) == (), text
        if '"' not in text and "\n" not in text:
            quoted = f'It says "{text}" and nothing else'
            assert fixes_in_message(quoted, KNOWN_NAMES) == (), text


_HEDGES = ["Maybe ", "Perhaps ", "I think ", "I guess ", "Possibly ", "Probably "]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(_sentences_with_a_fix()), st.sampled_from(_HEDGES),
       st.sampled_from(["?", " ?", "??"]), st.sampled_from(['"', "'"]))  # fmt: skip
def test_hedges_questions_and_quotes_of_any_kind_are_no_fix(text, hedge, mark, quote):
    assert fixes_in_message(_hedged(text, hedge), KNOWN_NAMES) == ()
    assert fixes_in_message(_asked(text, mark), KNOWN_NAMES) == ()
    if quote not in text and "\n" not in text:
        said = f"The log said {quote}{text}{quote} twice"
        assert fixes_in_message(said, KNOWN_NAMES) == ()


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=3000), st.booleans())
def test_never_raises_and_is_bounded(text, with_names):
    found = fixes_in_message(text, KNOWN_NAMES if with_names else None)
    assert isinstance(found, tuple) and len(found) <= 16
    assert all(isinstance(f, NamedFix) and f.direction in ("raise", "lower", "set") for f in found)
    assert len({f.knob for f in found}) == len(found)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["Try", "increasing", "`gpu_memory_utilization`", "--max-model-len",
                                 "to", "8", "or", "VLLM_USE_V1=0", "set", "(", ")", ",", ".",
                                 "not", "a", "smaller", "value", "e.g.", "<=", "from"]),
                max_size=60))  # fmt: skip
def test_shuffled_hint_words_never_raise(words):
    found = fixes_in_message(" ".join(words), KNOWN_NAMES)
    assert all(f.direction in ("raise", "lower", "set") for f in found)


def test_a_way_to_see_more_is_no_fix():
    """PyTorch's CUDA error suffix (c10/cuda/CUDAMiscFunctions.cpp get_cuda_check_suffix) and
    NCCL's through vLLM's pynccl (0.4.3+ pynccl_wrapper.py: "run with NCCL_DEBUG=WARN for
    details"): debugging aids, not the failure's fix."""
    torch_suffix = ("CUDA error: an illegal memory access was encountered\nCUDA kernel errors might "
                    "be asynchronously reported at some other API call, so the stacktrace below "
                    "might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1")  # fmt: skip
    assert _reading(torch_suffix) == []
    assert _reading("NCCL error: invalid usage (run with NCCL_DEBUG=WARN for details)") == []


def test_anything_but_a_string_is_no_fix():
    assert fixes_in_message(None) == () and fixes_in_message(b"Set VLLM_USE_V1=0") == ()
