"""The queue worker: computes missing vectors in the background (SPEC §8).

Work comes from ``pending_memory_tasks``. The worker embeds outside the write
lock, then records the vector and deletes the task in one transaction, only
if the row's text is still what was embedded (an edit meanwhile leaves the
task for the next round). A crash at any point leaves the task queued.
"""

from __future__ import annotations

import logging
import threading
from datetime import timedelta

from cpersona.embed.runtime.service import EmbeddingService
from cpersona.storage import episodes as episode_rows
from cpersona.storage import memories as memory_rows
from cpersona.storage import tasks
from cpersona.storage.db import Database
from cpersona.storage.vectors import to_blob
from cpersona.text import format_ts, utc_now

log = logging.getLogger(__name__)

BATCH = 32
_TEXT_SQL = {
    "memories": "SELECT content FROM memories WHERE id = ?",
    "episodes": "SELECT summary FROM episodes WHERE id = ?",
}
_SET_EMBEDDING = {"memories": memory_rows.set_embedding, "episodes": episode_rows.set_embedding}


def enqueue_missing(db: Database, model_id: str, dimension: int) -> int:
    """Queue every row without a vector of the active model (startup, model change)."""
    now = format_ts(utc_now())
    queued = 0
    with db.write() as conn:
        for table in ("memories", "episodes"):
            cursor = conn.execute(
                "INSERT OR IGNORE INTO pending_memory_tasks(kind, target_table, target_id, not_before, created_at) "
                f"SELECT ?, ?, id, ?, ? FROM {table} WHERE embedding IS NULL "
                "OR embedding_model IS NOT ? OR embedding_dim IS NOT ? ORDER BY id",
                (tasks.EMBED, table, now, now, model_id, dimension),
            )
            queued += cursor.rowcount
    return queued


class BackfillWorker:
    """A daemon thread draining the embedding tasks whenever the model is usable."""

    def __init__(self, db: Database, embeddings: EmbeddingService, *, retry_delay: float, poll: float = 5.0) -> None:
        self.db = db
        self.embeddings = embeddings
        self.retry_delay = retry_delay
        self.poll = poll
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.processed = 0

    def start(self) -> None:
        """Start the worker thread."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="cpersona-backfill", daemon=True)
            self._thread.start()

    def wake(self) -> None:
        """Drain now (new tasks, or the model just became ready)."""
        self._wake.set()

    def stop(self) -> None:
        """Finish the current batch and stop."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.poll)
            self._wake.clear()
            try:
                while not self._stop.is_set() and self.drain_once() > 0:
                    pass
            except Exception:  # keep the thread alive; the tasks stay queued
                log.exception("back-fill round failed")

    def drain_once(self, limit: int = BATCH) -> int:
        """Process one batch of due tasks; returns how many were handled (0 = nothing to do)."""
        if not self.embeddings.ready:
            return 0
        model_id, dimension = self.embeddings.model_id, self.embeddings.dimension
        conn = self.db.connection()
        due = tasks.due(conn, format_ts(utc_now()), limit)
        if not due:
            return 0
        texts: dict[int, str] = {}
        for task in due:
            row = conn.execute(_TEXT_SQL.get(task.target_table, "SELECT NULL WHERE 0"), (task.target_id,)).fetchone()
            if row is not None:
                texts[task.id] = row[0]
        order = [t for t in due if t.id in texts]
        vectors = self.embeddings.embed_documents([texts[t.id] for t in order]) if order else None
        retry_at = format_ts(utc_now() + timedelta(seconds=self.retry_delay))
        with self.db.write() as wconn:
            for task in due:
                if task.id not in texts:  # the row was deleted: nothing left to do
                    tasks.complete(wconn, task.id)
            if order and vectors is None:
                for task in order:
                    tasks.retry_later(wconn, task.id, "embedding model unavailable or inference failed", retry_at)
                return len(due)
            for task, vector in zip(order, vectors if vectors is not None else [], strict=False):
                current = wconn.execute(_TEXT_SQL[task.target_table], (task.target_id,)).fetchone()
                if current is None or current[0] != texts[task.id]:
                    continue  # edited meanwhile: the task stays for the next round
                _SET_EMBEDDING[task.target_table](wconn, task.target_id, to_blob(vector), model_id, dimension)
                tasks.complete(wconn, task.id)
                self.processed += 1
        return len(due)
