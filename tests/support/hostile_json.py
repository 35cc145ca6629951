"""Hypothesis strategies for hostile JSON: deep nesting, huge numbers, wrong types.

from support.hostile_json import hostile_values, hostile_object_text, deep_nesting
"""

from __future__ import annotations

import json

from hypothesis import strategies as st

HUGE_NUMBER_TEXTS = ("1" + "0" * 400, "-" + "9" * 320, "1e400", "-1e999", "1e308", "NaN",
                     "Infinity", "-Infinity", "0.0000000000000000001")  # fmt: skip

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
hostile_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


def deep_nesting(levels: int, opener: str = "[") -> str:
    closer = {"[": "]", "{": "}"}[opener]
    if opener == "{":
        return '{"a":' * levels + "1" + closer * levels
    return opener * levels + closer * levels


def json_with_raw(fields: dict[str, object], raw: dict[str, str]) -> str:
    """A JSON object text with `fields` plus `raw` values inserted verbatim (huge numbers,
    NaN, thousands of brackets) that json.dumps would refuse or rewrite."""
    body = json.dumps(fields)[1:-1]
    extra = ",".join(f"{json.dumps(k)}:{v}" for k, v in raw.items())
    inner = ",".join(part for part in (body, extra) if part)
    return "{" + inner + "}"


def hostile_field_values() -> st.SearchStrategy[str]:
    """A raw JSON text for one field: a wrong type, a huge number or deep nesting."""
    return st.one_of(
        hostile_values.map(json.dumps),
        st.sampled_from(HUGE_NUMBER_TEXTS),
        st.integers(min_value=900, max_value=5000).map(deep_nesting),
        st.integers(min_value=900, max_value=3000).map(lambda n: deep_nesting(n, "{")),
    )
