"""PostgreSQL's keyword postings and row counts stay exactly what the rows say, whatever writes run.

The triggers of PG migration 4 keep ``memory_tokens`` / ``episode_tokens`` (one posting per
distinct token of a row), ``keyword_vocab`` and the per-scope row counts in the writers' own
transactions (storage/postgres/postings.py, counts.py), and since migration 12 the posted
lengths per scope (lengths.py). After any sequence of stores, bulk imports, content edits,
moves between agents and channels, deletes and truncation, the postings must equal the ones
computed afresh from the rows, the counts the rows per scope, and the lengths the rows per
scope that hold a token; nothing may wait for or deadlock with another writer.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pg_cluster import PgCluster

from cpersona.errors import DuplicateRow
from cpersona.storage.port_records import ImportedMemory
from cpersona.storage.postgres.store import PgStore
from cpersona.storage.scope import Scope
from cpersona.storage.values import NewEpisode, NewMemory

pytestmark = pytest.mark.slow

AGENTS = ("a", "b")
CHANNELS = ("", "slack")
WORDS = (
    "Caroline",
    "painted",
    "painting",
    "the",
    "e-mail",
    "東京タワー",
    "2023",
    "x.com/path",
    "foo_bar",
    "run",
)


@pytest.fixture(scope="module")
def store(pg_cluster: PgCluster) -> Iterator[PgStore]:
    url = pg_cluster.create()
    pg = PgStore(url)
    yield pg
    pg.close()
    pg_cluster.drop(url)


def _expected_minus_actual(conn: psycopg.Connection, table: str, postings: str, rid: str, text: str) -> int:
    fresh = (
        f"SELECT x.lexeme AS token, r.agent_id, r.id AS {rid}, r.project_id, r.channel, "
        "cardinality(x.positions) AS n, GREATEST(char_length(r.body) - 2, 1) AS dl, "
        "(SELECT sum(cardinality(y.positions)) FROM unnest(r.tv) y)::int AS dw "
        f"FROM (SELECT s.*, {text} AS body, cpersona_posted_tsv({text}) AS tv "
        f"FROM {table} s) r, unnest(r.tv) x"
    )
    columns = f"token, agent_id, {rid}, project_id, channel, n, dl, dw"
    missing = conn.execute(
        f"SELECT count(*) FROM (({fresh}) EXCEPT ALL (SELECT {columns} FROM {postings})) d"
    )
    extra = conn.execute(f"SELECT count(*) FROM ((SELECT {columns} FROM {postings}) EXCEPT ALL ({fresh})) d")
    return int(missing.fetchone()[0]) + int(extra.fetchone()[0])


def _assert_consistent(store: PgStore) -> None:
    with psycopg.connect(store.url, autocommit=True) as conn:
        assert _expected_minus_actual(conn, "memories", "memory_tokens", "memory_id", "s.content") == 0
        assert (
            _expected_minus_actual(
                conn, "episodes", "episode_tokens", "episode_id", "s.summary || ' ' || s.keywords"
            )
            == 0
        )
        unknown = conn.execute(
            "SELECT count(*) FROM memory_tokens p WHERE NOT EXISTS (SELECT 1 FROM keyword_vocab v WHERE v.token = p.token)"
        )
        assert int(unknown.fetchone()[0]) == 0
        for table, counts in (("memories", "memory_counts"), ("episodes", "episode_counts")):
            rows = conn.execute(
                f"SELECT agent_id, project_id, channel, count(*) FROM {table} GROUP BY 1, 2, 3 "
                f"EXCEPT SELECT agent_id, project_id, channel, sum(rows) FROM {counts} GROUP BY 1, 2, 3 "
                "HAVING sum(rows) <> 0"
            ).fetchall()
            back = conn.execute(
                f"SELECT agent_id, project_id, channel, sum(rows) FROM {counts} GROUP BY 1, 2, 3 HAVING sum(rows) <> 0 "
                f"EXCEPT SELECT agent_id, project_id, channel, count(*) FROM {table} GROUP BY 1, 2, 3"
            ).fetchall()
            assert rows == [] and back == [], (table, rows, back)
        for table, lengths, text in (
            ("memories", "memory_lengths", "s.content"),
            ("episodes", "episode_lengths", "s.summary || ' ' || s.keywords"),
        ):
            fresh = (
                "SELECT agent_id, project_id, channel, count(*) AS posted, "
                f"sum(GREATEST(char_length({text}) - 2, 1)) AS dl, sum((SELECT sum(cardinality(y.positions)) "
                f"FROM unnest(cpersona_posted_tsv({text})) y)) AS dw "
                f"FROM {table} s WHERE length(cpersona_posted_tsv({text})) > 0 GROUP BY 1, 2, 3"
            )
            kept = (
                "SELECT agent_id, project_id, channel, sum(posted), sum(dl), sum(dw) "
                f"FROM {lengths} GROUP BY 1, 2, 3 HAVING sum(posted) <> 0 OR sum(dl) <> 0 OR sum(dw) <> 0"
            )
            missing = conn.execute(f"({fresh}) EXCEPT ({kept})").fetchall()
            extra = conn.execute(f"({kept}) EXCEPT ({fresh})").fetchall()
            assert missing == [] and extra == [], (lengths, missing, extra)


def _memory(agent: str, channel: str, text: str, msg_id: str = "") -> NewMemory:
    return NewMemory(agent, "", channel, msg_id, text, None, None, "t", "t", None, None, None)


_text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)
_op = st.one_of(
    st.tuples(st.just("store"), st.sampled_from(AGENTS), st.sampled_from(CHANNELS), _text),
    st.tuples(
        st.just("import"), st.sampled_from(AGENTS), st.lists(_text, min_size=1, max_size=8)
    ),  # duplicates inside a batch and of earlier rows are refused by the unique indexes
    st.tuples(st.just("edit"), st.integers(0, 10**6), _text),
    st.tuples(st.just("move"), st.integers(0, 10**6), st.sampled_from(AGENTS), st.sampled_from(CHANNELS)),
    st.tuples(st.just("delete"), st.integers(0, 10**6)),
    st.tuples(st.just("delete_agent"), st.sampled_from(AGENTS)),
    st.tuples(st.just("episode"), st.sampled_from(AGENTS), _text, _text),
)


def _ids(store: PgStore) -> list[int]:
    with store.read() as s:
        return [int(r["id"]) for r in s.ex.all("SELECT id FROM memories ORDER BY id")]


def _apply(store: PgStore, op: tuple) -> None:
    kind = op[0]
    if kind == "store":
        with store.write() as s:
            if s.memories.find_duplicate(_memory(op[1], op[2], op[3])) is None:
                s.memories.insert(_memory(op[1], op[2], op[3]))
    elif kind == "import":
        store.portability_rows().write_batch(
            [ImportedMemory(_memory(op[1], "", t)) for t in op[2]], queued_at=None, active_model=None
        )
    elif kind == "episode":
        with store.write() as s:
            s.episodes.insert(
                NewEpisode(op[1], "", "", op[2], "\n".join(op[3].split()), None, None, False, "t")
            )
    elif kind == "delete_agent":
        with store.write() as s:
            s.ex.run("DELETE FROM memories WHERE agent_id = %s", (op[1],))
            s.ex.run("DELETE FROM episodes WHERE agent_id = %s", (op[1],))
    else:
        ids = _ids(store)
        if not ids:
            return
        target = ids[op[1] % len(ids)]
        with store.write() as s:
            if kind == "edit":
                with contextlib.suppress(DuplicateRow):  # a content clash in the scope is refused
                    s.memories.update_content(target, op[2])
            elif kind == "move":
                # The savepoint rolls back a move refused by a unique index (the suppress is outside it).
                with contextlib.suppress(psycopg.errors.UniqueViolation), s.ex.savepoint():
                    s.ex.run(
                        "UPDATE memories SET agent_id = %s, channel = %s WHERE id = %s",
                        (op[2], op[3], target),
                    )
            else:
                s.memories.delete(target)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(ops=st.lists(_op, min_size=1, max_size=25))
def test_postings_and_counts_equal_a_fresh_computation_after_any_writes(
    store: PgStore, ops: list[tuple]
) -> None:
    with store.write() as s:
        s.ex.run("TRUNCATE memories, episodes, memory_links, memory_blocks")
    _assert_consistent(store)
    for op in ops:
        _apply(store, op)
    _assert_consistent(store)


def test_searches_find_what_the_rows_hold(store: PgStore) -> None:
    """Substrings inside tokens, stems, CJK runs and e-mail parts match; hyphen and path parts match alone."""
    with store.write() as s:
        s.ex.run("TRUNCATE memories, episodes, memory_links, memory_blocks")
        for text in (
            "Caroline painted the fence",
            "e-mail from x.com/path",
            "東京タワーに行った。とても良い",
        ):
            s.memories.insert(_memory("a", "", text))
    from cpersona.retrieval.match_query import query_terms

    def found(query: str, words: bool = False) -> list[str]:
        with store.read() as s:
            search = s.keyword.memories_words if words else s.keyword.memories
            hits = search(query_terms(query), Scope("a"), 10).hits
            rows = s.memories.get_many([i for i, _ in hits])
            return [rows[i]["content"] for i, _ in hits]

    assert found("paint") == ["Caroline painted the fence"]
    assert found("aroli") == ["Caroline painted the fence"]  # a substring inside a word
    assert found("painting", words=True) == ["Caroline painted the fence"]  # same stem
    assert found("mail") == ["e-mail from x.com/path"]
    assert found("path") == ["e-mail from x.com/path"]
    assert found("タワー") == ["東京タワーに行った。とても良い"]
    assert found("zebra") == []


def test_concurrent_writers_never_wait_on_the_keyword_index(store: PgStore) -> None:
    """Eight writers store rows sharing every token, each in a transaction held open while the others
    write: none waits for another (no unique row to contend on), and the counts add up."""
    with store.write() as s:
        s.ex.run("TRUNCATE memories, episodes, memory_links, memory_blocks")
    barrier = threading.Barrier(8, timeout=30)
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            with store.write() as s:
                s.ex.run("SET LOCAL lock_timeout = '5s'")
                for k in range(20):
                    s.memories.insert(_memory("a", "", f"shared newword{k} caroline row {n}-{k}"))
                barrier.wait()  # every transaction is open and has written before any commits
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    _assert_consistent(store)
    with store.read() as s:
        assert s.ex.value("SELECT sum(rows) FROM memory_counts WHERE agent_id = 'a'") == 160
