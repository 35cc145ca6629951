"""headroom/doctor/rules_sm12x.py: an OOM the words lay on the page cache, on a
unified-memory GPU, is named with no engine knob (and ranks above the generic OOM's advice).

The sentence is the DGX Spark postmortem's own (blog sovgrid, "Five DGX Spark Disasters", the
incident blog-sovgrid--five-dgx-spark-disasters--page-cache): "Kernel page cache held stale
model weights; next launch OOMed at 95 GB on a 70 GB model."
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from headroom.doctor import DoctorInputs, diagnose, parse_gpu_spec
from headroom.probes.vllm_log import digest_text

_POSTMORTEM = (
    "Kernel page cache held stale model weights; next launch OOMed at 95 GB on a 70 GB model."
)


def _findings(log: str, gpus: str | None):
    inputs = DoctorInputs(log=digest_text(log), gpu_spec=parse_gpu_spec(gpus) if gpus else None)
    return diagnose(inputs).findings


def test_the_page_cache_on_a_gb10_is_no_engine_setting():
    findings = _findings(_POSTMORTEM, "1xGB10:128")
    assert findings[0].id == "unified-memory-page-cache"
    assert findings[0].actions == ()
    assert "drop_caches" in " ".join(findings[0].evidence)


def test_silent_on_a_discrete_gpu_or_without_an_oom():
    assert all(f.id != "unified-memory-page-cache" for f in _findings(_POSTMORTEM, "1xH100"))
    assert all(f.id != "unified-memory-page-cache" for f in _findings(_POSTMORTEM, None))
    no_oom = "Kernel page cache held stale model weights."
    assert all(f.id != "unified-memory-page-cache" for f in _findings(no_oom, "1xGB10:128"))


@given(st.text(max_size=300))
def test_any_text_beside_it_keeps_the_finding_knobless(noise):
    found = [
        f
        for f in _findings(_POSTMORTEM + "\n" + noise, "1xGB10:128")
        if f.id == "unified-memory-page-cache"
    ]
    assert len(found) == 1 and found[0].actions == ()
