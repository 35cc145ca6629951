"""Property tests for the vLLM log reader: untrusted text never raises. (Its speed is
measured by benchmarks/log_classify.py, as a ratio to str.splitlines in the same run.)"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.probes.vllm_log import LogDigest, classify_line, digest_text

PREFIX = "(EngineCore_DP0 pid=1) INFO 11-29 11:11:11 [x.py:1] "
WORDS = st.sampled_from(
    ["KV cache size:", "tokens", "Maximum concurrency for", "GiB", "max seq len (", "(", ")", ",",
     "Value error, ", "NCCL WARN", "Error: ", "is not divisible by", "out of memory", "1,024",
     "Tried to allocate", "Avg prompt throughput:", "non-default args: {", "\x1b[31m", "\r", "█"]
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_arbitrary_text_never_raises(text):
    event = classify_line(text)
    assert event is None or event.kind
    digest_text(text).facts()


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.one_of(WORDS, st.text(max_size=8), st.integers(-5, 10**7).map(str)), max_size=30)
)
def test_near_miss_lines_never_raise(parts):
    line = PREFIX + " ".join(parts)
    digest = LogDigest()
    event = digest.feed(line)
    assert event is None or event.severity in ("info", "warning", "error")
    digest.facts()
