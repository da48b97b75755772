"""A bulk-loaded store's keyword indexes are exactly those of the same rows stored one by one.

``write_batch`` indexes a batch's memories in one statement per index (SQLite: the insert
triggers are dropped and re-created inside the batch's transaction, storage/sqlite/bulk_fts.py;
PostgreSQL: one statement-level trigger pass per batch, and inside ``bulk_load()`` into an empty store
the postings' read index built once at the end). Whatever the batch path does, keyword
search must answer the same ids with the same scores as a store written row by row, duplicates
inside the batch and of earlier rows must still be refused, and a batch that fails half way must
leave neither rows nor index entries nor a changed schema behind.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from pg_cluster import PgCluster

from cpersona.retrieval.match_query import query_terms
from cpersona.storage import open_store
from cpersona.storage.interface import Store
from cpersona.storage.port_records import DUPLICATE, INSERTED, ImportedMemory
from cpersona.storage.scope import Scope
from cpersona.storage.sqlite import bulk_fts
from cpersona.storage.sqlite import portability as sqlite_portability
from cpersona.storage.sqlite.bulk_fts import MIN_DEFERRED_ROWS, OPTIMIZE_FROM_ROWS, optimize_after_bulk
from cpersona.storage.values import NewMemory

WORDS = (
    "Caroline",
    "painted",
    "painting",
    "fence",
    "東京タワー",
    "e-mail",
    "2023",
    "foo_bar",
    "runs",
    "blue",
)
QUERIES = ("paint", "aroli", "painting fence", "タワー", "mail", "2023", "foo_bar", "running", "blue fence")


def _texts(n: int) -> list[str]:
    # Deterministic, overlapping texts (shared terms give bm25 something to rank), a few repeated.
    out = []
    for k in range(n):
        words = [WORDS[(k * 7 + j * 3) % len(WORDS)] for j in range(1 + k % 5)]
        out.append(" ".join(words) + f" note {k % (n - 5)}")
    return out


def _memory(agent: str, text: str) -> NewMemory:
    return NewMemory(agent, "", "", "", text, None, None, "t", "t", None, None, None)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.slow)])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Store, Store]]:
    """(bulk-loaded, row-by-row) fresh stores on one engine."""
    if request.param == "sqlite":
        pair = (open_store(tmp_path / "bulk.db"), open_store(tmp_path / "rows.db"))
        yield pair
        for s in pair:
            s.close()
        return
    cluster: PgCluster = request.getfixturevalue("pg_cluster")
    urls = [cluster.create(), cluster.create()]
    pair = (open_store(urls[0]), open_store(urls[1]))
    yield pair
    for s, url in zip(pair, urls, strict=True):
        s.close()
        cluster.drop(url)


def _search(store: Store, query: str, words: bool) -> list[tuple[int, float]]:
    with store.read() as s:
        search = s.keyword.memories_words if words else s.keyword.memories
        return [(i, round(score, 9)) for i, score in search(query_terms(query), Scope("a"), 50).hits]


def test_bulk_loaded_keyword_search_equals_row_by_row(stores: tuple[Store, Store]) -> None:
    bulk, by_row = stores
    texts = _texts(3 * MIN_DEFERRED_ROWS)
    rows = bulk.portability_rows()
    # As import_memories does; into this empty PostgreSQL store the postings' read index is built at the end.
    with rows.bulk_load() as deferred:
        outcomes, _ = rows.write_batch(
            [ImportedMemory(_memory("a", t)) for t in texts[:MIN_DEFERRED_ROWS]],
            queued_at=None,
            active_model=None,
        )
        more, _ = rows.write_batch(
            [ImportedMemory(_memory("a", t)) for t in texts[MIN_DEFERRED_ROWS:]],
            queued_at=None,
            active_model=None,
        )
        outcomes += more
    assert deferred == (type(rows).__name__ == "PgPortabilityRows")
    # The repeated texts inside the batch are refused as duplicates, exactly as one by one.
    assert outcomes.count(DUPLICATE) == len(texts) - len(set(texts))
    for text in texts:
        with by_row.write() as s:
            if s.memories.find_duplicate(_memory("a", text)) is None:
                s.memories.insert(_memory("a", text))
    # A second import of the same rows changes nothing (and keeps the index it finds).
    with rows.bulk_load() as deferred_again:
        again, _ = rows.write_batch(
            [ImportedMemory(_memory("a", t)) for t in texts], queued_at=None, active_model=None
        )
    assert not deferred_again
    assert set(again) == {DUPLICATE}
    for query in QUERIES:
        for words in (False, True):
            got = _search(bulk, query, words)
            assert got == _search(by_row, query, words), (query, words)
    assert _search(bulk, "paint", False)  # the comparison is not between two empty answers


def _sqlite(store: Store) -> sqlite3.Connection:
    return store.db.connection()  # type: ignore[attr-defined]


def _schema(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    return conn.execute("SELECT name, sql FROM sqlite_master ORDER BY name").fetchall()


def test_sqlite_bulk_batch_keeps_the_schema_and_passes_fts_integrity(tmp_path: Path) -> None:
    store = open_store(tmp_path / "bulk.db")
    conn = _sqlite(store)
    before = _schema(conn)
    outcomes, _ = store.portability_rows().write_batch(
        [ImportedMemory(_memory("a", f"painted fence number {k}")) for k in range(MIN_DEFERRED_ROWS * 2)],
        queued_at=None,
        active_model=None,
    )
    assert set(outcomes) == {INSERTED}
    assert _schema(conn) == before  # the insert triggers are back, byte for byte
    for table in ("memories_fts", "memories_words"):
        conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
    # A row stored afterwards is indexed by the (re-created) trigger again.
    with store.write() as s:
        s.memories.insert(_memory("a", "zebra crossing"))
    assert [
        r[0] for r in conn.execute("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'zebra'")
    ] == [1]
    store.close()


def test_sqlite_failed_bulk_batch_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_store(tmp_path / "bulk.db")
    conn = _sqlite(store)
    before = _schema(conn)
    real = sqlite_portability.insert_memory
    calls = {"n": 0}

    def failing(*args: object, **kwargs: object) -> int:
        calls["n"] += 1
        if calls["n"] > MIN_DEFERRED_ROWS:
            raise RuntimeError("disk gone")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(sqlite_portability, "insert_memory", failing)
    with pytest.raises(RuntimeError):
        store.portability_rows().write_batch(
            [ImportedMemory(_memory("a", f"painted fence {k}")) for k in range(MIN_DEFERRED_ROWS * 2)],
            queued_at=None,
            active_model=None,
        )
    assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 0
    assert (
        conn.execute("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'fence'").fetchone()[0] == 0
    )
    assert _schema(conn) == before
    store.close()


def test_sqlite_bulk_batches_beside_another_connection_keep_every_row_indexed(tmp_path: Path) -> None:
    """The insert triggers are dropped inside the batch's transaction only: a second store on the
    same file (another process, as far as SQLite is concerned) storing and searching meanwhile
    always sees them, and every row ends up in both indexes exactly once."""
    import threading

    path = tmp_path / "shared.db"
    importer, other = open_store(path), open_store(path)
    errors: list[BaseException] = []

    def bulk() -> None:
        try:
            for b in range(6):
                importer.portability_rows().write_batch(
                    [ImportedMemory(_memory("a", f"painted fence bulk {b} {k}")) for k in range(100)],
                    queued_at=None,
                    active_model=None,
                )
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    thread = threading.Thread(target=bulk)
    thread.start()
    stored = 0
    while thread.is_alive() or stored < 20:
        with other.write() as s:
            s.memories.insert(_memory("a", f"painted fence single {stored}"))
        stored += 1
        assert _search(other, "fence", False)  # searches keep working while batches run
    thread.join()
    assert errors == []
    conn = _sqlite(other)
    total = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
    assert total == 600 + stored
    for table in ("memories_fts", "memories_words"):
        conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
        hits = conn.execute(f"SELECT count(*) FROM {table} WHERE {table} MATCH 'fence'").fetchone()[0]
        assert hits == total, table
    importer.close()
    other.close()


def test_sqlite_bulk_batches_change_no_schema(tmp_path: Path) -> None:
    """The deferral is a row inside the batch's transaction, not a dropped trigger: the schema
    cookie another connection re-reads its schema by stays the same across bulk batches (with
    DDL in the batch, a writer beside it could fail with "no such table: memories"), and the
    deferral row is gone after every batch."""
    store = open_store(tmp_path / "cookie.db")
    conn = _sqlite(store)
    before = conn.execute("PRAGMA schema_version").fetchone()[0]
    for b in range(3):
        store.portability_rows().write_batch(
            [
                ImportedMemory(_memory("a", f"painted fence cookie {b} {k}"))
                for k in range(MIN_DEFERRED_ROWS * 2)
            ],
            queued_at=None,
            active_model=None,
        )
        assert conn.execute("SELECT count(*) FROM fts_deferred").fetchone()[0] == 0
    assert conn.execute("PRAGMA schema_version").fetchone()[0] == before
    hits = conn.execute("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'fence'").fetchone()[0]
    assert hits == 3 * MIN_DEFERRED_ROWS * 2
    store.close()


def test_only_an_import_that_wrote_a_large_share_of_the_table_merges_the_indexes(tmp_path: Path) -> None:
    store = open_store(tmp_path / "few.db")
    conn = _sqlite(store)
    with store.write():
        assert not optimize_after_bulk(conn, OPTIMIZE_FROM_ROWS - 1, OPTIMIZE_FROM_ROWS - 1)  # too few rows
        assert not optimize_after_bulk(conn, OPTIMIZE_FROM_ROWS, 4 * OPTIMIZE_FROM_ROWS + 1)  # a small share
        assert optimize_after_bulk(conn, OPTIMIZE_FROM_ROWS, 4 * OPTIMIZE_FROM_ROWS)
    store.close()


def _segments(conn: sqlite3.Connection, table: str) -> int:
    """Rows of the FTS5 index's ``_data`` shadow table: fewer after a merge into one segment."""
    return int(conn.execute(f"SELECT count(*) FROM {table}_data").fetchone()[0])


def test_a_large_bulk_load_merges_the_keyword_indexes_and_finds_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store bulk-loaded past ``OPTIMIZE_FROM_ROWS`` (lowered here to keep the test fast) holds each
    keyword index merged, and finds exactly what the same load without the merge finds."""
    texts = [f"{t} batch {k}" for k, t in enumerate(_texts(40 * MIN_DEFERRED_ROWS))]

    def load(path: Path) -> Store:
        store = open_store(path)
        rows = store.portability_rows()
        with rows.bulk_load():
            for start in range(0, len(texts), MIN_DEFERRED_ROWS):
                rows.write_batch(
                    [ImportedMemory(_memory("a", t)) for t in texts[start : start + MIN_DEFERRED_ROWS]],
                    queued_at=None,
                    active_model=None,
                )
        return store

    monkeypatch.setattr(bulk_fts, "OPTIMIZE_FROM_ROWS", 10**9)
    monkeypatch.setattr(sqlite_portability, "merge_after_bulk", lambda conn: 0)  # nor the bounded merge
    plain = load(tmp_path / "plain.db")
    monkeypatch.undo()
    monkeypatch.setattr(bulk_fts, "OPTIMIZE_FROM_ROWS", len(texts))
    merged = load(tmp_path / "merged.db")
    for table in ("memories_fts", "memories_words"):
        assert _segments(_sqlite(merged), table) < _segments(_sqlite(plain), table), table
        _sqlite(merged).execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
    for query in QUERIES:
        for words in (False, True):
            assert _search(merged, query, words) == _search(plain, query, words), (query, words)
    assert _search(merged, "paint", False)
    plain.close()
    merged.close()
