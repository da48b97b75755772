"""An import into an empty keyword index posts its memories at its end (migration 8, storage/postgres/bulk.py).

The batches only queue their memories' ids (``memory_unposted``, written by the insert trigger in the
batch's own transaction); ``drain_unposted`` posts them in chunks on two connections. What must hold:
after the import every derived table (postings, vocabulary, row counts) is exactly what the same rows
stored one by one leave; a queue left by an import that died is posted by the next store open; a queued
row whose content changes or that is deleted before the drain ends with the postings of what it is
(the vocabulary then lacks the tokens of the text that is gone, which no posting holds).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from pg_cluster import PgCluster

from cpersona.storage.port_records import DUPLICATE, INSERTED, ImportedMemory
from cpersona.storage.postgres import bulk
from cpersona.storage.postgres import migrations as pg_migrations
from cpersona.storage.postgres.postings import CHUNK_CHARS, read_index_sql
from cpersona.storage.postgres.store import PgStore
from cpersona.storage.values import NewMemory

pytestmark = pytest.mark.slow

STAMP = "2024-01-01T00:00:00.000000Z"
WORDS = ("Caroline", "painted", "painting", "fence", "東京タワー", "e-mail", "2023-05-08", "foo_bar", "runs")


def _texts(n: int) -> list[str]:
    out = []
    for k in range(n):
        words = [WORDS[(k * 7 + j * 3) % len(WORDS)] for j in range(1 + k % 6)]
        out.append(" ".join(words) + f" note{k % (n - 4)} /home/ana/{k}.txt ana{k}@example.org")
    out.append("x" * (CHUNK_CHARS + 7) + " long run, cut for the postings")
    out.append("東京" * 200)
    return out


def _memory(text: str, k: int) -> NewMemory:
    # Three scopes, so the postings' axes and the per-scope counts are compared too.
    return NewMemory(f"agent{k % 2}", ("", "p")[k % 3 == 0], ("", "c")[k % 5 == 0], "", text, None, None, STAMP, STAMP, None, None, None)  # fmt: skip


def _state(url: str) -> dict[str, Any]:
    """Every derived table, keyed by content (ids differ: a bulk batch reserves ids for its duplicates)."""
    with psycopg.connect(url) as conn:
        postings = Counter(
            conn.execute(
                "SELECT p.token, p.agent_id, m.content, p.project_id, p.channel, p.n, p.dl, p.dw "
                "FROM memory_tokens p JOIN memories m ON m.id = p.memory_id"
            ).fetchall()
        )
        orphans = conn.execute(
            "SELECT count(*) FROM memory_tokens p WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = p.memory_id)"
        ).fetchone()
        vocab = Counter(conn.execute("SELECT token, stem FROM keyword_vocab").fetchall())
        counts = dict(
            conn.execute(
                "SELECT agent_id || '/' || project_id || '/' || channel, sum(rows) FROM memory_counts "
                "GROUP BY 1 HAVING sum(rows) <> 0"
            ).fetchall()
        )
        lengths = dict(
            conn.execute(
                "SELECT agent_id || '/' || project_id || '/' || channel, "
                "ARRAY[sum(posted), sum(dl), sum(dw)]::bigint[] FROM memory_lengths GROUP BY 1 "
                "HAVING sum(posted) <> 0 OR sum(dl) <> 0 OR sum(dw) <> 0"
            ).fetchall()
        )
        queued = conn.execute("SELECT count(*) FROM memory_unposted").fetchone()
        index = conn.execute("SELECT to_regclass(%s) IS NOT NULL", [read_index_sql("memories")[0]]).fetchone()
    return {
        "postings": postings,
        "orphans": orphans,
        "vocab": vocab,
        "counts": counts,
        "lengths": lengths,
        "queued": queued,
        "index": index,
    }


@pytest.fixture
def two(pg_cluster: PgCluster) -> Iterator[tuple[PgStore, str, PgStore, str]]:
    urls = [pg_cluster.create(), pg_cluster.create()]
    stores = [PgStore(u) for u in urls]
    yield stores[0], urls[0], stores[1], urls[1]
    for store, url in zip(stores, urls, strict=True):
        store.close()
        pg_cluster.drop(url)


def _by_row(store: PgStore, memories: list[NewMemory]) -> None:
    for memory in memories:
        with store.write() as s:
            if s.memories.find_duplicate(memory) is None:
                s.memories.insert(memory)


def test_a_bulk_import_leaves_the_derived_tables_of_row_by_row_stores(
    two: tuple[PgStore, str, PgStore, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    importer, bulk_url, by_row, row_url = two
    monkeypatch.setattr(bulk, "DRAIN_CHUNK", 7)  # many chunks, both drainers adding tokens new to both
    monkeypatch.setattr(bulk, "LIVE_CHUNK", 10**9)  # nothing posted while the import runs
    memories = [_memory(t, k) for k, t in enumerate(_texts(120))]
    memories += memories[40:45]  # repeats of rows of an earlier batch
    memories.insert(10, memories[9])  # and of the same batch
    rows = importer.portability_rows()
    outcomes: list[str] = []
    with rows.bulk_load() as deferred:
        for start in range(0, len(memories), 50):
            batch = [ImportedMemory(m) for m in memories[start : start + 50]]
            got, _ = rows.write_batch(batch, queued_at=None, active_model=None)
            outcomes += got
        assert _state(bulk_url)["postings"] == Counter()  # queued, not posted, while the import runs
        assert _state(bulk_url)["queued"] == (outcomes.count(INSERTED),)
    assert deferred
    assert DUPLICATE in outcomes  # the in-file repeats are refused as one by one
    _by_row(by_row, memories)
    state = _state(bulk_url)
    assert state == _state(row_url)
    assert len(state["postings"]) > 500 and state["queued"] == (0,) and state["index"] == (True,)
    # A store after the import posts at once, in both.
    later = _memory("zebra crossing painted", 1)
    _by_row(importer, [later])
    _by_row(by_row, [later])
    assert _state(bulk_url) == _state(row_url)


def test_a_queue_left_by_an_import_that_died_is_posted_by_the_next_open(
    two: tuple[PgStore, str, PgStore, str],
) -> None:
    importer, bulk_url, by_row, row_url = two
    memories = [_memory(t, k) for k, t in enumerate(_texts(40))]
    with importer.write() as s:
        bulk.defer_postings(s.ex)  # as a batch of a deferred import; the import dies before its end
        for memory in memories:
            if s.memories.find_duplicate(memory) is None:
                s.memories.insert(memory)
    assert _state(bulk_url)["postings"] == Counter() and _state(bulk_url)["queued"][0] > 30
    PgStore(bulk_url).close()
    _by_row(by_row, memories)
    assert _state(bulk_url) == _state(row_url)


def test_a_queued_row_changed_or_deleted_before_the_drain_ends_posted_as_it_is(
    two: tuple[PgStore, str, PgStore, str],
) -> None:
    importer, bulk_url, by_row, row_url = two
    memories = [_memory(t, k) for k, t in enumerate(_texts(30))]
    rows = importer.portability_rows()
    with rows.bulk_load():
        rows.write_batch([ImportedMemory(m) for m in memories], queued_at=None, active_model=None)
        with psycopg.connect(bulk_url) as conn:
            conn.execute(
                "UPDATE memories SET content = 'repainted the whole fence' WHERE content = %s",
                [memories[3].content],
            )
            conn.execute("UPDATE memories SET agent_id = 'moved' WHERE content = %s", [memories[4].content])
            conn.execute("DELETE FROM memories WHERE content = %s", [memories[5].content])
            conn.execute("UPDATE memories SET recall_count = 3 WHERE content = %s", [memories[6].content])
    _by_row(by_row, memories)
    with psycopg.connect(row_url) as conn:
        conn.execute(
            "UPDATE memories SET content = 'repainted the whole fence' WHERE content = %s",
            [memories[3].content],
        )
        conn.execute("UPDATE memories SET agent_id = 'moved' WHERE content = %s", [memories[4].content])
        conn.execute("DELETE FROM memories WHERE content = %s", [memories[5].content])
    state, expected = _state(bulk_url), _state(row_url)
    # The vocabulary only grows: one by one, the replaced and the deleted texts' tokens went in and stay,
    # without a posting; queued, they were never posted. Every token with a posting is there in both.
    vocab, expected_vocab = state.pop("vocab"), expected.pop("vocab")
    assert state == expected
    assert set(vocab) <= set(expected_vocab) and max(vocab.values()) == 1
    assert {p[0] for p in state["postings"]} == {t for t, _stem in vocab}
    assert any(p[0] == "repainted" for p in state["postings"]) and state["orphans"] == (0,)


def test_migration_8_keeps_a_schema_7_databases_postings_and_posts_as_before(pg_cluster: PgCluster) -> None:
    url = pg_cluster.create(template=False)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            assert pg_migrations.migrate(conn, pg_migrations.MIGRATIONS[:7]) == [1, 2, 3, 4, 5, 6, 7]
            insert = "INSERT INTO memories(agent_id, content, timestamp, created_at) VALUES ('a', %s, %s, %s)"
            conn.execute(insert, ("Caroline painted the fence", STAMP, STAMP))
            before = conn.execute("SELECT * FROM memory_tokens ORDER BY token").fetchall()
            assert pg_migrations.migrate(conn, pg_migrations.MIGRATIONS[:8]) == [8]
            assert conn.execute("SELECT * FROM memory_tokens ORDER BY token").fetchall() == before
            conn.execute(insert, ("Melanie ran a marathon", STAMP, STAMP))  # no setting: posted at once
            assert conn.execute("SELECT count(*) FROM memory_tokens WHERE token = 'marathon'").fetchone() == (
                1,
            )
            assert conn.execute("SELECT count(*) FROM memory_unposted").fetchone() == (0,)
    finally:
        pg_cluster.drop(url)


def test_memories_posted_while_the_import_runs_end_as_row_by_row(
    two: tuple[PgStore, str, PgStore, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    importer, bulk_url, by_row, row_url = two
    monkeypatch.setattr(bulk, "LIVE_CHUNK", 25)
    monkeypatch.setattr(bulk, "DRAIN_CHUNK", 9)
    memories = [_memory(t, k) for k, t in enumerate(_texts(200))]
    rows = importer.portability_rows()
    with rows.bulk_load():
        for start in range(0, len(memories), 40):
            rows.write_batch(
                [ImportedMemory(m) for m in memories[start : start + 40]], queued_at=None, active_model=None
            )
            deadline = time.monotonic() + 10
            while _state(bulk_url)["queued"][0] >= 25 and time.monotonic() < deadline:
                time.sleep(0.05)  # the live drainer takes the oldest 25 once that many wait
        during = _state(bulk_url)
        assert during["postings"] and during["queued"][0] < 25
    _by_row(by_row, memories)
    assert _state(bulk_url) == _state(row_url)
