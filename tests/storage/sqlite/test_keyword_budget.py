"""The keyword channels' row budget: common terms dropped for rarer ones, bounded rows, same ranking when
the dropped terms carry ~zero idf, the LIKE stand-in untouched, and any agent text safe."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cpersona.retrieval.match_query import query_terms
from cpersona.storage.scope import Scope
from cpersona.storage.sqlite.keyword import SqliteKeywordSearch, capped_counts, plan_terms
from cpersona.storage.sqlite.store import SqliteStore
from cpersona.storage.values import NewMemory, QueryTerms

NOW = "2026-01-01T00:00:00.000000Z"
SCOPE = Scope("a")
UNBOUNDED = 10**9  # a budget no test corpus reaches: the plain, unpruned FTS5 ranking

# 60 rows: "2023" in every one and "melanie" in 40 (both idf ~0 for bm25), "pottery" in 6, "kiln" in 5.
ROWS = (
    [f"[May 2023] Melanie: pottery class number {i} went well" for i in range(3)]
    + [f"[May 2023] Melanie: the kiln fired pottery batch {i}" for i in range(3)]
    + [f"[June 2023] Melanie: a quiet day, note {i}" for i in range(34)]
    + [f"[July 2023] Caroline: the parade was loud, entry {i}" for i in range(18)]
    + [f"[July 2023] Caroline: kiln talk with a friend {i}" for i in range(2)]
)


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    store = SqliteStore(tmp_path / "kw.db")
    with store.write() as s:
        for text in ROWS:
            s.memories.insert(NewMemory("a", "", "", "", text, None, None, NOW, NOW, None, None, None))
        s.memories.insert(
            NewMemory(
                "b", "", "", "", "other agent: pottery kiln 2023", None, None, NOW, NOW, None, None, None
            )
        )
    yield store
    store.close()


def _search(store: SqliteStore, budget: int) -> SqliteKeywordSearch:
    return SqliteKeywordSearch(store.session().conn, budget)


def test_counts_stop_at_the_cap(store: SqliteStore) -> None:
    conn = store.session().conn
    assert capped_counts(conn, "memories_words", ["2023", "pottery", "kiln", "absent"], 1000) == [61, 7, 6, 0]
    assert capped_counts(conn, "memories_words", ["2023", "pottery"], 10) == [10, 7]


def test_a_term_in_most_rows_is_dropped_when_rarer_terms_exist(store: SqliteStore) -> None:
    conn = store.session().conn
    plan = plan_terms(conn, "memories_words", ["2023", "melanie", "pottery", "absent"], budget=20)
    assert plan.kept == ("pottery",) and plan.dropped == ("2023", "melanie") and not plan.bounded
    # the rarest first: with room for both rare terms, both stay; query order is kept
    plan = plan_terms(conn, "memories_words", ["kiln", "2023", "pottery"], budget=14)
    assert plan.kept == ("kiln", "pottery") and plan.dropped == ("2023",)
    # a budget the corpus never reaches keeps every term that has a row
    plan = plan_terms(conn, "memories_fts", ["2023", "melanie", "absent"], budget=UNBOUNDED)
    assert plan.kept == ("2023", "melanie") and plan.dropped == ()


def test_results_equal_the_unpruned_ranking_when_dropped_terms_carry_no_idf(store: SqliteStore) -> None:
    # "2023" is in every row and "melanie" in 2/3 of them: bm25 gives both ~zero idf, so ranking by the
    # rare terms alone orders the rare-term rows exactly as the full query does.
    terms = query_terms("What pottery did Melanie fire in the kiln in 2023?")
    assert "2023" in terms.words and "melanie" in terms.words
    for channel in ("memories", "memories_words"):
        full = _search(store, UNBOUNDED)
        unpruned = getattr(full, channel)(terms, SCOPE, 8)  # the 8 rows holding a rare term
        small = _search(store, 20)  # room for "fire", "pottery" and "kiln", not "melanie" or "2023"
        pruned = getattr(small, channel)(terms, SCOPE, 8)
        assert pruned.method == unpruned.method == "fts"
        assert [i for i, _ in pruned.hits] == [i for i, _ in unpruned.hits], channel
        for (_, a), (_, b) in zip(pruned.hits, unpruned.hits, strict=True):
            assert a == pytest.approx(b, rel=1e-3)


def test_a_short_rare_list_is_filled_with_rows_of_the_dropped_terms(store: SqliteStore) -> None:
    terms = QueryTerms((), (), ("melanie", "kiln"))
    small = _search(store, 8)  # room for "kiln" (6 rows), not "melanie" (40)
    hits = small.memories_words(terms, SCOPE, 10).hits
    assert len(hits) == 10
    kiln = [i for i, score in hits if score > 0]
    assert len(kiln) == 5  # bm25 over the kept rare term first ...
    assert all(score == 0.0 for _, score in hits[5:])  # ... then the newest rows holding only a dropped one
    assert [i for i, _ in hits[5:]] == sorted((i for i, _ in hits[5:]), reverse=True)


def test_a_query_of_only_common_terms_still_returns_rows(store: SqliteStore) -> None:
    terms = query_terms("kiln 2023")
    small = _search(store, 3)  # both terms over budget: the newest matches, most terms first
    for hits in (small.memories(terms, SCOPE, 4), small.memories_words(terms, SCOPE, 4)):
        assert hits.method == "fts"
        assert hits.hits == [(60, 2.0), (59, 2.0), (58, 1.0), (57, 1.0)]
    # another agent's rows never leak in, whatever the budget
    ids = {i for i, _ in small.memories(query_terms("pottery kiln"), SCOPE, 50).hits}
    assert ids == {1, 2, 3, 4, 5, 6, 59, 60}


def test_the_like_stand_in_still_works(store: SqliteStore) -> None:
    small = _search(store, 5)
    # no term of three characters: MATCH cannot run
    hits = small.memories(QueryTerms((), ("25",), ()), SCOPE, 5)
    assert hits.method == "none" or hits.method == "like"
    hits = small.memories(query_terms("No 12"), SCOPE, 5)
    assert hits.method == "like" and hits.hits
    # MATCH finds nothing for any term: the LIKE pass is asked (and finds nothing either)
    assert small.memories(query_terms("zebra quokka"), SCOPE, 5).method == "like"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=200), budget=st.integers(min_value=1, max_value=80))
def test_any_agent_text_is_safe_under_any_budget(store: SqliteStore, text: str, budget: int) -> None:
    terms = query_terms(text.replace("\x00", ""))
    search = _search(store, budget)
    for hits in (
        search.memories(terms, SCOPE, 10),
        search.memories_words(terms, SCOPE, 10),
        search.episodes(terms, SCOPE, 10),
    ):
        assert hits.method in ("fts", "like", "none")
        assert len(hits.hits) <= 10 and len({i for i, _ in hits.hits}) == len(hits.hits)
