"""The queue worker: computes missing vectors in the background (docs/architecture.md#the-background-queue).

Work comes from ``pending_memory_tasks``. The worker embeds outside the write
lock, then records the vector and deletes the task in one transaction, only
if the row's text is still what was embedded (an edit meanwhile leaves the
task for the next round). A crash at any point leaves the task queued.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import timedelta

from cpersona.core.public import public
from cpersona.core.text import format_ts, utc_now
from cpersona.embed.runtime.blocks import due_pages, shortest_blocked
from cpersona.embed.runtime.service import EmbeddingService
from cpersona.errors import StorageFault
from cpersona.runtime import persistence
from cpersona.services.long_records import embed_with_blocks
from cpersona.storage.interface import EpisodeRows, MemoryRows, Session, Store
from cpersona.storage.values import EMBED, EPISODES, MEMORIES

log = logging.getLogger(__name__)

BATCH = 32


def _rows(session: Session, table: str) -> MemoryRows | EpisodeRows | None:
    # A task naming an unknown table has nothing left to embed: it is completed like a deleted row's.
    return session.memories if table == MEMORIES else session.episodes if table == EPISODES else None


def enqueue_missing(store: Store, model_id: str, dimension: int, window_tokens: int | None = None) -> int:
    """Queue every row without a vector of the active model (startup, model change), and every memory
    longer than the model's window without its blocks (stored before blocks existed, or imported without
    them; ``window_tokens`` None: not looked for)."""
    with store.write() as session:
        queued = session.tasks.enqueue_missing(EMBED, model_id, dimension, format_ts(utc_now()))
    if window_tokens:
        queued += len(enqueue_unblocked(store, model_id, dimension, window_tokens))
    return queued


#: Memories read per page by the sweep for missing blocks.
_SWEEP_PAGE = 500


def enqueue_unblocked(
    store: Store, model_id: str, dimension: int, window_tokens: int, *, limit: int | None = None
) -> list[int]:
    """Queue (and return) the memories that need blocks of this model but hold none (at most ``limit``).

    A text shorter than ``shortest_blocked`` (the lead's floor, or the window's tokens) never needs blocks,
    so only longer ones holding no lead are read; which of those need blocks is ``needs_blocks``' rule, so
    a text due neither a lead nor window blocks is read again by the next sweep but never queued.
    """

    def read_page(after: int) -> list[tuple[int, str, int]]:
        return store.session().memories.without_lead(
            model_id, dimension, shortest_blocked(window_tokens), after, _SWEEP_PAGE
        )

    found: list[int] = []
    for due in due_pages(read_page, window_tokens):
        need = due if limit is None else due[: limit - len(found)]
        if need:
            with store.write() as session:
                for memory_id in need:
                    session.tasks.enqueue(EMBED, MEMORIES, memory_id, format_ts(utc_now()))
            found += need
        if limit is not None and len(found) >= limit:
            break
    return found


class BackfillWorker:
    """A daemon thread draining the embedding tasks whenever the model is usable."""

    def __init__(
        self,
        store: Store,
        embeddings: EmbeddingService,
        *,
        retry_delay: float,
        poll: float = 5.0,
        expiry_grace: float | None = None,
    ) -> None:
        self.store = store
        # Seconds an expired memory stays in the file before each round's sweep deletes it (None: no sweep).
        self.expiry_grace = expiry_grace
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
                if self.expiry_grace is not None:
                    self.sweep_expired()
            except StorageFault:  # already logged once by storage; retried on the next wake
                pass
            except Exception:  # keep the thread alive; the tasks stay queued
                if self._stop.is_set():
                    # Closed while a batch was embedding (``stop`` waits 10 s): the store is gone, and
                    # the batch's tasks stay queued for the next start. Nothing to report.
                    return
                log.exception("back-fill round failed")

    @public(name="drain_queue")
    def drain(self, max_rounds: int = 10_000, after_batch: Callable[[int], None] | None = None) -> int:
        """Process due tasks in this thread until none is left (CLI, tests); returns tasks handled.

        ``after_batch(handled so far)`` runs after each committed batch (re-embed's progress and
        cancel checkpoint); what it raises stops the drain there.
        """
        handled = 0
        for _ in range(max_rounds):
            n = self.drain_once()
            if n == 0:
                break
            handled += n
            if after_batch is not None:
                after_batch(handled)
        return handled

    def sweep_expired(self, limit: int = 500) -> int:
        """Delete up to ``limit`` memories that expired more than CPERSONA_EXPIRY_GRACE seconds ago
        (locked ones stay, out of recall, until unlocked); returns how many. The worker runs it each round.
        """
        if persistence.is_paused():
            return 0  # a pause stops every write, the worker's deletes included
        cutoff = format_ts(utc_now() - timedelta(seconds=self.expiry_grace or 0.0))
        ids = self.store.session().supersede.expired_before(cutoff, limit)
        if not ids:
            return 0
        with self.store.write() as ws:
            for rid in ws.supersede.expired_before(cutoff, limit):
                ws.memories.delete(rid)
                ws.tasks.remove_for_target(MEMORIES, rid)
        log.info("deleted %d expired memor(ies)", len(ids))
        return len(ids)

    def drain_once(self, limit: int = BATCH) -> int:
        """Process one batch of due tasks; returns how many were handled (0 = nothing to do)."""
        if not self.embeddings.ready:
            return 0
        model_id, dimension = self.embeddings.model_id, self.embeddings.dimension
        session = self.store.session()
        due = session.tasks.due(format_ts(utc_now()), limit)
        if not due:
            return 0
        texts: dict[int, str] = {}
        for task in due:
            rows = _rows(session, task.target_table)
            text = rows.text_of(task.target_id) if rows is not None else None
            if text is not None:
                texts[task.id] = text
        order = [t for t in due if t.id in texts]
        # A memory's blocks are embedded with its own vector (docs/retrieval.md#long-records).
        done = (
            embed_with_blocks(
                self.embeddings, [texts[t.id] for t in order], [t.target_table == MEMORIES for t in order]
            )
            if order
            else None
        )
        retry_at = format_ts(utc_now() + timedelta(seconds=self.retry_delay))
        with self.store.write() as ws:
            for task in due:
                if task.id not in texts:  # the row was deleted: nothing left to do
                    ws.tasks.complete(task.id)
            if order and done is None:
                for task in order:
                    ws.tasks.retry_later(task.id, "embedding model unavailable or inference failed", retry_at)
                return len(due)
            for task, embedded in zip(order, done if done is not None else [], strict=False):
                target = _rows(ws, task.target_table)
                if target is None or target.text_of(task.target_id) != texts[task.id]:
                    continue  # edited meanwhile: the task stays for the next round
                target.set_embedding(task.target_id, embedded.embedding, model_id, dimension)
                if task.target_table == MEMORIES:  # replaces blocks of an older model or text
                    ws.memories.set_blocks(task.target_id, embedded.blocks, model_id, dimension)
                ws.tasks.complete(task.id)
                self.processed += 1
        return len(due)
