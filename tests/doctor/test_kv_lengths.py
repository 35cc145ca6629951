"""A hybrid model's align-mode block larger than one scheduler step (rules_lengths.py). The
text is vLLM's own assertion (vllm/config/vllm.py VllmConfig, 0.20.0 and 0.25.1), as pydantic
prints it around a failed assert (vllm#36734's log)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.doctor import DoctorInputs, diagnose
from headroom.vllm_cmd import parse_command


def _line(block: int, batched: int) -> str:
    return (
        f"Assertion failed, In Mamba cache align mode, block_size ({block}) must be <= "
        f"max_num_batched_tokens ({batched}). [type=assertion_error, input_value=ArgsKwargs((), "
        "{'model_co...transfer_config': None}), input_type=ArgsKwargs]"
    )


def test_the_step_is_raised_to_hold_one_block_or_prefix_caching_goes():
    argv = ["vllm", "serve", "m", "--enable-prefix-caching"]
    d = diagnose(DoctorInputs(log=_line(2096, 2048), command=parse_command(argv)))
    top = d.findings[0]
    assert top.id == "mamba-align-block-above-batch" and top.step == 4
    raised, off = top.actions
    assert (raised.knob, raised.direction, raised.value) == (
        "max_num_batched_tokens",
        "raise",
        2304,
    )
    assert (off.knob, off.value) == ("enable_prefix_caching", False)


def test_other_texts_do_not_fire():
    text = "ValueError: max_num_batched_tokens (2048) is smaller than max_model_len (8192)."
    d = diagnose(DoctorInputs(log=text))
    assert all(f.id != "mamba-align-block-above-batch" for f in d.findings)


@settings(max_examples=60, deadline=None)
@given(block=st.integers(min_value=16, max_value=65536), batched=st.integers(1, 65535))
def test_the_raise_always_holds_the_block(block, batched):
    d = diagnose(DoctorInputs(log=_line(block, batched)))
    top = next(f for f in d.findings if f.id == "mamba-align-block-above-batch")
    value = top.actions[0].value
    assert value >= block and value % 256 == 0 and value - block < 256


def test_batched_below_length_also_offers_chunked_prefill_where_it_exists():
    """V0's SchedulerConfig raises it only with chunked prefill off (0.5.4-0.7.3 config.py):
    the third way out, after the two the message names; none before 0.4.0."""
    text = (
        "ValueError: max_num_batched_tokens (8192) is smaller than max_model_len (131072). "
        "This effectively limits the maximum sequence length to max_num_batched_tokens and "
        "makes vLLM reject longer sequences. Please increase max_num_batched_tokens or "
        "decrease max_model_len."
    )
    top = diagnose(DoctorInputs(log=text)).findings[0]
    assert [a.knob for a in top.actions] == [
        "max_num_batched_tokens",
        "max_model_len",
        "enable_chunked_prefill",
    ]
    old = diagnose(DoctorInputs(log=text, vllm_version="0.3.3")).findings[0]
    assert "enable_chunked_prefill" not in [a.knob for a in old.actions]
