"""Bulk memory inserts on PostgreSQL: one COPY and one INSERT per batch, with ``store``'s dedup.

A batch of memories is copied (binary, vectors included) into a temporary staging
table, then moved with one ``INSERT ... SELECT ... ON CONFLICT DO NOTHING``: the
unique indexes refuse a duplicate of an existing row or of an earlier row of the same
batch, exactly as ``store`` and the one-row import did, and never abort the
transaction. Ids are reserved from the table's sequence before the copy, in batch
order, so ``RETURNING id`` tells which records went in (the others are duplicates)
and later records get higher ids, as row-by-row inserts would. The statement-level
triggers (keyword postings, row counts) then run once per batch instead of once per row.

A whole import into an empty keyword index (a fresh database) loads without the
postings' read index and builds it once at the end (``postings_index_deferred``):
one B-tree insert per posting (~32 per LoCoMo-sized row) was half the load's cost,
and one sorted build of the same entries costs less (docs/decisions.md). Its batches do not post
their memories either: the insert trigger queues their ids (migration 8, ``postings.py``) and the
import posts the queue in large chunks, on a second connection while the batches run (``LiveDrain``)
and on two at once at its end (``drain_unposted``), then builds the index.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from cpersona.storage.columns import MEMORY_INSERT_COLUMNS, memory_values
from cpersona.storage.port_records import ImportedMemory
from cpersona.storage.postgres.postings import DEFER_SETTING, POSTED, drain_sql, read_index_sql
from cpersona.storage.postgres.rows import pg_values
from cpersona.storage.postgres.sql import Executor

log = logging.getLogger(__name__)

_COLUMNS = f"id, {MEMORY_INSERT_COLUMNS}"
_STAGING = "cpersona_staged_memories"
# Column types in _COLUMNS order ("vector" is looked up: an extension type has no fixed oid).
_TYPES = (
    "int8", "text", "text", "text", "text", "text", "text", "text", "text", "text",
    "vector", "text", "int4", "int4", "text", "bool",
)  # fmt: skip


def _ensure_staging(ex: Executor) -> None:
    # A temporary table lives as long as the pooled connection; ON COMMIT DELETE ROWS empties it per batch.
    ex.run(
        f"CREATE TEMP TABLE IF NOT EXISTS {_STAGING} (id BIGINT, agent_id TEXT, project_id TEXT, channel TEXT, "
        "msg_id TEXT, content TEXT, source TEXT, metadata TEXT, timestamp TEXT, created_at TEXT, embedding vector, "
        "embedding_model TEXT, embedding_dim INTEGER, recall_count INTEGER, last_recalled_at TEXT, "
        "locked BOOLEAN) ON COMMIT DELETE ROWS"
    )


def insert_memories(ex: Executor, records: Sequence[ImportedMemory]) -> list[int | None]:
    """Insert ``records`` (inside the caller's transaction); the new id per record, None for a duplicate."""
    if not records:
        return []
    conn = ex.conn
    assert conn is not None, "insert_memories runs inside a write transaction"
    _ensure_staging(ex)
    ids = [
        int(r["id"])
        for r in ex.all(
            "SELECT nextval(pg_get_serial_sequence('memories', 'id')) AS id FROM generate_series(1, %s)",
            [len(records)],
        )
    ]
    vector_oid = int(ex.value("SELECT 'vector'::regtype::oid"))
    with conn.cursor() as cur:
        # The staging table is dropped with the connection: truncate whatever a failed batch left behind.
        cur.execute(f"TRUNCATE {_STAGING}")
        with cur.copy(f"COPY {_STAGING} ({_COLUMNS}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types([vector_oid if t == "vector" else t for t in _TYPES])
            for new_id, record in zip(ids, records, strict=True):
                copy.write_row(_row(new_id, record))
    inserted = {
        int(r["id"])
        for r in ex.all(
            f"INSERT INTO memories ({_COLUMNS}) SELECT {_COLUMNS} FROM {_STAGING} ORDER BY id "
            "ON CONFLICT DO NOTHING RETURNING id"
        )
    }
    return [new_id if new_id in inserted else None for new_id in ids]


def _row(new_id: int, record: ImportedMemory) -> tuple[Any, ...]:
    values = memory_values(
        record.row,
        recall_count=record.recall_count,
        last_recalled_at=record.last_recalled_at,
        locked=record.locked,
    )
    return (new_id, *pg_values(values))


def enqueue_many(ex: Executor, kind: str, table: str, target_ids: Sequence[int], when: str) -> None:
    """Queue one task per target (an identical pending task is kept as it is), in one statement."""
    if target_ids:
        ex.run(
            "INSERT INTO pending_memory_tasks(kind, target_table, target_id, not_before, created_at) "
            "SELECT %s, %s, t, %s, %s FROM unnest(%s::bigint[]) AS t ON CONFLICT DO NOTHING",
            (kind, table, when, when, list(target_ids)),
        )


# Serialises the index's drop and build between importers (one-key advisory lock, beside MIGRATION_LOCK's).
_INDEX_LOCK = 0x637062756C6B  # "cpbulk"


@contextmanager
def postings_index_deferred(
    transaction: Callable[[bool], AbstractContextManager[Executor]],
) -> Iterator[bool]:
    """Around a whole import: whether its memories are posted, and the postings read index built, at the end.

    Only when the postings are empty (nothing to search yet, so no reader loses anything it had) or the
    index is already missing (an import that died before its end): the index is dropped in its own
    transaction, the batches load without it, and the migration's own ``CREATE INDEX`` runs when the
    block ends, however it ends. Keyword search stays exact meanwhile (it reads the table); a process
    that dies in between leaves a missing index that ``check_health`` reports and repairs. An index
    that holds postings is kept and maintained per batch, as before. When deferred, each batch sets
    ``defer_postings`` and the queued memories are posted (``drain_unposted``) before the index is built.
    """
    name, create = read_index_sql("memories")
    postings = POSTED["memories"][0]
    with transaction(False) as ex:
        ex.run("SELECT pg_advisory_xact_lock(%s)", [_INDEX_LOCK])
        present = ex.value("SELECT to_regclass(%s) IS NOT NULL", [name])
        deferred = not present or not ex.value(f"SELECT EXISTS (SELECT 1 FROM {postings})")
        if present and deferred:
            ex.run(f"DROP INDEX {name}")
    live = LiveDrain(transaction) if deferred else None
    try:
        yield deferred
    finally:
        if live is not None:
            live.stop()
        if deferred:
            drain_unposted(transaction)
            with transaction(False) as ex:
                ex.run("SELECT pg_advisory_xact_lock(%s)", [_INDEX_LOCK])
                if ex.value("SELECT to_regclass(%s) IS NULL", [name]):
                    ex.run(create)


def defer_postings(ex: Executor) -> None:
    """In this write transaction, queue inserted memories for ``drain_unposted`` instead of posting them."""
    ex.run(f"SET LOCAL {DEFER_SETTING} = on")


#: Memory ids per drain transaction, and the connections draining at once (a server process each).
DRAIN_CHUNK = 20_000
DRAINERS = 2
#: While the import runs, a drainer posts the oldest queued ids once this many wait (``LiveDrain``).
LIVE_CHUNK = 20_000
# Serialises the drainers' vocabulary inserts, so a token new to both is added once.
_VOCAB_LOCK = 0x6370766F6362  # "cpvocb"

Transaction = Callable[[bool], AbstractContextManager[Executor]]


def _post_claimed(ex: Executor, claim: str, params: Sequence[Any]) -> int:
    """In ``ex``'s transaction: delete queue entries (``claim``, a DELETE ... RETURNING memory_id), post
    those memories and add their new tokens to the vocabulary; the entries taken.

    Taking the entry first is what makes it safe beside other writers: a concurrent content change of
    one of these rows waits for this commit, then finds it posted and re-posts it as any update; a crash
    leaves every memory either posted or still queued, never both.
    """
    ids = [int(r["memory_id"]) for r in ex.all(claim, params)]
    if not ids:
        return 0
    post, vocab = drain_sql()
    ex.run("SET LOCAL synchronous_commit = off")  # as an import batch (portability.py)
    ex.run("CREATE TEMP TABLE IF NOT EXISTS cpersona_drained_tokens (token TEXT) ON COMMIT DELETE ROWS")
    ex.run(post, [ids])
    ex.run("SELECT pg_advisory_xact_lock(%s)", [_VOCAB_LOCK])
    ex.run(vocab)
    return len(ids)


def drain_unposted(transaction: Transaction) -> int:
    """Post every memory queued in ``memory_unposted``, in id ranges on ``DRAINERS`` connections; the rows posted.

    Also what clears a queue left behind by an import that died before its end (``PgStore`` on open).
    """
    with transaction(True) as ex:
        bounds = ex.one("SELECT min(memory_id) AS lo, max(memory_id) AS hi FROM memory_unposted")
    if bounds is None or bounds["lo"] is None:
        return 0
    lo, hi = int(bounds["lo"]), int(bounds["hi"])
    claim = "DELETE FROM memory_unposted WHERE memory_id >= %s AND memory_id < %s RETURNING memory_id"

    def chunk(start: int) -> int:
        with transaction(False) as ex:
            return _post_claimed(ex, claim, [start, start + DRAIN_CHUNK])

    with ThreadPoolExecutor(DRAINERS, thread_name_prefix="cpersona-drain") as pool:
        posted = sum(pool.map(chunk, range(lo, hi + 1, DRAIN_CHUNK)))
    log.info("posted %d queued memories for keyword search", posted)
    return posted


class LiveDrain:
    """A thread posting the oldest ``LIVE_CHUNK`` queued memories whenever that many wait, while an import runs.

    The import's own connection is busy with its batches; this second one tokenises what they queued on
    the other core meanwhile, so less is left for the end. ``stop`` ends it (after its current chunk); a
    failure is logged and ends it too: what it did not post stays queued for ``drain_unposted``.
    """

    _CLAIM = (
        "DELETE FROM memory_unposted WHERE memory_id IN "
        "(SELECT memory_id FROM memory_unposted ORDER BY memory_id LIMIT %s) RETURNING memory_id"
    )

    def __init__(self, transaction: Transaction) -> None:
        self._transaction = transaction
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpersona-live-drain", daemon=True)
        self._thread.start()

    def _due(self) -> bool:
        # The import's ids are consecutive: the span of the queue is what waits (two index probes).
        with self._transaction(True) as ex:
            span = ex.value("SELECT max(memory_id) - min(memory_id) + 1 FROM memory_unposted")
        return span is not None and int(span) >= LIVE_CHUNK

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                if not self._due():
                    self._stop.wait(0.2)
                    continue
                with self._transaction(False) as ex:
                    _post_claimed(ex, self._CLAIM, [LIVE_CHUNK])
        except Exception:  # the queue keeps what is not posted; the end of the import posts it
            log.exception("posting queued memories during the import failed; left for its end")

    def stop(self) -> None:
        """End the thread and wait for it."""
        self._stop.set()
        self._thread.join()
