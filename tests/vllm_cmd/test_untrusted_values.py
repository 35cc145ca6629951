"""Flag values as untrusted input: --max-model-len, --quantization-config... (issue 14, item 8).

Old: `--quantization-config '[[[...'` (5000 levels) raised RecursionError out of
parse_command (documented to raise CommandLineError); `--tensor-parallel-size 1000...0`
(400 digits) and `--max-model-len 99...9G` gave integers whose float arithmetic overflows;
`--gpu-memory-utilization 1e400` gave inf.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.hostile_json import deep_nesting, hostile_field_values

from headroom.vllm_cmd import CommandLineError, parse_command

FLAGS = ["--max-model-len", "--quantization-config", "--gpu-memory-utilization",
         "--tensor-parallel-size", "--max-num-seqs", "--kv-cache-memory-bytes",
         "--compilation-config", "--speculative-config", "--hf-overrides",
         "--some-unknown-flag", "--compilation-config.level", "--max-num-batched-tokens"]  # fmt: skip
RAW = st.one_of(
    hostile_field_values(),
    st.sampled_from(["1" + "0" * 400, "9" * 40 + "G", "1e400", "inf", "nan", "-1e400", "16k"]),
)


def _walk(value: object, depth: int = 0) -> None:
    assert depth < 100
    if isinstance(value, bool) or isinstance(value, str) or value is None:
        return
    if isinstance(value, int):
        assert abs(value) <= 2**63
    elif isinstance(value, float):
        assert math.isfinite(value)
    elif isinstance(value, dict):
        for item in value.values():
            _walk(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _walk(item, depth + 1)


@settings(max_examples=150, deadline=None)
@given(flag=st.sampled_from(FLAGS), raw=RAW, joined=st.booleans())
def test_any_value_parses_or_is_a_command_line_error(flag, raw, joined) -> None:
    argv = ["vllm", "serve", "m", *([f"{flag}={raw}"] if joined else [flag, raw])]
    try:
        command = parse_command(argv)
    except CommandLineError as error:
        assert len(str(error)) < 600  # names the flag, does not echo 10 KB of brackets
        return
    _walk(command.engine_args())
    float(command.get("max_model_len") or 0)  # arithmetic on it cannot overflow


@pytest.mark.parametrize(
    "argv",
    [
        ["--quantization-config", deep_nesting(5000)],
        ["--tensor-parallel-size", "1" + "0" * 400],
        ["--max-model-len", "9" * 40 + "G"],
        ["--gpu-memory-utilization", "1e400"],
    ],
    ids=["deep-json", "400-digits", "huge-human-int", "inf"],
)
def test_hostile_value_is_refused_clearly(argv) -> None:
    with pytest.raises(CommandLineError, match=argv[0]):
        parse_command(["vllm", "serve", "m", *argv])


def test_ordinary_values_still_read() -> None:
    command = parse_command(["vllm", "serve", "m", "--max-model-len", "16k",
                             "--quantization-config", '{"a": [1, 2.5]}', "-tp", "2"])  # fmt: skip
    assert command.get("max_model_len") == 16000
    assert command.get("quantization_config") == {"a": [1, 2.5]}
    assert command.get("tensor_parallel_size") == 2
