"""A bulk import into an empty keyword index builds the postings' read index once, at its end.

``PortabilityRows.bulk_load()`` (storage/postgres/bulk.py) drops ``memory_tokens_read`` when the
postings are empty (or the index is already missing) and runs the migration's own ``CREATE INDEX``
when the block ends, however it ends; a store that already has postings keeps its index and
maintains it per batch. Keyword results are those of a row-by-row store either way
(tests/storage/test_bulk_keyword_index.py); here: when the index goes, that it always comes back,
exactly as the migration defines it, and that check_health then finds nothing missing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pg_cluster import PgCluster

from cpersona.config import Settings
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.memory import Memory
from cpersona.storage.port_records import INSERTED, ImportedMemory
from cpersona.storage.postgres.migrations import migration_statements
from cpersona.storage.postgres.portability import PgPortabilityRows
from cpersona.storage.postgres.postings import read_index_sql
from cpersona.storage.postgres.store import PgStore
from cpersona.storage.values import NewMemory

pytestmark = pytest.mark.slow

INDEX, CREATE = read_index_sql("memories")


@pytest.fixture
def fresh(pg_cluster: PgCluster) -> Iterator[tuple[PgStore, str]]:
    url = pg_cluster.create()
    pg = PgStore(url)
    yield pg, url
    pg.close()
    pg_cluster.drop(url)


def _records(start: int, n: int) -> list[ImportedMemory]:
    return [
        ImportedMemory(
            NewMemory("a", "", "", "", f"Caroline painted fence {k}", None, None, "t", "t", None, None, None)
        )
        for k in range(start, start + n)
    ]


def _definition(url: str) -> str | None:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [INDEX]).fetchone()
    return None if row is None else str(row[0])


def test_the_migration_creates_the_index_the_bulk_load_rebuilds() -> None:
    assert CREATE in migration_statements()


def test_into_an_empty_store_the_index_is_built_at_the_end(fresh: tuple[PgStore, str]) -> None:
    store, url = fresh
    before = _definition(url)
    assert before is not None
    rows = store.portability_rows()
    with rows.bulk_load() as deferred:
        assert deferred
        assert _definition(url) is None  # the batches load without it
        for start in (0, 100):
            outcomes, _ = rows.write_batch(_records(start, 100), queued_at=None, active_model=None)
            assert set(outcomes) == {INSERTED}
    assert _definition(url) == before  # the migration's index, over every posting
    with psycopg.connect(url) as conn:
        conn.execute("SET enable_seqscan = off")
        plan = "\n".join(
            r[0]
            for r in conn.execute(
                "EXPLAIN SELECT memory_id FROM memory_tokens WHERE token = 'caroline' AND agent_id = 'a'"
            )
        )
        assert INDEX in plan
        assert conn.execute("SELECT count(*) FROM memory_tokens WHERE token = 'caroline'").fetchone() == (
            200,
        )
    with store.read() as s:  # what check_health compares: every object the migrations create is there
        expected = {(o.kind, o.name) for o in s.health.expected_objects()}
        assert ("index", INDEX) in expected
        assert expected <= s.health.present_objects()


def test_a_store_with_postings_keeps_its_index(fresh: tuple[PgStore, str]) -> None:
    store, url = fresh
    rows = store.portability_rows()
    rows.write_batch(_records(0, 10), queued_at=None, active_model=None)
    with rows.bulk_load() as deferred:
        assert not deferred
        rows.write_batch(_records(10, 10), queued_at=None, active_model=None)
        assert _definition(url) is not None  # maintained per batch, never dropped


def test_the_index_comes_back_when_the_import_fails(fresh: tuple[PgStore, str]) -> None:
    store, url = fresh
    rows = store.portability_rows()
    with pytest.raises(RuntimeError), rows.bulk_load():
        rows.write_batch(_records(0, 50), queued_at=None, active_model=None)
        raise RuntimeError("the import stops half way")
    assert _definition(url) is not None


def test_an_index_left_missing_is_built_by_the_next_import(fresh: tuple[PgStore, str]) -> None:
    store, url = fresh
    rows = store.portability_rows()
    rows.write_batch(_records(0, 10), queued_at=None, active_model=None)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP INDEX {INDEX}")  # an import that died before its end
    with rows.bulk_load() as deferred:
        assert deferred
        rows.write_batch(_records(10, 10), queued_at=None, active_model=None)
    assert _definition(url) is not None


def test_import_memories_into_a_fresh_database_defers_the_index_and_builds_it(
    tmp_path: Path, pg_cluster: PgCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The importer runs its batches inside ``bulk_load()``: export from a file, import into a fresh
    PostgreSQL database, and the index was deferred, is there afterwards, and search finds the rows."""
    seen: list[bool] = []
    real = PgPortabilityRows.bulk_load

    @contextmanager
    def watched(self: PgPortabilityRows) -> Iterator[bool]:
        with real(self) as deferred:
            seen.append(deferred)
            yield deferred

    monkeypatch.setattr(PgPortabilityRows, "bulk_load", watched)

    def settings(**extra: Any) -> Settings:
        return Settings(
            db_path=tmp_path / "memory.db",
            models_dir=tmp_path / "models",
            embedding_mode="none",
            update_check=False,
            auto_fetch_model=False,
            export_dir=tmp_path / "exports",
            **extra,
        )

    with Memory(settings(), backend=NoEmbeddings()) as src:
        for k in range(40):
            src.store("ana", f"Caroline painted the fence {k}")
        src.export_memories("ana", "ana.jsonl")
    url = pg_cluster.create()
    try:
        with Memory(settings(db_url=url), backend=NoEmbeddings()) as dst:
            result = dst.import_memories("ana.jsonl")
            assert result["counts"]["memories"]["inserted"] == 40
            assert seen == [True]
            assert _definition(url) is not None
            hits = dst.recall("ana", "fence", limit=50)
            assert len(hits["results"]) == 40
    finally:
        pg_cluster.drop(url)


def _analysed_rows(url: str) -> dict[str, int]:
    """Rows the planner believes each recall table holds, from its last ANALYZE (``reltuples``)."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT relname, reltuples::bigint FROM pg_class WHERE relname = ANY(%s) AND relkind = 'r'",
            [["memories", "memory_tokens"]],
        ).fetchall()
    return {str(name): int(n) for name, n in rows}


def test_a_bulk_load_leaves_statistics_that_describe_what_it_wrote(fresh: tuple[PgStore, str]) -> None:
    """A store analysed at 5 rows, then 300 imported: the planner's figures are the 305 rows at once,
    not the 5 (autovacuum off, so nothing but the import can have refreshed them)."""
    pg, url = fresh
    with psycopg.connect(url, autocommit=True) as conn:
        for table in ("memories", "memory_tokens"):
            conn.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = off)")
    rows = pg.portability_rows()
    rows.write_batch(_records(0, 5), queued_at=None, active_model=None)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE memories")
        conn.execute("ANALYZE memory_tokens")
    assert _analysed_rows(url)["memories"] == 5
    with rows.bulk_load():
        for start in range(5, 305, 100):
            rows.write_batch(_records(start, 100), queued_at=None, active_model=None)
    analysed = _analysed_rows(url)
    assert analysed["memories"] == 305
    assert analysed["memory_tokens"] > 305  # several postings per memory


def _last_analyze(url: str, table: str) -> Any:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT last_analyze FROM pg_stat_user_tables WHERE relname = %s", [table]
        ).fetchone()
    return None if row is None else row[0]


def test_a_small_import_into_a_large_store_keeps_its_statistics(fresh: tuple[PgStore, str]) -> None:
    """Under autovacuum's own threshold (10% of the rows there + 50) the import does not ANALYZE the
    recall tables again: the planner's figures still describe them (statistics.refresh_due)."""
    pg, url = fresh
    with psycopg.connect(url, autocommit=True) as conn:
        for table in ("memories", "memory_tokens"):
            conn.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = off)")
    rows = pg.portability_rows()
    with rows.bulk_load():
        for start in range(0, 600, 200):
            rows.write_batch(_records(start, 200), queued_at=None, active_model=None)
    assert _analysed_rows(url)["memories"] == 600
    analysed_at = _last_analyze(url, "memories")
    assert analysed_at is not None  # a fresh store's import refreshed them
    with rows.bulk_load():
        rows.write_batch(_records(600, 100), queued_at=None, active_model=None)  # 100 <= 50 + 60
    assert _last_analyze(url, "memories") == analysed_at
    assert _analysed_rows(url)["memories"] == 600
    with rows.bulk_load():
        rows.write_batch(_records(700, 200), queued_at=None, active_model=None)  # 200 > 50 + 70
    assert _analysed_rows(url)["memories"] == 900


def test_refresh_due_follows_autovacuums_threshold() -> None:
    from cpersona.storage.postgres.statistics import refresh_due

    assert refresh_due(0, 51) and not refresh_due(0, 50)
    assert refresh_due(1000, 151) and not refresh_due(1000, 150)
    assert refresh_due(1_000_000, 100_051) and not refresh_due(1_000_000, 5_000)


def test_an_import_batch_commits_without_waiting_for_the_wal_flush(
    fresh: tuple[PgStore, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``synchronous_commit`` is off inside each import batch's transaction only (SET LOCAL): the
    pooled connection, and every other writer, keeps the server's setting."""
    import cpersona.storage.postgres.portability as portability

    _, url = fresh
    with psycopg.connect(url, autocommit=True) as conn:  # the test cluster itself runs with it off
        conn.execute(f'ALTER DATABASE "{conn.info.dbname}" SET synchronous_commit = on')
    pg = PgStore(url)
    seen: list[str] = []
    original = portability.insert_memories

    def spy(ex: Any, records: Any) -> Any:
        seen.append(str(ex.value("SHOW synchronous_commit")))
        return original(ex, records)

    monkeypatch.setattr(portability, "insert_memories", spy)
    rows = pg.portability_rows()
    outcomes, _ = rows.write_batch(_records(0, 3), queued_at=None, active_model=None)
    assert outcomes == [INSERTED] * 3 and seen == ["off"]
    with pg.write() as s:
        assert s.ex.value("SHOW synchronous_commit") == "on"
    pg.close()
