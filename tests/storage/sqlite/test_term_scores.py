"""The keyword channels' per-term bm25 shares kept between read snapshots (storage/sqlite/term_scores.py):
the channels' hits equal FTS5's own OR ranking bit for bit, a kept answer is reused only while the
index and the scopes are unchanged, and a read inside a write keeps nothing."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cpersona.retrieval.match_query import query_terms
from cpersona.storage.scope import Scope
from cpersona.storage.sqlite.keyword import SqliteKeywordSearch
from cpersona.storage.sqlite.store import SqliteStore
from cpersona.storage.values import NewMemory

NOW = "2026-01-01T00:00:00.000000Z"
WORDS = [
    "melanie",
    "caroline",
    "pottery",
    "kiln",
    "parade",
    "painting",
    "camping",
    "support",
    "group",
    "the",
    "and",
    "of",
    "sunrise",
    "lake",
]
QUESTIONS = [
    "What did Melanie paint at the lake?",
    "pottery kiln",
    "When did Caroline go to the support group?",
    "camping sunrise painting parade",
    "absent words only",
]
_SERIAL = itertools.count()  # keeps every inserted text unique across hypothesis examples


def _memory(text: str, agent: str = "a", project: str = "") -> NewMemory:
    return NewMemory(agent, project, "", "", text, None, None, NOW, NOW, None, None, None)


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    store = SqliteStore(tmp_path / "ts.db")
    rng = random.Random(7)
    with store.write() as s:
        for i in range(160):
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 14)))
            s.memories.insert(
                _memory(f"{text} {i}", agent="a" if i % 4 else "b", project="" if i % 5 else "p")
            )
    yield store
    store.close()


def _both(store: SqliteStore, question: str, scope: Scope, budget: int = 300) -> None:
    terms = query_terms(question)
    with store.read() as s:
        kept = SqliteKeywordSearch(s.conn, budget, store.term_counts, store.term_scores)
        fresh = SqliteKeywordSearch(s.conn, budget)
        for limit in (1, 10, 30):
            assert kept.memories(terms, scope, limit) == fresh.memories(terms, scope, limit), question
            assert kept.memories_words(terms, scope, limit) == fresh.memories_words(terms, scope, limit)


def test_hits_equal_the_or_query_in_every_scope(store: SqliteStore) -> None:
    for _ in range(2):  # the second round reads every share from the first
        for question in QUESTIONS:
            for scope in (
                Scope("a"),
                Scope("b"),
                Scope("a", "p"),
                Scope(None),
                Scope("a", agents=frozenset()),
            ):
                _both(store, question, scope)
                _both(store, question, scope, budget=25)  # terms over budget: the fill path beside it


def _bm25_statements(store: SqliteStore, question: str) -> list[str]:
    conn = store.db.connection()
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    try:
        with store.read() as s:
            s.keyword.memories(query_terms(question), Scope("a"), 10)
    finally:
        conn.set_trace_callback(None)
    return [sql for sql in seen if "bm25(" in sql]


def test_a_kept_share_is_reused_only_while_index_and_scopes_are_unchanged(store: SqliteStore) -> None:
    question = "pottery kiln"
    assert _bm25_statements(store, question)  # first read: each term read once
    assert _bm25_statements(store, question) == []  # same snapshot state: nothing read again
    with store.write() as s:
        s.memories.mark_recalled([1, 2], NOW)  # neither content nor scope: shares stand
    assert _bm25_statements(store, question) == []
    moved = next(
        rid
        for rid, row in store.session().memories.get_many(list(range(1, 161)), Scope("b")).items()
        if "pottery" in row["content"]
    )
    with store.write() as s:
        s.conn.execute("UPDATE memories SET agent_id = 'a' WHERE id = ?", (moved,))  # a scope move
    assert _bm25_statements(store, question)  # the change log moved: read again
    _both(store, question, Scope("a"))
    _both(store, question, Scope("b"))
    with store.write() as s:
        s.memories.insert(_memory("pottery pottery kiln"))
    assert _bm25_statements(store, question)  # the index changed
    _both(store, question, Scope("a"))


def test_a_read_inside_a_write_neither_uses_nor_fills_the_kept_shares(store: SqliteStore) -> None:
    with store.write() as w:
        w.memories.insert(_memory("pottery pottery pottery"))
        with store.read() as s:
            assert s.keyword.term_scores is None
            s.keyword.memories(query_terms("pottery"), Scope("a"), 10)
    assert _bm25_statements(store, "pottery")  # nothing was kept from inside the write
    _both(store, "pottery", Scope("a"))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    question=st.sampled_from(QUESTIONS),
    edits=st.lists(st.sampled_from(["pottery kiln", "melanie parade lake", "the and of"]), max_size=3),
    deletes=st.lists(st.integers(min_value=1, max_value=160), max_size=2),
    budget=st.sampled_from([3, 40, 300]),
)
def test_channel_hits_equal_ranking_afresh_after_any_writes(
    store: SqliteStore, question: str, edits: list[str], deletes: list[int], budget: int
) -> None:
    _both(store, question, Scope("a"), budget)
    with store.write() as s:
        for text in edits:
            s.memories.insert(_memory(f"{text} {next(_SERIAL)}"))
        for rid in deletes:
            s.memories.delete(rid)
    for _ in range(2):
        _both(store, question, Scope("a"), budget)
        _both(store, question, Scope(None), budget)


def test_a_share_read_walks_the_term_rows_not_the_scope(store: SqliteStore) -> None:
    """The one-phrase reads have no ORDER BY: left alone, SQLite walks the agent's rows by the scope
    index and probes MATCH for each (O(corpus)); the plan must start from the FTS5 table."""
    conn = store.db.connection()
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    try:
        with store.read() as s:
            s.keyword.memories(query_terms("pottery kiln"), Scope("a", "p"), 10)
            s.keyword.memories_words(query_terms("pottery kiln"), Scope("a"), 10)
    finally:
        conn.set_trace_callback(None)
    reads = [sql for sql in seen if "bm25(" in sql]
    assert len(reads) >= 4
    for sql in reads:
        plan = [str(r[3]) for r in conn.execute(f"EXPLAIN QUERY PLAN {sql}")]
        assert plan[0].startswith("SCAN memories_"), plan
        assert all("memories_scope" not in step for step in plan), plan
