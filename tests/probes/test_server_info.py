"""What a server says about itself: /v1/models and /version answers, odd ones included."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from headroom.doctor import DoctorInputs
from headroom.doctor.context import Context
from headroom.probes.server_info import info_from_answers

# The shape of vLLM's ModelCard list (the simulator serves the same keys).
MODELS = {
    "object": "list",
    "data": [
        {
            "id": "llama",
            "object": "model",
            "root": "/models/Llama-3.1-8B",
            "parent": None,
            "max_model_len": 32768,
            "owned_by": "vllm",
        },
        {"id": "lora-a", "object": "model", "root": "/adapters/a", "parent": "llama"},
    ],
}


def test_first_model_gives_root_and_max_model_len() -> None:
    info = info_from_answers("http://h:8000", MODELS, {"version": "0.32.0"}, None)
    assert info.model_ids == ("llama", "lora-a")
    assert (info.model_root, info.max_model_len, info.version) == (
        "/models/Llama-3.1-8B",
        32768,
        "0.32.0",
    )


def test_missing_and_wrong_types_are_none() -> None:
    odd = {"data": [{"id": "m", "max_model_len": "32768", "root": 5}, {"id": 3}]}
    info = info_from_answers("u", odd, {"version": ""}, "401")
    assert info.model_ids == ("m",) and info.max_model_len is None and info.model_root is None
    assert info.version is None and info.message == "401"
    assert info_from_answers("u", None, None, None).model_ids == ()
    assert (
        info_from_answers(
            "u", {"data": [{"id": "m", "max_model_len": True}]}, {}, None
        ).max_model_len
        is None
    )


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(json_values, json_values)
def test_any_json_never_raises(models, version) -> None:
    info = info_from_answers("u", models, version, None)
    assert info.max_model_len is None or info.max_model_len > 0


def test_the_doctor_reads_max_model_len_from_the_server() -> None:
    info = info_from_answers("u", MODELS, {"version": "0.32.0"}, None)
    assert Context(DoctorInputs()).knobs.max_model_len is None
    assert Context(DoctorInputs(extra={"server_info": info})).knobs.max_model_len == 32768
