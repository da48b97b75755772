"""recall's time_cue through real MCP clients (stdio and streamable HTTP): tools/list documents it,
a sure cue filters, a bad cue is ok: false with invalid_input, and a hypothesis property over
time_cue values (well-formed and not) never gets an internal error."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp_helpers import McpSession, transport_session

pytestmark = pytest.mark.slow

ROWS = [
    ("apple tart in May", "2023-05-08T13:56:00Z"),
    ("apple pie in March", "2024-03-01T10:00:00Z"),
    ("apple crumble in March", "2024-03-02T10:00:00Z"),
]


def seed(session: McpSession) -> None:
    for text, stamp in ROWS:
        out = session.call("store", {"agent_id": "t", "message": {"content": text, "timestamp": stamp}})
        assert out["ok"], out


@pytest.fixture(scope="module", params=["stdio", "http"])
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpSession]:
    with transport_session(request.param, tmp_path_factory.mktemp(f"timecue-{request.param}")) as session:
        seed(session)
        yield session


def test_tools_list_documents_every_time_cue_field(served: McpSession) -> None:
    tools = {t.name: t for t in served.list_tools().tools}
    for name in ("recall", "recall_with_context"):
        cue = tools[name].input_schema["properties"]["time_cue"]
        assert set(cue["properties"]) == {"start", "end", "phrase", "certainty", "now"}
        assert cue["properties"]["certainty"]["enum"] == ["sure", "likely", "vague"]
        assert all(field.get("description") for field in cue["properties"].values())


def test_a_sure_cue_filters_over_the_wire(served: McpSession) -> None:
    out = served.call(
        "recall",
        {
            "agent_id": "t",
            "query": "apple",
            "time_cue": {"start": "2023-05-01", "end": "2023-05-31", "certainty": "sure"},
        },
    )
    assert out["ok"] and [r["content"] for r in out["results"]] == ["apple tart in May"]
    assert out["time_cue"]["certainty"] == "sure"
    ctx = served.call(
        "recall_with_context",
        {
            "agent_id": "t",
            "query": "apple",
            "external_context": [],
            "time_cue": {"phrase": "in March 2024", "certainty": "sure"},
        },
    )
    assert ctx["ok"] and ctx["time_cue"]["start"] == "2024-03-01T00:00:00Z"


@pytest.mark.parametrize(
    "cue",
    [
        {"start": "2023-05-01", "certainty": "maybe"},
        {"start": "2023-06-01", "end": "2023-05-01"},
        {"phrase": "when pigs fly"},
        {"phrase": "last week", "start": "2023-01-01"},
        {"start": True},
        {"when": "now"},
        "last week",
        {},
    ],
)
def test_bad_cues_are_invalid_input_over_the_wire(served: McpSession, cue: Any) -> None:
    out = served.call("recall", {"agent_id": "t", "query": "apple", "time_cue": cue})
    assert out["ok"] is False and out["error_code"] == "invalid_input" and out["error"], out


@pytest.mark.parametrize(
    "cue",
    [
        {"start": "2020", "end": "9999"},  # the end of 9999 is year 10000 (issue 36 point 3)
        {"end": "9999-12"},
        {"end": "9999-12-31", "certainty": "sure"},
        {"start": -(10**12)},  # before year 1
        {"phrase": "today", "now": 2**40},  # after year 9999
    ],
)
def test_cues_past_four_digit_years_are_invalid_input(served: McpSession, cue: Any) -> None:
    out = served.call("recall", {"agent_id": "t", "query": "apple", "time_cue": cue})
    assert out["ok"] is False and out["error_code"] == "invalid_input" and "out of range" in out["error"], out


def test_times_before_year_1000_are_stored_padded_and_found_by_a_sure_cue(served: McpSession) -> None:
    # -49_000_000_000 s is 0417-04-…; it used to be stored "417-04-…", which sorts after "2000-…".
    old = served.call(
        "store", {"agent_id": "ancient", "message": {"content": "a Roman coin", "timestamp": -49e9}}
    )
    assert old["ok"], old
    listed = served.call("get_contents", {"agent_id": "ancient", "refs": [old["ref"]]})
    assert listed["ok"] and listed["items"][0]["timestamp"].startswith("0417-"), listed
    for cue in (
        {"start": "0001", "end": "2000", "certainty": "sure"},
        {"start": -60e9, "end": -40e9, "certainty": "sure"},  # Unix seconds before year 1000
        {"phrase": "yesterday", "now": -49e9, "certainty": "likely"},
    ):
        out = served.call("recall", {"agent_id": "ancient", "query": "coin", "time_cue": cue})
        assert out["ok"], (cue, out)
        assert [r["id"] for r in out["results"]] == [old["id"]], (cue, out)


def when(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text.replace("Z", "+00:00"))


stamps = st.one_of(
    st.sampled_from(
        ["2023-05-01", "2023-05", "2023", "2024-03-01T10:00:00+09:00", "9999-12-31", "0001-01-01", ""]
    ),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.booleans(),
    st.none(),
)
phrases = st.one_of(
    st.sampled_from(
        ["last week", "yesterday", "in May 2023", "先週", "昨日", "2023年5月", "3 days ago", "soon"]
    ),
    st.text(max_size=30),
    st.integers(),
)
cues = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "start": stamps,
            "end": stamps,
            "phrase": phrases,
            "certainty": st.one_of(st.sampled_from(["sure", "likely", "vague", "SURE", ""]), st.integers()),
            "now": stamps,
        },
    ),
    st.text(max_size=10),
    st.lists(st.integers(), max_size=2),
    st.integers(),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cue=cues, query=st.sampled_from(["apple", "", "apple in May 2023", "先週のapple"]))
def test_any_time_cue_is_answered_without_an_internal_error(served: McpSession, cue: Any, query: str) -> None:
    out = served.call("recall", {"agent_id": "t", "query": query, "time_cue": cue})
    if out["ok"]:
        assert isinstance(out["results"], list)
        if isinstance(cue, dict) and cue.get("certainty") == "sure" and "time_cue" in out:
            start, end = (when(out["time_cue"][k]) for k in ("start", "end"))
            for row in out["results"]:  # sure: every row inside the echoed period
                stamp = when(row["timestamp"])
                assert stamp is not None
                assert (start is None or stamp >= start) and (end is None or stamp < end), (row, out)
    else:
        assert out["error_code"] == "invalid_input" and out["error"], out
