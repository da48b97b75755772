"""clean_json, the one JSON walker: its output always encodes, and clean data passes unchanged; and
json_field, which reads an agent's source / metadata."""

from __future__ import annotations

import json
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cpersona.core.text import LONE_SURROGATE, clean_json, clean_text, json_field
from cpersona.errors import InvalidInput

# Text as agents and decoders hand it over: lone surrogates and NUL bytes included.
AWKWARD = st.text(
    alphabet=st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff", "\x00", "a", "é", "😀", " "])
)
TEXT = st.one_of(st.text(max_size=20), AWKWARD)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    TEXT,
)
ODD = st.sampled_from([Path("/tmp/x\udc80"), Decimal("1.5"), b"bytes", object(), {1, 2}])
KEYS = st.one_of(TEXT, st.integers())


def json_like(leaves: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.tuples(inner, inner),
            st.dictionaries(KEYS, inner, max_size=4),
        ),
        max_leaves=20,
    )


def encodes(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")


def strings_in(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*strings_in(k), *strings_in(v))]
    if isinstance(value, list):
        return [s for v in value for s in strings_in(v)]
    return []


@given(json_like(st.one_of(SCALARS, ODD)))
def test_coerced_output_always_encodes_as_strict_utf8_json(value: Any) -> None:
    cleaned = clean_json(value, coerce=True)
    encodes(cleaned)  # raises on NaN, infinity, a lone surrogate or an object JSON cannot carry
    assert all(not LONE_SURROGATE.search(s) and "\x00" not in s for s in strings_in(cleaned))
    assert clean_json(cleaned, coerce=True) == cleaned  # a second pass changes nothing


@given(
    json_like(
        st.one_of(
            st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), TEXT
        )
    )
)
def test_finite_json_encodes_without_coercion(value: Any) -> None:
    encodes(clean_json(value))


CLEAN_TEXT = st.text(max_size=20).map(clean_text)


@given(
    st.recursive(
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(),
            st.floats(allow_nan=False, allow_infinity=False),
            CLEAN_TEXT,
        ),
        lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(CLEAN_TEXT, inner, max_size=4)),
        max_leaves=20,
    )
)
def test_clean_json_is_left_as_it_is(value: Any) -> None:
    assert clean_json(value) == value and clean_json(value, coerce=True) == value


def test_without_coercion_what_json_cannot_carry_is_left_for_the_encoder_to_refuse() -> None:
    kept = clean_json({"score": math.nan, "at": [math.inf], "k\ud800": ("x\x00",)})
    assert math.isnan(kept["score"]) and kept["at"] == [math.inf] and kept["k\ufffd"] == ["x"]
    coerced = clean_json({"score": math.nan, 3: Path("/a"), "at": (math.inf, 1.5)}, coerce=True)
    assert coerced == {"score": None, "3": "/a", "at": [None, 1.5]}


def test_a_bare_word_for_a_json_field_is_refused_with_the_shape_wanted() -> None:
    with pytest.raises(InvalidInput) as refused:
        json_field("user", "source", 4096)
    assert "source is not valid JSON" in str(refused.value)
    assert '{"type": "user"}' in str(refused.value)
    assert json_field('{"type": "user"}', "source", 4096) == '{"type": "user"}'
