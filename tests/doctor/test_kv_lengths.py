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
