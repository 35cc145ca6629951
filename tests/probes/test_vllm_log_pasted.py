"""The log reader reads what people paste, not only what vLLM prints: every catalog text
(their `examples` are vLLM's own wording, read from its wheels, or the library's, from real
logs) still reads as the same event when a terminal wrapped it, another tool prefixed it,
colour codes or HTML entities came with it, or it lost its start or its end."""

from __future__ import annotations

import html
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.probes.vllm_catalog import SIGNATURES
from headroom.probes.vllm_log import LogDigest, classify_line, digest_text
from headroom.probes.vllm_log_normalize import normalize_line
from headroom.probes.vllm_log_patterns import prefix_match
from headroom.probes.vllm_log_wrap import _MAX_CHARS, _MAX_LINES, Paragraph

# The failures and warnings a user meets (info lines are a running server's own, unwrapped).
FAILURES = [
    (sig, example)
    for sig in SIGNATURES
    if sig.kind is not None and sig.severity != "info" and not sig.generic
    for example in sig.examples
    if classify_line(example) is not None and classify_line(example).signature == sig.id
]


def _bare(example: str):
    event = classify_line(example)
    assert event is not None
    return event


def _kinds(text: str) -> set[str]:
    return {e.kind for e in digest_text(text).events}


# --- wrapped by a terminal --------------------------------------------------------------


def _hard_wrap(text: str, width: int) -> str:
    """A terminal's wrap: every `width` characters a new line, nothing lost or added."""
    return "\n".join(text[i : i + width] for i in range(0, len(text), width))


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(FAILURES), st.integers(min_value=40, max_value=220))
def test_a_text_wrapped_at_any_terminal_width_reads_as_the_same_failure(case, width):
    sig, example = case
    assert sig.kind in _kinds(_hard_wrap(example, width)), (sig.id, width)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(FAILURES), st.integers(min_value=40, max_value=220))
def test_a_text_wrapped_at_word_breaks_reads_the_same(case, width):
    """An editor's wrap: at the last space before `width`, the space dropped."""
    sig, example = case
    lines, line = [], ""
    for word in example.split(" "):
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    assert sig.kind in _kinds("\n".join(lines)), (sig.id, width)


def _word_wrap(text: str, width: int) -> str:
    lines, line = [], ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "\n".join([*lines, line])


def test_every_catalog_text_wrapped_at_common_widths_reads_the_same():
    """Deterministic companion of the properties above (a catalog entry added later is held to
    it at once): every failure text at the widths of common terminals and editors."""
    missed = [
        (sig.id, how, width)
        for sig, example in FAILURES
        for width in (40, 57, 80, 100, 120, 160)
        for how, wrapped in (
            ("hard", _hard_wrap(example, width)),
            ("word", _word_wrap(example, width)),
        )
        if sig.kind not in _kinds(wrapped)
    ]
    assert not missed, missed[:10]


def test_wrapped_numbers_are_read_whole():
    """vllm-project/vllm#7526, as pasted: the KV cache's token count went to the next line."""
    text = ("ValueError: The model's max seq len (30000) is larger than the maximum number of tokens "
            "that can be stored in KV cache (\n3984). Try increasing `gpu_memory_utilization` or "
            "decreasing `max_model_len` when initializing the engine.")  # fmt: skip
    failures = digest_text(text).facts().failures
    assert failures[0].kind == "max_seq_len_exceeds_kv"
    assert failures[0].fields["max_seq_len"] == 30000
    assert failures[0].fields["estimated_max_len"] == 3984
    # one failure, not the start's generic exception beside it
    assert [f.kind for f in failures] == ["max_seq_len_exceeds_kv"]


def test_a_word_cut_by_the_wrap_is_joined_without_a_space():
    example = next(e for s, e in FAILURES if s.id == "v0_max_seq_len_exceeds_kv")
    at = example.index("KV cache") + 5  # "KV ca" / "che (81536)"
    event = digest_text(example[:at] + "\n" + example[at:]).facts().failures[0]
    assert (
        event.signature == "v0_max_seq_len_exceeds_kv"
        and event.fields["estimated_max_len"] == 81536
    )


def test_a_wrap_never_joins_a_client_text():
    """A request logger line quotes a prompt; a line after it is not part of vLLM's text."""
    request = "INFO 08-23 08:25:25 logger.py:36] Received request cmpl-1: prompt: 'The model's max seq len (3"
    digest = digest_text(
        request + "\n0000) is larger than the maximum number of tokens that can be stored"
    )
    assert digest.facts().failures == ()


def test_separate_records_are_not_joined():
    text = ("INFO 05-09 00:49:33 llm_engine.py:72] Initializing an LLM engine with config: model='m'\n"
            "ERROR 05-09 00:49:34 engine.py:1] can be stored in KV cache (3984)")  # fmt: skip
    digest = digest_text(text)
    assert "max_seq_len_exceeds_kv" not in {e.kind for e in digest.events}


# --- other tools' prefixes, colour codes, entities ------------------------------------------

FOREIGN_PREFIXES = [
    "vllm-1  | ",  # docker compose
    "vllm_openai_1       | ",
    "2024-06-28T06:11:52.685300953Z ",  # docker logs -t
    "[2026-02-24T20:21:58Z] ",  # Buildkite
    "2025-10-09 20:16:32,652 ",  # python logging
    "[pod/vllm-0/vllm] ",  # kubectl logs --prefix
    "May 10 12:34:56 gpu-node vllm[1234]: ",  # journald
    "> ",  # a Markdown quote in a reply
    "> vllm-1  | ",
    "2024/05/10 12:34:56 ",  # Go-style timestamps (log collectors)
    "I0510 12:34:56.123456  1234 core_worker.cc:12] ",  # glog
]
# Ray's own process tags (a task without an actor class, an actor, with the node's address).
RAY_TAGS = ["(pid=1234) ", "(pid=1234, ip=10.0.0.2) ", "(WorkerDict pid=7, ip=10.0.0.2) ",
            "(TaskRunner pid=9) (WorkerDict pid=7) "]  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(FAILURES), st.sampled_from(RAY_TAGS))
def test_ray_process_tags_change_nothing(case, tag):
    sig, example = case
    if sig.origin == "log":  # a logger line behind the tag
        example = f"INFO 05-09 00:49:33 [{sig.printed_by[0]}:1] " + example
    event = classify_line(tag + example)
    bare = _bare(example)
    assert event is not None and event.signature == bare.signature, (sig.id, tag)
    assert dict(event.fields) == dict(bare.fields)


COLOURS = [("\x1b[31m", "\x1b[0m"), ("[31m", "[0m"), ("\x1b[1;36m", "\x1b[39m")]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(FAILURES), st.sampled_from(FOREIGN_PREFIXES), st.sampled_from(COLOURS),
       st.booleans(), st.sampled_from(["", "\r", "\r\n"]))  # fmt: skip
def test_prefixes_colours_and_line_ends_change_nothing(case, prefix, colour, coloured, end):
    sig, example = case
    start, stop = colour if coloured else ("", "")
    event = classify_line(prefix + start + example + stop + end)
    bare = _bare(example)
    assert event is not None, (sig.id, prefix)
    assert (event.signature, dict(event.fields)) == (bare.signature, dict(bare.fields))


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(FAILURES))
def test_html_entities_and_typographic_quotes_change_nothing(case):
    sig, example = case
    bare = _bare(example)
    for pasted in (html.escape(example, quote=True),
                   example.replace("'", "\u2019").replace(" ", "\xa0", 3)):  # fmt: skip
        event = classify_line(pasted)
        assert event is not None and event.signature == bare.signature, (sig.id, pasted)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(FAILURES), st.sampled_from(["log", "message", "msg"]))
def test_a_json_log_record_reads_as_its_text(case, key):
    """docker's json-file driver ({"log": "...\\n", "stream": ..., "time": ...}) and Kubernetes
    or cloud exports ({"message": ...}) store each line as a JSON record."""
    sig, example = case
    record = json.dumps(
        {key: example + "\n", "stream": "stderr", "time": "2024-06-28T06:11:52.685300953Z"}
    )
    event, bare = classify_line(record), _bare(example)
    assert event is not None and (event.signature, dict(event.fields)) == (
        bare.signature,
        dict(bare.fields),
    )


def test_a_json_record_that_is_not_a_log_line_stays_as_it_is():
    body = '{"model":"m","messages":[{"role":"user","content":"EngineCore encountered a fatal error."}]}'
    assert normalize_line(body) == body
    assert classify_line(body) is None  # a client's request body quotes the text


def test_an_exception_repr_is_the_exception_not_a_quote():
    """Frameworks that wrap vLLM print the exception's repr (Ray, verl):
    "RayTaskError(ValueError): ... ValueError('No available memory ...')"."""
    line = ("ray.exceptions.RayTaskError(ValueError): ray::main_task() ValueError('No available memory for the "
            "cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.')")  # fmt: skip
    assert classify_line(line).kind == "no_cache_memory"
    quoted = "(APIServer pid=3) ERROR 11-29 11:24:21 [serving_chat.py:10] Error in request: 'CUDA out of memory'"
    assert classify_line(quoted) is None


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(FAILURES), st.sampled_from(["'", '"']),
       st.sampled_from(["[Bug]: vllm 0.9.0 raises {} on start", "Got {} when starting the server", "{}"]))  # fmt: skip
def test_a_person_quoting_the_error_in_a_sentence_is_read(case, quote, sentence):
    """A thread title or a sentence that quotes the error ("docker image raise 'CUDA error: no
    kernel image ...' for Llama4", vllm#18841): the quote opens the text itself."""
    sig, example = case
    if sig.origin == "log" or re.search(r"\"|(?<![A-Za-z])'|'(?![A-Za-z])", example):
        return  # a logger's text needs its own prefix; a text with quotes of its own is ambiguous
    line = sentence.format(quote + example + quote)
    event = classify_line(line)
    assert event is not None and event.kind == sig.kind, (sig.id, line)


def test_a_quote_inside_an_exception_message_still_does_not_count():
    """An exception that quotes what a client sent ("Invalid prompt: '...'") is about the
    request; the text inside is the client's, never vLLM's event."""
    event = classify_line(
        "ValueError: Invalid prompt: 'CUDA out of memory. Tried to allocate 2.00 GiB.'"
    )
    assert event is None or event.kind != "cuda_oom"
    assert classify_line('{"prompt": "CUDA out of memory. Tried to allocate 2.00 GiB."}') is None


def test_a_text_quoted_by_pydantic_reads_as_itself():
    """vllm-project/vllm#36734: pydantic's "Assertion failed, ... [type=..., input_value=...]"
    around a text vLLM's config asserted; the tail is not part of the text."""
    line = ("  Value error, Total number of attention heads (4) must be divisible by tensor parallel size "
            "(3). [type=value_error, input_value=ArgsKwargs((), {'model_co...}), input_type=ArgsKwargs]")  # fmt: skip
    assert normalize_line(line).endswith("parallel size (3).")
    event = classify_line(line)
    assert event.kind == "heads_not_divisible" and event.fields == {"heads": 4, "tp": 3}
    cut = "AssertionError: 8 is not divisible by 6 [type=assertion_error, input_value=ArgsKwargs((), {'model_co..."
    assert classify_line(cut).kind == "kv_heads_not_divisible"


def test_a_progress_bar_redrawn_in_place_keeps_what_was_shown_last():
    line = "Loading: 10%\rLoading: 100%\rValueError: No available memory for the cache blocks."
    assert normalize_line(line) == "ValueError: No available memory for the cache blocks."


# --- a text without its start, or without its end ------------------------------------------

FRAGMENT_CASES = [
    pytest.param(sig, example, fragment, id=f"{sig.id}-{i}")
    for sig in SIGNATURES
    for fragment in sig.fragments
    for i, example in enumerate(sig.examples)
    if fragment in example
]


@pytest.mark.parametrize(("sig", "example", "fragment"), FRAGMENT_CASES)
def test_a_text_without_its_start_reads_as_itself(sig, example, fragment):
    """A paste that begins at a later clause (hiyouga/LLaMA-Factory#3717 pasted only "You can
    use float16 instead by explicitly setting the`dtype` flag ..." of the bf16 refusal)."""
    tail = example[example.index(fragment) :]
    event = classify_line(tail)
    assert event is not None and event.kind == sig.kind, (sig.id, tail)


def test_fragments_are_the_texts_own_and_no_other_kinds():
    for sig in SIGNATURES:
        for fragment in sig.fragments:
            assert any(fragment in e for e in sig.examples), (sig.id, fragment)
            assert not any(n in fragment for n in sig.needles), (
                sig.id,
                "a needle already finds it",
            )
            others = [
                o.id for o in SIGNATURES if o.kind != sig.kind for e in o.examples if fragment in e
            ]
            assert not others, (sig.id, fragment, others)


def _cut(example: str, needle: str) -> str:
    return example[: example.index(needle) + len(needle) - 4]


# Bare error lines (a paste or a title: a server's prefixed lines are never cut) whose first
# needle is long enough that a cut one still says something.
CUT_CASES = [
    pytest.param(sig, example, needle, id=f"{sig.id}-{i}")
    for sig in SIGNATURES
    if sig.kind is not None
    and not sig.generic
    and sig.severity == "error"
    and sig.origin != "source"
    for i, example in enumerate(sig.examples)
    for needle in sig.needles[:1]
    if len(needle) >= 24
    and needle in example
    and needle[:1].isalpha()
    and ("rror" in _cut(example, needle) or "ssert" in _cut(example, needle))
    and prefix_match(_cut(example, needle)) is None
]


@pytest.mark.parametrize(("sig", "example", "needle"), CUT_CASES)
def test_a_line_cut_inside_its_text_reads_as_itself(sig, example, needle):
    """A thread title or a copy that stops mid-text ("... are not supported for no",
    vllm-project/vllm#10990's title)."""
    cut = _cut(example, needle)
    event = classify_line(cut)
    assert event is not None and event.kind == sig.kind, (sig.id, cut)


def test_cut_lines_of_a_running_server_are_not_guessed():
    """Only a bare line is a paste that may have been cut: a prefixed line is vLLM's whole."""
    line = "(EngineCore_DP0 pid=1) ERROR 11-29 11:24:21 [core.py:1] Model architectures ['X'] are not supp"
    event = classify_line(line)
    assert event is None or event.kind != "model_unsupported"


LOWERED = [
    pytest.param(sig, example.lower(), id=f"{sig.id}-{i}")
    for i, (sig, example) in enumerate(FAILURES)
    if ("rror" in normalize_line(example.lower()) or "ssert" in normalize_line(example.lower()))
    and any(len(n.strip()) >= 16 for n in sig.needles)
    and prefix_match(example.lower()) is None
]


@pytest.mark.parametrize(("sig", "lowered"), LOWERED)
def test_an_error_line_lower_cased_whole_reads_as_itself(sig, lowered):
    """vllm-project/vllm#9531 pasted its error lower-cased ("valueerror: loading internvl2-8b/
    requires you to execute the configuration file ...")."""
    event = classify_line(lowered)
    assert event is not None and event.kind == sig.kind, (sig.id, lowered)


# --- never raises, bounded work ---------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_normalize_never_raises(text):
    assert isinstance(normalize_line(text), str)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.sampled_from([e for _, e in FAILURES]), st.text(max_size=60)), max_size=12),
       st.integers(min_value=20, max_value=120))  # fmt: skip
def test_any_pasted_mixture_never_raises(parts, width):
    text = _hard_wrap("\n".join(parts), width)
    digest = digest_text(text)
    digest.facts()
    assert all(e.lineno is not None for e in digest.events)


def test_a_paragraph_is_bounded():
    """However many lines continue one another, a line is read at most twice more (joined,
    then unspaced), and the paragraph never holds more than its bounds."""
    calls = []

    def classify(text, lineno):
        calls.append(len(text))
        return None

    paragraph = Paragraph(classify)
    for i in range(5000):
        paragraph.add(f"continued words without an end {i} and more text", i, None)
        assert paragraph.lines <= _MAX_LINES
        assert len(paragraph.text or "") <= _MAX_CHARS
    assert len(calls) <= 2 * 5000
    assert max(calls) <= _MAX_CHARS + 80


def test_digest_keeps_lines_normalised():
    digest = LogDigest()
    digest.feed(
        "vllm-1  | \x1b[31mValueError: No available memory for the cache blocks.\x1b[0m\r\n"
    )
    assert list(digest.lines) == ["ValueError: No available memory for the cache blocks."]
    assert digest.facts().failures[0].kind == "no_cache_memory"
