"""headroom/doctor/rules_release_flags.py and release_flags.py: a command-line flag the stated
release no longer has is dropped (an unset), its successor set where vLLM named one; never for
a release that still has the flag.

The one log sentence fed below is the GB10 session notes' own (blog catg-kghs, the incident
blog-catg-kghs--gb10-two-lane-appliance--swap-space): "The plan included --swap-space 0 as a
flag on both serve scripts. This flag doesn't exist in vLLM 0.21.0."; the engine line of the
silent case is vLLM's V1 start-up line ("Initializing a V1 LLM engine (v0.8.5) with config:",
vllm/v1/engine/core.py 0.8.5).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.release_flags import REMOVED_FLAGS, gone_in
from headroom.doctor.versions import parse_version
from headroom.probes.vllm_log import digest_text
from headroom.vllm_cmd import parse_command

_NOTES = (
    "The plan included --swap-space 0 as a flag on both serve scripts. "
    "This flag doesn't exist in vLLM 0.21.0."
)


def _findings(argv: str, version: str | None, log: str = _NOTES):
    inputs = DoctorInputs(
        log=digest_text(log), command=parse_command(argv, strict=False), vllm_version=version
    )
    return [f for f in diagnose(inputs).findings if f.id == "flag-not-in-release"]


def _turns(finding):
    return [(a.knob, a.direction, a.value) for a in finding.actions]


def test_a_flag_gone_from_the_stated_release_is_unset():
    (found,) = _findings("vllm serve m --swap-space 0", "0.21.0")
    assert _turns(found) == [("swap_space", "unset", None)]
    assert "0.17.1" in found.evidence[0] and "0.18.0" in found.evidence[0]


def test_a_release_that_still_has_the_flag_says_nothing():
    assert _findings("vllm serve m --swap-space 4", "0.8.4") == []
    assert _findings("vllm serve m --swap-space 4", "0.17.1") == []
    # between the last release read with it (0.17.1) and the first read without (0.20.0)
    assert _findings("vllm serve m --disable-frontend-multiprocessing", "0.18.0") == []
    assert _findings("vllm serve m --swap-space 4", None, log="slow") == []


def test_a_log_past_the_argument_parser_says_the_flag_was_taken():
    log = "INFO 05-01 10:00:00 core.py:58] Initializing a V1 LLM engine (v0.8.5) with config: "
    assert _findings("vllm serve m --swap-space 4", "0.21.0", log=log) == []


def test_a_named_successor_is_set_before_the_flag_goes():
    (found,) = _findings("vllm serve m --worker-use-ray", "0.8.5")
    assert _turns(found) == [
        ("distributed_executor_backend", "set", "ray"),
        ("worker_use_ray", "unset", None),
    ]
    (found,) = _findings("vllm serve m --task embed", "0.13.0")
    assert _turns(found)[0] == ("runner", "set", "pooling")


_RELEASES = st.builds(
    "0.{}.{}".format, st.integers(min_value=2, max_value=40), st.integers(min_value=0, max_value=9)
)


@given(st.sampled_from(sorted(REMOVED_FLAGS)), _RELEASES)
def test_no_release_before_the_removal_loses_the_flag(dest, release):
    row = gone_in(dest, release)
    first_without = parse_version(REMOVED_FLAGS[dest].first_without)
    assert (row is not None) == (parse_version(release) >= first_without)
    assert gone_in(dest, "not a release") is None
