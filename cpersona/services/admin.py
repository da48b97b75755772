"""Administration: stats, embedding status, the queue, re-embedding, deleting an agent's data."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Annotated, cast

from cpersona import arguments as arg
from cpersona.core.public import public
from cpersona.core.validation import required_str
from cpersona.core.work import Work
from cpersona.embed.registry import expected_dimension
from cpersona.embed.runtime.base import EmbeddingBackend, EmbeddingFault, FaultKind
from cpersona.errors import InvalidInput, StorageFault
from cpersona.result_types.everyday import DeleteAgentDataResult, QueueStatus, QueueStatusResult, TableCounts
from cpersona.result_types.operations import EmbeddingStatus, ReembedResult, StatsResult
from cpersona.runtime import persistence
from cpersona.runtime.health_state import HEALTHY
from cpersona.services.backfill import BackfillWorker, enqueue_missing
from cpersona.services.core import Core, CoreService
from cpersona.storage.interface import Session
from cpersona.storage.values import EMBED

log = logging.getLogger(__name__)


class Admin(CoreService):
    """Whole-store operations and the embedding model's bookkeeping."""

    def __init__(
        self, core: Core, worker: BackfillWorker, discard_calibration: Callable[[str], bool] | None = None
    ) -> None:
        super().__init__(core)
        self.discard_calibration = discard_calibration
        self.worker = worker

    def on_model_ready(self) -> None:
        """Queue every row lacking a vector of the model that just loaded, and start back-filling.

        On a read-only or full database there is nothing to queue into: storage has said so once.
        """
        try:
            backend = self.embeddings.backend
            enqueue_missing(self.storage, backend.model_id, backend.dimension, backend.window_tokens)
        except StorageFault:
            return
        self.worker.wake()

    def corpus_dimension_check(self, backend: EmbeddingBackend) -> EmbeddingFault | None:
        """A fault only when the corpus was built by this model id at another dimension.

        Rows holding a vector of this model id at another length are *stray* and never
        fault the model when the registry vouches for the backend's dimension (a known
        model giving its known length: those rows cannot be right), nor when they are
        not most of the corpus (one imported row once switched vector search off for
        every agent: issue 17). Stray rows are logged here, re-queued for embedding when
        the model is ready (``enqueue_missing`` queues any row of another dimension) and
        reported by ``check_health`` (dimensions). Only a corpus mostly at another
        dimension under a model the registry does not know (an HTTP endpoint that
        changed its model under the same name) is a fault: re-embedding all of it is the
        operator's decision.
        """
        session = self.storage.session()
        if not session.vectors.dimensions(backend.model_id) - {backend.dimension}:
            return None
        stray = sum(
            s["rows"]
            for s in session.health.vector_shapes(None)
            if s["model"] == backend.model_id and s["dimension"] != backend.dimension
        )
        counts = session.admin.row_counts()
        rows = counts.get("memories", 0) + counts.get("episodes", 0)
        vouched = expected_dimension(backend.model_id) == backend.dimension
        if vouched or 2 * stray <= rows:
            log.warning(
                "%d row(s) hold a vector of %s that is not %d-d; they are re-embedded (check_health: dimensions)",
                stray,
                backend.model_id,
                backend.dimension,
            )
            return None
        stored = sorted(session.vectors.dimensions(backend.model_id) - {backend.dimension})
        return EmbeddingFault(
            FaultKind.DIMENSION_MISMATCH,
            f"model {backend.model_id} now gives {backend.dimension}-d vectors but most of the corpus holds "
            f"{', '.join(map(str, stored))}-d vectors from it",
            f"{self.settings.db_path}: {stray} of {rows} row(s) have embedding_dim {stored} for model "
            f"{backend.model_id}",
            "restore the model that built the corpus, or run `cpersona reembed` to re-embed the "
            "corpus with the current one",
        )

    @public
    def reembed(self, *, work: Work | None = None) -> ReembedResult:
        """Re-embed every row whose vector is missing or from another model/dimension (blocking).

        A model that cannot load (not installed, an unsupported CPERSONA_EMBEDDING_DIM, an
        endpoint down) is an ``ok: false`` answer naming the fault and its fix, never a
        raised EmbeddingFault; the rows stay queued. ``queued`` counts every embedding task
        waiting when the drain started (queued earlier or by this call), ``remaining`` those
        still waiting after it (retried later). ``work`` (``cpersona.core.work``) gets progress in
        tasks after each back-fill batch and may cancel between batches: the vectors written
        so far stay, the rest stay queued for the worker.
        """
        persistence.check_writable("reembed")
        backend = self.embeddings.backend
        if backend.mode == "none":
            raise InvalidInput("embeddings are off (CPERSONA_EMBEDDING_MODE=none): nothing to re-embed with")
        try:
            backend.load()
        except EmbeddingFault as fault:
            return {"ok": False, "error": str(fault), "fault": fault.kind, "queued": self._embed_depth()}
        with self.storage.write() as session:
            session.vectors.invalidate(backend.model_id, backend.dimension)
        enqueue_missing(self.storage, backend.model_id, backend.dimension, backend.window_tokens)
        if not self.embeddings.try_load():
            condition = self.health.condition
            return {
                "ok": False,
                "error": f"{condition.reason} ({condition.evidence}). Fix: {condition.runbook}",
                "fault": condition.kind or "fault",
                "queued": self._embed_depth(),
            }
        work = work or Work()
        queued = self._embed_depth()

        def after_batch(handled: int) -> None:
            work.report(handled, queued, "tasks")
            work.checkpoint(
                "reembed",
                "the vectors written so far stay; the other rows stay queued for the back-fill worker",
                lambda: {"queued": queued, "processed": handled, "remaining": self._embed_depth()},
            )

        handled = self.worker.drain(after_batch=after_batch)
        return {"ok": True, "queued": queued, "processed": handled, "remaining": self._embed_depth()}

    @staticmethod
    def _queue(session: Session) -> QueueStatus:
        # Storage rows and counts are plain dicts; their keys are the documented shape (tests/test_shapes.py).
        return cast(QueueStatus, session.tasks.status())

    def _embed_depth(self) -> int:
        return int(self.storage.session().tasks.status()["by_kind"].get(EMBED, 0))

    @public
    def get_queue_status(self) -> QueueStatusResult:
        """Background queue: depth, retrying, oldest task, per-kind depth, model readiness."""
        status = self._queue(self.storage.session())
        return {
            "ok": True,
            **status,
            "model_ready": self.embeddings.ready,
            "processed": self.worker.processed,
        }

    @public
    def delete_agent_data(
        self, agent_id: Annotated[str, arg.Field(description="The agent to erase.")]
    ) -> DeleteAgentDataResult:
        """Delete everything of one agent: memories (locked ones too), episodes, profiles, their tasks,
        and its calibration and precision (the sidecar entry)."""
        persistence.check_writable("delete_agent_data")
        agent = required_str(agent_id, "agent_id")
        with self.storage.write() as session:
            counts = cast(TableCounts, session.admin.delete_agent(agent))
        discarded = self.discard_calibration(agent) if self.discard_calibration is not None else False
        return {"ok": True, "agent_id": agent, "deleted": counts, "calibration_discarded": discarded}

    @public
    def embedding_status(self) -> EmbeddingStatus:
        """The degradation state: ``{state: unknown|healthy|hint|fault, kind?, reason?, evidence?, runbook?}``."""
        status = cast(EmbeddingStatus, self.health.condition.as_dict())
        status["mode"] = self.embeddings.backend.mode
        if self.health.state == HEALTHY:
            status["model_id"] = self.embeddings.model_id
            status["dimension"] = self.embeddings.dimension
        sharing = getattr(self.embeddings.backend, "sharing_status", None)
        if callable(sharing):
            status["sharing"] = sharing()
        kernel = getattr(self.embeddings.backend, "query_kernel_status", None)
        if callable(kernel) and (described := kernel()) is not None:
            status["query_kernel"] = described
        return status

    @public
    def stats(self) -> StatsResult:
        """Counts, database path and size, embedding status, queue depth, vector window coverage.

        ``rows_outside``: per agent and table, rows with active vectors beyond the scan window
        (never searched by vector). The window applies per recall scope; an agent's whole pool
        is its widest scope, so this is the most any of its recalls can miss.
        """
        session = self.storage.session()
        model_id = self.embeddings.model_id
        window = self.settings.max_memories
        return {
            "ok": True,
            "db_path": self.storage.location,
            "db_bytes": self.storage.size_bytes(),
            "counts": cast(TableCounts, session.admin.row_counts()),
            "memories_with_active_vectors": session.admin.active_vector_count(model_id or None),
            "vector_window": {
                "size": window,
                "rows_outside": session.admin.rows_beyond_window(model_id, window)
                if model_id and window
                else {},
            },
            "recall_mode": self.settings.recall_mode,
            "embedding": self.embedding_status(),
            "queue": self._queue(session),
        }
