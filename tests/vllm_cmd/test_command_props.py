"""Property tests for headroom.vllm_cmd over generated vLLM command lines.

Command lines are generated from the flag table itself: every flag, in every spelling
(`--x v`, `--x=v`, aliases, underscores, boolean negations), with values of its type.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.vllm_cmd import (
    REMOVE,
    CommandLineError,
    apply_changes,
    diff_flags,
    parse_command,
    redact_argv,
    render,
)
from headroom.vllm_cmd.flags import FLAGS_BY_DEST, FlagSpec, lookup_option

SPECS = sorted(
    (s for s in FLAGS_BY_DEST.values() if s.dest not in ("model", "config") and s.kind != "append"),
    key=lambda s: s.dest,
)
WORD = st.text("abcdefghijklmnopqrstuvwxyz0123456789_/.:", min_size=1, max_size=12)
MODEL = st.sampled_from(["m", "/models/tiny-llama", "Qwen/Qwen3-8B", "org/x.y"])
LAUNCHERS = st.sampled_from(
    [
        ("vllm", "serve"),
        ("/opt/venv/bin/vllm", "serve"),
        ("python", "-m", "vllm.entrypoints.openai.api_server"),
        ("python3.11", "-u", "-m", "vllm.entrypoints.openai.api_server"),
        ("python", "-m", "headroom.simulator", "serve"),
        (),
    ]
)


def _value(spec: FlagSpec) -> st.SearchStrategy[tuple[str, object]]:
    """(text as typed, value vLLM would read) for one value of the flag's type."""
    if spec.type == "int":
        return st.integers(-5, 10**6).map(lambda n: (str(n), n))
    if spec.type == "float":
        return st.sampled_from([0.5, 0.85, 0.9, 1.0, 4.0]).map(lambda x: (str(x), x))
    if spec.type in ("hint", "hint_auto"):
        plain = st.integers(0, 10**7).map(lambda n: (str(n), n))
        suffixed = st.tuples(st.integers(1, 512), st.sampled_from("kKmMgG")).map(
            lambda t: (f"{t[0]}{t[1]}", t[0] * {"k": 10**3, "K": 2**10, "m": 10**6,
                                                 "M": 2**20, "g": 10**9, "G": 2**30}[t[1]])
        )  # fmt: skip
        return st.one_of(plain, suffixed)
    if spec.type in ("json", "json_or_str"):
        obj = st.dictionaries(
            st.sampled_from(["level", "mode", "a", "b"]), st.integers(0, 9), max_size=3
        )
        return obj.map(lambda d: (json.dumps(d), d))
    return WORD.filter(lambda w: not w.startswith("-")).map(lambda w: (w, w))


@st.composite
def flag_tokens(draw, spec: FlagSpec) -> tuple[list[str], object]:
    if spec.kind in ("bool", "flag"):
        if spec.kind == "flag" or draw(st.booleans()):
            return [draw(st.sampled_from([spec.option, *spec.aliases]))], True
        forms = ["--no-" + spec.option[2:]]
        disable = "--disable-" + spec.option[len("--enable-") :]
        if spec.option.startswith("--enable-") and lookup_option(disable) is None:
            forms.append(disable)  # (--disable-log-requests is a flag of its own, older)
        return [draw(st.sampled_from(forms))], False
    option = draw(
        st.sampled_from(
            [spec.option, *spec.aliases, spec.option.replace("-", "_").replace("__", "--", 1)]
        )
    )
    if spec.nargs == "+":
        pairs = draw(st.lists(_value(spec), min_size=1, max_size=3))
        return [option, *(p[0] for p in pairs)], [p[1] for p in pairs]
    text, value = draw(_value(spec))
    if draw(st.booleans()) or text.startswith("-"):
        return [f"{option}={text}"], value
    return [option, text], value


@st.composite
def command_lines(draw) -> tuple[list[str], dict[str, object]]:
    launcher = list(draw(LAUNCHERS))
    expected: dict[str, object] = {}
    argv = list(launcher)
    if launcher:
        model = draw(MODEL)
        expected["model"] = model
        if launcher[-1] == "serve" or draw(st.booleans()):
            argv.append(model)
        else:
            argv += ["--model", model]
    for spec in draw(st.lists(st.sampled_from(SPECS), max_size=8)):
        tokens, value = draw(flag_tokens(spec))
        argv += tokens
        expected[spec.dest] = value  # a repeated flag: the last one wins
    return argv, expected


@settings(max_examples=150, deadline=None)
@given(command_lines())
def test_render_parse_is_identity_and_values_are_read(case):
    argv, expected = case
    cmd = parse_command(argv)
    assert render(cmd) == argv
    for name, value in expected.items():
        assert cmd.get(name) == value, (name, argv)


@settings(max_examples=100, deadline=None)
@given(command_lines(), st.sampled_from(SPECS), st.data())
def test_apply_changes_touches_only_the_named_knob(case, spec, data):
    argv, _ = case
    cmd = parse_command(argv)
    if spec.kind in ("bool", "flag"):
        value: object = data.draw(st.booleans())
    elif spec.nargs == "+":
        value = [data.draw(_value(spec))[1]]
    else:
        value = data.draw(_value(spec))[1]
    new = apply_changes(cmd, {spec.dest: value})
    before, after = cmd.engine_args(), new.engine_args()
    for name in set(before) | set(after):
        if name != spec.dest:
            assert before.get(name) == after.get(name), (name, argv)
    if value is False and spec.default is False or spec.kind == "flag" and value is False:
        assert new.get(spec.dest) in (None, False)
    else:
        assert new.get(spec.dest) == value
    assert [c.name for c in diff_flags(cmd, new)] in ([], [spec.dest])
    assert render(parse_command(render(new))) == render(new)  # what we write, we can read
    removed = apply_changes(new, {spec.dest: REMOVE})
    assert not removed.has(spec.dest)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(max_size=12), max_size=10))
def test_arbitrary_tokens_parse_or_fail_clearly(tokens):
    try:
        cmd = parse_command(tokens)
    except CommandLineError as exc:
        assert str(exc)
        return
    assert render(cmd) == tokens
    cmd.engine_args()
    assert len(redact_argv(tokens)) == len(tokens)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(WORD, max_size=4),
    st.text(min_size=3, max_size=20).filter(lambda s: s.strip() == s and "=" not in s),
)
def test_api_keys_never_survive_redaction(before, secret):
    argv = [
        *before,
        "--api-key",
        secret,
        "--port",
        "1",
        f"--api-key={secret}",
        "--hf-token",
        secret,
    ]
    if secret.startswith("-"):
        return
    out = redact_argv(argv)
    assert out.count("***") >= 2 and f"--api-key={secret}" not in out
    assert out[len(before) + 1] == "***" and out[-1] == "***"
