"""The keyword channels' term counts kept between read snapshots (storage/sqlite/term_counts.py): the
counts and the channels' hits always equal counting afresh, a count is reused only while the FTS5 index
is unchanged, and a read inside a write (whose pending rows the index already shows) keeps nothing."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cpersona.retrieval.match_query import query_terms
from cpersona.storage.scope import Scope
from cpersona.storage.sqlite.keyword import SqliteKeywordSearch, capped_counts
from cpersona.storage.sqlite.store import SqliteStore
from cpersona.storage.sqlite.term_counts import TermCounts, structure
from cpersona.storage.values import NewMemory

NOW = "2026-01-01T00:00:00.000000Z"
TABLES = ("memories_fts", "memories_words")
TERMS = ["pottery", "kiln", "melanie", "parade", "absent"]
_SERIAL = itertools.count()  # keeps every inserted text unique across hypothesis examples


def _memory(text: str, agent: str = "a") -> NewMemory:
    return NewMemory(agent, "", "", "", text, None, None, NOW, NOW, None, None, None)


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    store = SqliteStore(tmp_path / "tc.db")
    with store.write() as s:
        for i in range(12):
            s.memories.insert(
                _memory(f"Melanie: pottery class {i}" if i % 3 else f"Caroline: the parade {i}")
            )
    yield store
    store.close()


def _fresh(store: SqliteStore, table: str, cap: int = 301) -> list[int]:
    with store.db.read() as conn:
        return capped_counts(conn, table, TERMS, cap)


def _kept(store: SqliteStore, table: str, cap: int = 301) -> list[int]:
    with store.read() as s:
        return capped_counts(s.conn, table, TERMS, cap, store.term_counts)


def test_kept_counts_follow_every_kind_of_write(store: SqliteStore) -> None:
    """Insert, content edit and delete between reads: the kept counts are the fresh ones each time."""
    steps = [
        lambda s: s.memories.insert(_memory("a kiln for the pottery")),
        lambda s: s.memories.update_content(1, "the kiln is hot"),
        lambda s: s.memories.delete(2),
        lambda s: s.memories.insert(_memory("pottery kiln parade", agent="b")),
        lambda s: s.episodes.newest_boundary(Scope("a")),  # a read in a write: nothing changes
    ]
    for table in TABLES:
        assert _kept(store, table) == _fresh(store, table)
    for step in steps:
        with store.write() as s:
            step(s)
        for table in TABLES:
            assert _kept(store, table) == _fresh(store, table), (table, step)
            assert _kept(store, table, cap=2) == _fresh(store, table, cap=2)


def test_a_count_is_reused_only_while_the_index_is_unchanged(store: SqliteStore) -> None:
    calls: list[str] = []
    kept = TermCounts()

    def counts() -> list[int]:
        with store.db.read() as conn:

            def count(term: str) -> int:
                calls.append(term)
                return capped_counts(conn, "memories_fts", [term], 301)[0]

            return kept.counts(conn, "memories_fts", TERMS, 301, count)

    first = counts()
    assert calls == TERMS
    calls.clear()
    assert counts() == first and calls == []  # same index: nothing counted again
    with store.db.read() as conn:
        before = structure(conn, "memories_fts")
    with store.write() as s:
        s.memories.mark_recalled([1], NOW)  # not a content change: the FTS5 index is untouched
    with store.db.read() as conn:
        assert structure(conn, "memories_fts") == before
    assert counts() == first and calls == []
    with store.write() as s:
        s.memories.insert(_memory("one more pottery row"))
    assert counts() == [first[0] + 1, *first[1:]]
    assert calls == TERMS  # the index changed: every term counted again


def test_a_read_inside_a_write_neither_uses_nor_fills_the_kept_counts(store: SqliteStore) -> None:
    with store.read() as s:
        assert s.keyword.term_counts is store.term_counts
        capped_counts(s.conn, "memories_fts", TERMS, 301, store.term_counts)
    with store.write() as w:
        w.memories.insert(_memory("pottery pottery"))
        with store.read() as s:
            assert s.keyword.term_counts is None
            # the uncommitted row is already in this transaction's MATCH results
            assert capped_counts(s.conn, "memories_fts", ["pottery"], 301) == [_fresh_in(w.conn)]
    assert _kept(store, "memories_fts") == _fresh(store, "memories_fts")


def _fresh_in(conn: object) -> int:
    return capped_counts(conn, "memories_fts", ["pottery"], 301)[0]  # type: ignore[arg-type]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    question=st.sampled_from(
        ["pottery kiln", "What did Melanie do at the parade?", "kiln Caroline pottery class", "absent words"]
    ),
    edits=st.lists(st.sampled_from(["pottery kiln", "melanie parade", "class 3"]), max_size=3),
    budget=st.sampled_from([1, 3, 300]),
)
def test_channel_hits_equal_counting_afresh(
    store: SqliteStore, question: str, edits: list[str], budget: int
) -> None:
    with store.write() as s:
        for text in edits:
            s.memories.insert(_memory(f"{text} {next(_SERIAL)}"))
    terms = query_terms(question)
    scope = Scope("a")
    for _ in range(2):  # the second read reuses the first one's counts
        with store.read() as s:
            cached = SqliteKeywordSearch(s.conn, budget, store.term_counts)
            fresh = SqliteKeywordSearch(s.conn, budget)
            assert cached.memories(terms, scope, 10) == fresh.memories(terms, scope, 10)
            assert cached.memories_words(terms, scope, 10) == fresh.memories_words(terms, scope, 10)
