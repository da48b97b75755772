"""What a SQLite bulk import changes for its own length only, and what it leaves behind.

Each deferred batch writes its keyword segments with FTS5 merging held back (``bulk_fts.BATCH_MERGE``,
set and restored inside the batch's transaction); the importing connection runs with a larger page
cache and fewer checkpoints (``import_tuning``); a small import ends with bounded ``merge`` steps.
None of it may show in the committed file, in another connection, or in what keyword search finds.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from cpersona.retrieval.match_query import query_terms
from cpersona.storage import open_store
from cpersona.storage.interface import Store
from cpersona.storage.port_records import ImportedMemory
from cpersona.storage.scope import Scope
from cpersona.storage.sqlite import bulk_fts, import_tuning
from cpersona.storage.sqlite import portability as sqlite_portability
from cpersona.storage.sqlite.bulk_fts import DEFERRED, FTS5_MERGE_DEFAULTS, MIN_DEFERRED_ROWS, merge_settings
from cpersona.storage.values import NewMemory

TABLES = [table for _, table in DEFERRED]
QUERIES = ("fence", "paint", "blue fence", "cookie 7", "ence")


def _memory(text: str) -> NewMemory:
    return NewMemory("a", "", "", "", text, None, None, "t", "t", None, None, None)


def _batch(b: int) -> list[ImportedMemory]:
    words = ("painted", "fence", "blue", "cookie", "runs")
    return [
        ImportedMemory(_memory(f"{words[k % 5]} {words[(k + b) % 5]} fence {b} {k}"))
        for k in range(MIN_DEFERRED_ROWS)
    ]


def _conn(store: Store) -> sqlite3.Connection:
    return store.db.connection()  # type: ignore[attr-defined]


def _data_rows(conn: sqlite3.Connection, table: str) -> int:
    return int(conn.execute(f"SELECT count(*) FROM {table}_data").fetchone()[0])


def _search(store: Store, query: str, words: bool) -> list[tuple[int, float]]:
    with store.read() as s:
        search = s.keyword.memories_words if words else s.keyword.memories
        return [(i, round(score, 9)) for i, score in search(query_terms(query), Scope("a"), 100).hits]


def _write(store: Store, batches: range) -> None:
    rows = store.portability_rows()
    for b in batches:
        rows.write_batch(_batch(b), queued_at=None, active_model=None)


def test_batches_write_their_segments_under_the_batch_merge_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Twenty deferred small batches leave twenty segments per index, where FTS5's defaults
    merge a level once it holds 16 (``crisismerge``): the settings are in force when FTS5 writes
    the segment (the batch opens a savepoint, which makes FTS5 write it, before restoring them)."""
    held = open_store(tmp_path / "held.db")
    _write(held, range(20))
    monkeypatch.setattr(bulk_fts, "BATCH_MERGE", dict(FTS5_MERGE_DEFAULTS))
    merged = open_store(tmp_path / "merged.db")
    _write(merged, range(20))
    for table in TABLES:
        assert _data_rows(_conn(held), table) > _data_rows(_conn(merged), table), table
    for query in QUERIES:
        for words in (False, True):
            assert _search(held, query, words) == _search(merged, query, words), (query, words)
    assert _search(held, "fence", False)
    held.close()
    merged.close()


def test_the_batch_merge_settings_are_never_committed(tmp_path: Path) -> None:
    """After batches, a failed batch and a whole bulk load, another connection reads FTS5's own
    merge settings, and both indexes pass FTS5's integrity check."""
    path = tmp_path / "settings.db"
    store, other = open_store(path), open_store(path)
    _write(store, range(3))
    rows = store.portability_rows()
    with pytest.raises(sqlite3.IntegrityError):
        bad = _batch(9)
        bad.append(ImportedMemory(NewMemory("a", "", "", "", None, None, None, "t", "t", None, None, None)))  # type: ignore[arg-type]
        rows.write_batch(bad, queued_at=None, active_model=None)
    with rows.bulk_load():
        _write(store, range(3, 6))
    for conn in (_conn(store), _conn(other)):
        for table in TABLES:
            assert merge_settings(conn, table) == FTS5_MERGE_DEFAULTS, table
            conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
    count = _conn(other).execute("SELECT count(*) FROM memories").fetchone()[0]
    assert count == 6 * MIN_DEFERRED_ROWS  # the failed batch left nothing
    store.close()
    other.close()


def test_a_small_import_ends_with_bounded_merges_and_finds_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An import too small for ``optimize`` into a larger store folds its segments with ``merge``
    steps (fewer index rows than without them) and keyword search finds exactly the same."""

    def load(path: Path) -> Store:
        store = open_store(path)
        with store.portability_rows().bulk_load():
            _write(store, range(40))  # the "large store": optimized at the end
        with store.portability_rows().bulk_load():
            _write(store, range(40, 50))  # a quarter or less of the table: no optimize
        return store

    folded = load(tmp_path / "folded.db")
    monkeypatch.setattr(sqlite_portability, "merge_after_bulk", lambda conn: 0)
    left = load(tmp_path / "left.db")
    for table in TABLES:
        assert _data_rows(_conn(folded), table) < _data_rows(_conn(left), table), table
        _conn(folded).execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")
    for query in QUERIES:
        for words in (False, True):
            assert _search(folded, query, words) == _search(left, query, words), (query, words)
    assert _search(folded, "fence", False)
    folded.close()
    left.close()


def test_the_import_connection_settings_hold_during_the_load_only(tmp_path: Path) -> None:
    """Inside ``bulk_load()`` the importing connection has the import's cache and checkpoint
    interval; afterwards its own again, and the WAL has been checkpointed once."""
    store = open_store(tmp_path / "pragmas.db")
    conn = _conn(store)
    pragma = lambda name: conn.execute(f"PRAGMA {name}").fetchone()[0]  # noqa: E731
    before = (pragma("cache_size"), pragma("wal_autocheckpoint"))
    with store.portability_rows().bulk_load():
        assert pragma("cache_size") == -import_tuning.IMPORT_CACHE_KIB
        assert pragma("wal_autocheckpoint") == import_tuning.IMPORT_CHECKPOINT_PAGES
        _write(store, range(4))
    assert (pragma("cache_size"), pragma("wal_autocheckpoint")) == before
    busy, log, done = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    assert (busy, log - done) == (0, 0)
    store.close()
