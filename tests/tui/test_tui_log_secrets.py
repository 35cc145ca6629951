"""A log the TUI follows itself (`attach --log-from`) is shown without its secrets
(issue 14, item 5): vLLM's non-default args carry the --api-key in clear."""

from __future__ import annotations

from headroom.tui.live_sources import LiveSources

LINE = (
    "(APIServer pid=14960) INFO 11-29 11:24:58 [utils.py:253] non-default args: "
    "{'model_tag': '/models/tiny-llama', 'api_key': ['sk-tui-secret-991'], 'port': 18000}\n"
)


async def test_a_followed_log_file_is_shown_and_digested_without_the_key(tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(LINE)
    sources = LiveSources("http://127.0.0.1:9", log_path=str(log))
    try:
        lines = await sources.read_log_lines()
    finally:
        await sources.close()
    assert lines and "non-default args" in lines[0]
    assert "sk-tui-secret-991" not in " ".join(lines)
    digest = sources._digest
    assert digest is not None
    assert "sk-tui-secret-991" not in repr(digest.facts().non_default_args)
