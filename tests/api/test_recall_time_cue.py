"""recall(time_cue=...) through the Python API on both engines: sure filters the candidate pool,
likely/vague boost without hiding the plain best match, the in-query date reader, bad input."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from pg_cluster import BOTH_ENGINES

from cpersona.core.text import parse_ts, utc_now
from cpersona.errors import InvalidInput
from cpersona.memory import Memory
from cpersona.retrieval.pipeline import RecallPipeline
from cpersona.retrieval.time_cue import FACTOR, WEIGHT
from cpersona.storage.scope import Scope

pytestmark = BOTH_ENGINES

MAY_2023 = {"start": "2023-05-01", "end": "2023-05-31"}


def seed(memory: Memory) -> tuple[list[int], list[int]]:
    """60 strong 'apple' rows in 2024 and 2 weak ones in May 2023: more strong rows than any
    channel's depth, so the plain ranking never even reads the May rows."""
    strong = [
        memory.store(
            "a", f"apple apple apple orchard report {i}", timestamp=f"2024-03-{1 + i % 28:02d}T10:00:00Z"
        )["id"]
        for i in range(60)
    ]
    weak = [
        memory.store("a", "notes on the apple tart we baked", timestamp="2023-05-08T13:56:00Z")["id"],
        memory.store("a", "an apple and a long walk by the sea afterwards", timestamp="2023-05-20T09:00:00Z")[
            "id"
        ],
    ]
    return strong, weak


def ids(out: dict) -> list[int]:
    return [r["id"] for r in out["results"] if r["type"] == "memory"]


def test_sure_keeps_only_the_period_even_when_other_periods_dominate(memory: Memory) -> None:
    strong, weak = seed(memory)
    plain = memory.recall("a", "apple", limit=5)
    assert not set(ids(plain)) & set(weak)  # the plain ranking never reaches May 2023
    out = memory.recall("a", "apple", limit=5, time_cue={**MAY_2023, "certainty": "sure"})
    assert out["ok"] and sorted(ids(out)) == sorted(weak)
    assert out["time_cue"] == {
        "start": "2023-05-01T00:00:00Z",
        "end": "2023-06-01T00:00:00Z",
        "certainty": "sure",
        "origin": "caller",
    }
    for row in out["results"]:
        assert FACTOR not in row["match_reason"]["factors"]  # a filter, not a factor
    # A period with nothing in it: nothing, not the rest.
    empty = memory.recall(
        "a", "apple", time_cue={"start": "2022-01-01", "end": "2022-12-31", "certainty": "sure"}
    )
    assert empty["ok"] and empty["results"] == []


def test_sure_applies_to_an_empty_query_and_to_stored_time_when_none_was_given(memory: Memory) -> None:
    _, weak = seed(memory)
    listing = memory.recall("a", "", limit=10, time_cue={**MAY_2023, "certainty": "sure"})
    assert sorted(ids(listing)) == sorted(weak)
    fresh = memory.store("a", "apple crumble, no timestamp given")["id"]  # timestamp = the time stored
    today = memory.recall("a", "apple", time_cue={"phrase": "today", "certainty": "sure"})
    assert ids(today) == [fresh]


@pytest.mark.parametrize("certainty", ["likely", "vague"])
def test_a_boost_lifts_the_period_and_keeps_the_plain_best(memory: Memory, certainty: str) -> None:
    for i in range(6):
        memory.store("a", f"apple harvest log {i}", timestamp=f"2024-03-{1 + i:02d}T10:00:00Z")
    may = memory.store("a", "apple harvest log from the spring", timestamp="2023-05-08T13:56:00Z")["id"]
    for i in range(3):  # the floor of each channel's min-max: a multiplicative boost cannot lift a 0
        memory.store("a", f"a log of the weather {i}", timestamp=f"2024-04-{1 + i:02d}T10:00:00Z")
    plain = memory.recall("a", "apple harvest log", limit=10, record=False)
    plain_order = ids(plain)  # worst → best
    out = memory.recall(
        "a", "apple harvest log", limit=10, record=False, time_cue={**MAY_2023, "certainty": certainty}
    )
    order = ids(out)
    assert sorted(order) == sorted(plain_order)  # nothing hidden, nothing added
    before = plain["results"][plain_order.index(may)]["match_reason"]
    boosted = out["results"][order.index(may)]["match_reason"]
    assert boosted["factors"][FACTOR] > 1.0
    assert boosted["score"] == pytest.approx(before["score"] * boosted["factors"][FACTOR], rel=1e-4)
    if certainty == "likely":
        assert order.index(may) > plain_order.index(may)  # lifted past rows of other periods
    others = [r["match_reason"]["factors"].get(FACTOR, 1.0) for r in out["results"] if r["id"] != may]
    assert max(others) < boosted["factors"][FACTOR]  # rows months away gain less (likely: ~nothing)
    if certainty == "likely":
        assert max(others) < 1.01
    assert math.isclose(math.prod(boosted["factors"].values()), boosted["score"], rel_tol=1e-4, abs_tol=1e-5)
    scores = [r["match_reason"]["score"] for r in out["results"]]
    assert scores == sorted(scores)  # still worst → best by the final score
    # limit 1: the plain best stays, however strong the boost of the period.
    top = memory.recall(
        "a", "apple harvest log", limit=1, record=False, time_cue={**MAY_2023, "certainty": "likely"}
    )
    assert ids(top) == [plain_order[-1]] or plain_order[-1] == may


def test_the_query_reader_boosts_like_likely_and_can_be_turned_off(memory: Memory) -> None:
    for i in range(6):
        memory.store("a", f"apple harvest log {i}", timestamp=f"2024-03-{1 + i:02d}T10:00:00Z")
    may = memory.store("a", "apple harvest log from the spring", timestamp="2023-05-08T13:56:00Z")["id"]
    for i in range(3):  # the floor of each channel's min-max: a multiplicative boost cannot lift a 0
        memory.store("a", f"a log of the weather {i}", timestamp=f"2024-04-{1 + i:02d}T10:00:00Z")
    query = "apple harvest log in May 2023"
    out = memory.recall("a", query, limit=10, record=False)
    assert out["time_cue"]["origin"] == "query" and out["time_cue"]["certainty"] == "likely"
    assert out["time_cue"]["phrase"] == "may 2023"
    reason = out["results"][ids(out).index(may)]["match_reason"]
    assert reason["factors"][FACTOR] == pytest.approx(1 + WEIGHT["query"], abs=1e-6)  # the query's weight
    # A caller's cue wins over the query's phrase.
    mine = memory.recall("a", query, record=False, time_cue={"start": "2024-03-01", "end": "2024-03-01"})
    assert mine["time_cue"]["origin"] == "caller"
    memory.recaller.pipeline = RecallPipeline(memory.settings.with_overrides(query_dates=False))
    off = memory.recall("a", query, limit=10, record=False)
    assert "time_cue" not in off
    assert all(FACTOR not in r["match_reason"]["factors"] for r in off["results"])
    before = off["results"][ids(off).index(may)]["match_reason"]["score"]
    assert reason["score"] == pytest.approx(before * (1 + WEIGHT["query"]), rel=1e-4)


def test_sure_filters_episodes_by_their_span(memory: Memory) -> None:
    memory.store("a", "apple pie at the picnic", timestamp="2023-05-08T13:56:00Z")
    history = [{"role": "user", "content": "apple talk", "timestamp": "2024-03-01T10:00:00Z"}]
    memory.archive_episode("a", "we talked about apple pie", keywords=["apple"], history=history)
    out = memory.recall("a", "apple pie", time_cue={**MAY_2023, "certainty": "sure"})
    assert [r["type"] for r in out["results"]] == ["memory"]
    later = memory.recall(
        "a", "apple pie", time_cue={"start": "2024-03-01", "end": "2024-03-01", "certainty": "sure"}
    )
    assert [r["type"] for r in later["results"]] == ["episode"]


def test_recall_with_context_takes_the_cue(memory: Memory) -> None:
    _, weak = seed(memory)
    out = memory.recall_with_context("a", "apple", [], time_cue={**MAY_2023, "certainty": "sure"})
    assert out["ok"] and out["time_cue"]["certainty"] == "sure"
    assert sorted(i["id"] for i in out["items"] if i.get("type") == "memory") == sorted(weak)


@pytest.mark.parametrize(
    "cue",
    [
        {"start": "2023-05-01", "certainty": "maybe"},
        {"start": "2023-06-01", "end": "2023-05-01"},
        {"phrase": "the other day"},
        {"start": [1]},
        "May 2023",
    ],
)
def test_bad_cues_raise_invalid_input(memory: Memory, cue: object) -> None:
    # The Python API raises; the MCP layer answers ok: false (tests/server/test_mcp_time_cue.py).
    memory.store("a", "apple")
    with pytest.raises(InvalidInput) as caught:
        memory.recall("a", "apple", time_cue=cue)  # type: ignore[arg-type]
    assert caught.value.code == "invalid_input" and str(caught.value)


def test_row_times_are_what_the_filter_compares(memory: Memory) -> None:
    # The period's end is exclusive at the next day's first instant: 23:59:59.999999 is in, 00:00 is out.
    inside = memory.store("a", "apple late", timestamp="2023-05-31T23:59:59.999999Z")["id"]
    memory.store("a", "apple next", timestamp="2023-06-01T00:00:00Z")
    out = memory.recall("a", "apple", time_cue={**MAY_2023, "certainty": "sure"})
    assert ids(out) == [inside]
    assert parse_ts(out["results"][0]["timestamp"]) < utc_now()


def test_a_sure_cue_appends_no_profile(memory: Memory) -> None:
    seed(memory)  # 62 rows: past the pool size at which profiles are appended
    memory.update_profile("a", "likes apples")
    plain = memory.recall("a", "apple", limit=100)
    assert any(r["type"] == "profile" for r in plain["results"])
    out = memory.recall("a", "apple", limit=100, time_cue={**MAY_2023, "certainty": "sure"})
    assert all(r["type"] == "memory" for r in out["results"])


def test_the_period_query_keeps_to_the_scope(memory: Memory) -> None:
    mine = memory.store("a", "apple in May", timestamp="2023-05-08T10:00:00Z")["id"]
    memory.store("b", "apple in May too", timestamp="2023-05-08T10:00:00Z")
    memory.store("a", "apple in May, other project", timestamp="2023-05-08T10:00:00Z", project_id="p")
    with memory.storage.read() as session:
        assert session.memories.ids_in_period(Scope("a", ""), "2023-05-01T00:00:00.000000Z", None) == [mine]
        assert session.memories.ids_in_period(Scope("a", ""), None, "2023-05-08T10:00:00.000000Z") == []
    out = memory.recall("a", "apple", project_id="", time_cue={**MAY_2023, "certainty": "sure"})
    assert ids(out) == [mine]


def _bulk(path: Path, rows: list[tuple[str, str]]) -> Path:
    """An export file of memories of agent 'a' (content, timestamp), written without a database."""
    head = {
        "type": "header",
        "format": "cpersona-export",
        "version": 1,
        "exported_at": "2026-01-01T00:00:00Z",
        "source_schema_version": 1,
        "agent_id": "a",
        "include_embeddings": False,
        "embedding_model": None,
        "embedding_dim": None,
        "counts": {"memories": len(rows), "episodes": 0, "profiles": 0},
    }
    with path.open("w", encoding="utf-8") as out:
        out.write(json.dumps(head) + "\n")
        for content, stamp in rows:
            out.write(
                json.dumps({"type": "memory", "agent_id": "a", "content": content, "timestamp": stamp}) + "\n"
            )
    return path


@pytest.mark.slow
def test_sure_finds_the_period_under_2000_newer_matches_of_a_common_word(
    memory: Memory, tmp_path: Path
) -> None:
    # Issue 36 point 4: past the keyword row budget the channels took the newest matches and only
    # then applied the period, so the 2010 rows (written first) were never read.
    old = [(f"alpha note {n} from the archive", f"2010-06-{1 + n:02d}T10:00:00Z") for n in range(5)]
    new = [(f"alpha report number {n}", f"2024-03-{1 + n % 28:02d}T10:00:00Z") for n in range(2000)]
    memory.import_memories(str(_bulk(tmp_path / "rows.jsonl", old + new)), confined=False)
    cue = {"start": "2010", "end": "2010", "certainty": "sure"}
    out = memory.recall("a", "alpha", limit=10, time_cue=cue)
    assert sorted(r["content"] for r in out["results"]) == sorted(text for text, _ in old)
    words = memory.recall("a", "alpha archive", limit=10, time_cue=cue)  # a rarer word beside it
    assert {r["content"] for r in words["results"]} == {text for text, _ in old}
    assert len(memory.recall("a", "", limit=10, time_cue=cue)["results"]) == 5
