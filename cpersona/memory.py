"""The plain Python API: one ``Memory`` object per database file.

The MCP tools, the CLI, the tests and the benchmarks all call this. It returns
full rows (no preview trimming); shaping for MCP responses lives in
``cpersona.server``. Return shapes are documented in docs/api-shapes.md.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from cpersona import context_merge
from cpersona.backfill import BackfillWorker, enqueue_missing
from cpersona.config import Settings
from cpersona.embed.base import EmbeddingBackend, EmbeddingFault, FaultKind
from cpersona.embed.service import EmbeddingService
from cpersona.errors import InvalidInput, LockedRow, NotFound
from cpersona.health.state import HEALTHY, HINT, HealthState
from cpersona.recaller import Recaller
from cpersona.retrieval.pipeline import RecallPipeline
from cpersona.storage import episodes as episode_rows
from cpersona.storage import memories as memory_rows
from cpersona.storage import profiles as profile_rows
from cpersona.storage import tasks
from cpersona.storage.db import Database
from cpersona.storage.migrations import migrate
from cpersona.storage.scope import Scope, write_axes
from cpersona.storage.vectors import to_blob
from cpersona.text import cap_text, clean_text, format_ts, json_field, normalise_timestamp, utc_now
from cpersona.validation import boolean, bounded_int, optional_str, required_str, row_id, string_list

MAX_LIST_LIMIT = 1000


def _default_backend(settings: Settings) -> EmbeddingBackend:
    from cpersona.embed.factory import create_backend

    return create_backend(settings)


class Memory:
    """Persistent memory over one SQLite file with hybrid recall.

    ``Memory(settings)`` opens (and migrates) the database and starts loading
    the embedding model in the background, so construction is fast. Pass
    ``backend=`` to choose the embedding backend explicitly (tests,
    benchmarks). ``prepare_model`` runs once in the background before the
    first load (the server passes the automatic model fetch). Use as a context
    manager or call ``close()``.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        backend: EmbeddingBackend | None = None,
        start_background: bool = True,
        model_retry_seconds: float = 30.0,
        prepare_model: Callable[[], str | None] | None = None,
    ) -> None:
        self.settings = settings or Settings.from_env()
        self.db = Database(self.settings.db_path)
        migrate(self.db)
        self.health = HealthState(self.settings.degraded_advisory)
        self.embeddings = EmbeddingService(
            backend or _default_backend(self.settings),
            self.health,
            retry_seconds=model_retry_seconds,
            corpus_check=self._corpus_dimension_check,
            prepare=prepare_model,
        )
        self.worker = BackfillWorker(self.db, self.embeddings, retry_delay=self.settings.task_retry_delay)
        self.recaller = Recaller(self.db, self.embeddings, self.health, RecallPipeline(self.settings))
        self.embeddings.on_ready(self._on_model_ready)
        if start_background:
            self.worker.start()
            self.embeddings.start()

    # -- lifecycle -----------------------------------------------------------------
    def close(self) -> None:
        """Stop background work and close connections."""
        self.worker.stop()
        self.embeddings.stop()
        self.db.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def wait_until_ready(self, timeout: float = 60.0) -> bool:
        """Block until the first model load attempt settles; True when embeddings work."""
        return self.embeddings.wait_settled(timeout)

    def drain_queue(self, max_rounds: int = 10_000) -> int:
        """Process due back-fill tasks in this thread (CLI, tests); returns tasks handled."""
        handled = 0
        for _ in range(max_rounds):
            n = self.worker.drain_once()
            if n == 0:
                break
            handled += n
        return handled

    def _on_model_ready(self) -> None:
        enqueue_missing(self.db, self.embeddings.backend.model_id, self.embeddings.backend.dimension)
        self.worker.wake()

    def _corpus_dimension_check(self, backend: EmbeddingBackend) -> EmbeddingFault | None:
        rows = (
            self.db.connection()
            .execute(
                "SELECT DISTINCT embedding_dim FROM memories WHERE embedding_model = ? "
                "UNION SELECT DISTINCT embedding_dim FROM episodes WHERE embedding_model = ?",
                (backend.model_id, backend.model_id),
            )
            .fetchall()
        )
        stored = sorted({int(r[0]) for r in rows if r[0] is not None} - {backend.dimension})
        if not stored:
            return None
        return EmbeddingFault(
            FaultKind.DIMENSION_MISMATCH,
            f"model {backend.model_id} now gives {backend.dimension}-d vectors but the corpus holds "
            f"{', '.join(map(str, stored))}-d vectors from it",
            f"{self.settings.db_path}: embedding_dim {stored} for model {backend.model_id}",
            "restore the model files that built the corpus, or run `cpersona reembed` to re-embed the "
            "corpus with the installed model",
        )

    def reembed(self) -> dict[str, Any]:
        """Re-embed every row whose vector is missing or from another model/dimension (blocking)."""
        backend = self.embeddings.backend
        if backend.mode == "none":
            raise InvalidInput("embeddings are off (CPERSONA_EMBEDDING_MODE=none): nothing to re-embed with")
        backend.load()
        with self.db.write() as conn:
            for table in ("memories", "episodes"):
                conn.execute(
                    f"UPDATE {table} SET embedding = NULL, embedding_model = NULL, embedding_dim = NULL "
                    "WHERE embedding_model = ? AND embedding_dim IS NOT ?",
                    (backend.model_id, backend.dimension),
                )
        queued = enqueue_missing(self.db, backend.model_id, backend.dimension)
        if not self.embeddings.try_load():
            return {"ok": False, "error": self.health.condition.reason, "queued": queued}
        handled = self.drain_queue()
        return {"ok": True, "queued": queued, "processed": handled}

    def _embed_document(self, text: str) -> tuple[bytes | None, str | None, int | None]:
        vectors = self.embeddings.embed_documents([text])
        if vectors is None:
            return None, None, None
        return to_blob(vectors[0]), self.embeddings.model_id, self.embeddings.dimension

    def _queue_if_unembedded(self, conn: sqlite3.Connection, table: str, target_id: int, embedded: bool) -> None:
        # In mode none there is no model to back-fill with; rows are queued when one is configured.
        if not embedded and self.health.state != HINT:
            tasks.enqueue(conn, tasks.EMBED, table, target_id, format_ts(utc_now()))
            self.worker.wake()

    # -- everyday memory -------------------------------------------------------------
    def store(
        self,
        agent_id: str,
        content: str,
        *,
        msg_id: str | int | None = None,
        source: dict[str, Any] | str | None = None,
        timestamp: str | float | None = None,
        metadata: dict[str, Any] | str | None = None,
        channel: str | None = None,
        project_id: str | None = None,
    ) -> dict[str, Any]:
        """Store one memory. Returns ``result`` stored | skipped | rejected (never raises for content)."""
        s = self.settings
        try:
            agent = required_str(agent_id, "agent_id")
            project, chan = write_axes(optional_str(project_id, "project_id"), optional_str(channel, "channel"))
            if not isinstance(content, str):
                raise InvalidInput("content must be a string")
            if isinstance(msg_id, bool) or not isinstance(msg_id, str | int | None):
                raise InvalidInput("message id must be a string or an integer")
            msg = optional_str(str(msg_id) if msg_id is not None else None, "message id") or ""
            cleaned = clean_text(content).strip()
            text, truncated = cap_text(cleaned, s.max_content_length)
            if not text:
                raise InvalidInput("content is empty")
            now = format_ts(utc_now())
            new = memory_rows.NewMemory(
                agent_id=agent,
                project_id=project,
                channel=chan,
                msg_id=msg.strip(),
                content=text,
                source=json_field(source, "source", s.max_metadata_bytes),
                metadata=json_field(metadata, "metadata", s.max_metadata_bytes),
                timestamp=normalise_timestamp(timestamp) if timestamp is not None else now,
                created_at=now,
            )
        except InvalidInput as exc:
            return {"ok": False, "result": "rejected", "reason": str(exc)}

        duplicate = memory_rows.find_duplicate(self.db.connection(), new)
        if duplicate is not None:
            return self._skipped(*duplicate)
        blob, model_id, dim = self._embed_document(new.content)
        new = memory_rows.NewMemory(**{**new.__dict__, "embedding": blob, "embedding_model": model_id, "embedding_dim": dim})
        try:
            with self.db.write() as conn:
                duplicate = memory_rows.find_duplicate(conn, new)
                if duplicate is not None:
                    return self._skipped(*duplicate)
                new_id = memory_rows.insert(conn, new)
                self._queue_if_unembedded(conn, "memories", new_id, blob is not None)
        except sqlite3.IntegrityError:  # another process won the race past our probe
            duplicate = memory_rows.find_duplicate(self.db.connection(), new)
            if duplicate is None:
                raise
            return self._skipped(*duplicate)
        result: dict[str, Any] = {
            "ok": True,
            "result": "stored",
            "id": new_id,
            "ref": f"mem:{new_id}",
            "embedded": blob is not None,
        }
        if truncated:
            result["truncated"] = True
            result["original_length"] = len(cleaned)
        return result

    @staticmethod
    def _skipped(existing_id: int, why: str) -> dict[str, Any]:
        reason = "same msg_id already stored in this scope" if why == "msg_id" else "identical content already stored"
        return {"ok": True, "result": "skipped", "id": existing_id, "ref": f"mem:{existing_id}", "reason": reason}

    def recall(
        self,
        agent_id: str | None,
        query: str = "",
        *,
        limit: int = 10,
        deep: bool = False,
        channel: str | None = None,
        project_id: str | None = None,
        exclude_contents: Sequence[str] | None = None,
        source_id: str | None = None,
    ) -> dict[str, Any]:
        """Hybrid recall; ``results`` ordered worst → best (the last element is the best match)."""
        return self.recaller.recall(
            agent_id,
            query,
            limit=limit,
            deep=deep,
            channel=channel,
            project_id=project_id,
            exclude_contents=exclude_contents,
            source_id=source_id,
        )

    def recall_with_context(
        self,
        agent_id: str,
        query: str,
        external_context: Sequence[dict[str, Any]],
        *,
        limit: int = 10,
        deep: bool = False,
        channel: str | None = None,
        project_id: str | None = None,
    ) -> dict[str, Any]:
        """Recall merged with conversation entries, deduplicated, in chronological order.

        Every entry's content filters the recall (the agent already has it);
        only user/assistant entries are merged into the output.
        """
        return self.recaller.recall_with_context(
            agent_id, query, external_context, limit=limit, deep=deep, channel=channel, project_id=project_id
        )

    def get_contents(self, agent_id: str, refs: Sequence[str]) -> dict[str, Any]:
        """Full rows for ``mem:<id>`` / ``ep:<id>`` refs, in request order: ``{ok, items, missing}``.

        Unknown refs and other agents' refs are listed in ``missing`` (never revealed).
        The MCP layer applies the 40,000-character batch budget (``deferred``).
        """
        agent = required_str(agent_id, "agent_id")
        wanted = string_list(refs, "refs", max_items=20, max_len=64)
        scope = Scope(agent_id=agent)
        parsed: list[tuple[str, str, int]] = []
        for ref in wanted:
            kind, _, number = ref.strip().partition(":")
            if kind not in ("mem", "ep") or not number.isdigit():
                raise InvalidInput(f"ref {ref!r} is not of the form mem:<id> or ep:<id>")
            parsed.append((ref, kind, int(number)))
        with self.db.read() as conn:
            mems = memory_rows.get_many(conn, [n for _, k, n in parsed if k == "mem"], scope)
            eps = episode_rows.get_many(conn, [n for _, k, n in parsed if k == "ep"], scope)
        items, missing = [], []
        for ref, kind, number in parsed:
            row = (mems if kind == "mem" else eps).get(number)
            if row is None:
                missing.append(ref)
            else:
                items.append(memory_rows.row_to_dict(row) if kind == "mem" else episode_rows.row_to_dict(row))
        return {"ok": True, "items": items, "missing": missing}

    def archive_episode(
        self,
        agent_id: str,
        summary: str,
        *,
        keywords: Sequence[str] | str | None = None,
        resolved: bool = False,
        history: Sequence[dict[str, Any]] | None = None,
        project_id: str | None = None,
        channel: str | None = None,
    ) -> dict[str, Any]:
        """Store a session summary; it becomes the newest episode boundary of its scope."""
        agent = required_str(agent_id, "agent_id")
        project, chan = write_axes(optional_str(project_id, "project_id"), optional_str(channel, "channel"))
        if not isinstance(summary, str):
            raise InvalidInput("summary must be a string")
        text, truncated = cap_text(clean_text(summary).strip(), self.settings.max_content_length)
        if not text:
            raise InvalidInput("summary is empty")
        if isinstance(keywords, str):
            keywords = [k for k in keywords.split(",")]
        words = [k.strip() for k in string_list(keywords, "keywords", max_len=200) if k.strip()]
        entries = context_merge.validate_entries(history)
        stamps = sorted(e["timestamp"] for e in entries if "timestamp" in e)
        blob, model_id, dim = self._embed_document(text)
        now = format_ts(utc_now())
        with self.db.write() as conn:
            new_id = episode_rows.insert(
                conn,
                agent_id=agent,
                project_id=project,
                channel=chan,
                summary=text,
                keywords=words,
                start_time=stamps[0] if stamps else None,
                end_time=stamps[-1] if stamps else None,
                resolved=boolean(resolved, "resolved"),
                created_at=now,
                embedding=blob,
                embedding_model=model_id,
                embedding_dim=dim,
            )
            self._queue_if_unembedded(conn, "episodes", new_id, blob is not None)
        result = {
            "ok": True,
            "id": new_id,
            "ref": f"ep:{new_id}",
            "embedded": blob is not None,
            "start_time": stamps[0] if stamps else None,
            "end_time": stamps[-1] if stamps else None,
        }
        if truncated:
            result["truncated"] = True
        return result

    def update_memory(self, memory_id: int | str, content: str, *, agent_id: str | None = None) -> dict[str, Any]:
        """Replace a memory's content and re-embed it; refused when locked or not owned."""
        rid = row_id(memory_id, "memory_id", "mem")
        agent = optional_str(agent_id, "agent_id")
        if not isinstance(content, str):
            raise InvalidInput("content must be a string")
        text, truncated = cap_text(clean_text(content).strip(), self.settings.max_content_length)
        if not text:
            raise InvalidInput("content is empty")
        self._owned_memory(rid, agent, for_change=True)
        blob, model_id, dim = self._embed_document(text)
        try:
            with self.db.write() as conn:
                self._owned_memory(rid, agent, for_change=True, conn=conn)
                memory_rows.update_content(conn, rid, text)
                if blob is not None:
                    memory_rows.set_embedding(conn, rid, blob, model_id, dim)
                self._queue_if_unembedded(conn, "memories", rid, blob is not None)
        except sqlite3.IntegrityError as exc:
            raise InvalidInput("another memory in the same scope already has this content") from exc
        result: dict[str, Any] = {"ok": True, "id": rid, "ref": f"mem:{rid}", "embedded": blob is not None}
        if truncated:
            result["truncated"] = True
        return result

    def _owned_memory(
        self, rid: int, agent: str | None, *, for_change: bool, conn: sqlite3.Connection | None = None
    ) -> sqlite3.Row:
        row = memory_rows.get(conn or self.db.connection(), rid)
        if row is None or (agent is not None and row["agent_id"] != agent):
            raise NotFound(f"memory {rid} not found" + (f" for agent {agent!r}" if agent is not None else ""))
        if for_change and row["locked"]:
            raise LockedRow(f"memory {rid} is locked; unlock_memory it first")
        return row

    # -- profile ---------------------------------------------------------------------
    def get_profile(self, agent_id: str, *, project_id: str = "", user_id: str = "") -> dict[str, Any]:
        """The agent's profile text (``profile: None`` when none is stored)."""
        agent = required_str(agent_id, "agent_id")
        row = profile_rows.get(
            self.db.connection(), agent, required_str(project_id, "project_id"), required_str(user_id, "user_id")
        )
        return {
            "ok": True,
            "agent_id": agent,
            "profile": row["content"] if row else None,
            "updated_at": row["updated_at"] if row else None,
        }

    def update_profile(self, agent_id: str, profile: str, *, project_id: str = "", user_id: str = "") -> dict[str, Any]:
        """Replace the profile (capped at CPERSONA_MAX_PROFILE_LENGTH, says ``truncated``)."""
        agent = required_str(agent_id, "agent_id")
        project, user = required_str(project_id, "project_id"), required_str(user_id, "user_id")
        if not isinstance(profile, str):
            raise InvalidInput("profile must be a string")
        text, truncated = cap_text(clean_text(profile).strip(), self.settings.max_profile_length)
        if not text:
            raise InvalidInput("profile is empty")
        now = format_ts(utc_now())
        with self.db.write() as conn:
            profile_rows.upsert(conn, agent, project, user, text, now)
        result: dict[str, Any] = {"ok": True, "agent_id": agent, "updated_at": now, "length": len(text)}
        if truncated:
            result["truncated"] = True
        return result

    # -- browsing --------------------------------------------------------------------
    def list_memories(
        self, agent_id: str | None = None, *, limit: int = 100, project_id: str | None = None
    ) -> dict[str, Any]:
        """Memories newest first: ``{ok, items, count, total}``."""
        scope = Scope(optional_str(agent_id, "agent_id"), optional_str(project_id, "project_id"))
        n = bounded_int(limit, "limit", 0, MAX_LIST_LIMIT)
        with self.db.read() as conn:
            items = [memory_rows.row_to_dict(r) for r in memory_rows.list_recent(conn, scope, n)]
            total = memory_rows.count(conn, scope)
        return {"ok": True, "items": items, "count": len(items), "total": total}

    def list_episodes(
        self, agent_id: str | None = None, *, limit: int = 50, project_id: str | None = None
    ) -> dict[str, Any]:
        """Episodes newest first: ``{ok, items, count, total}``."""
        scope = Scope(optional_str(agent_id, "agent_id"), optional_str(project_id, "project_id"))
        n = bounded_int(limit, "limit", 0, MAX_LIST_LIMIT)
        with self.db.read() as conn:
            items = [episode_rows.row_to_dict(r) for r in episode_rows.list_recent(conn, scope, n)]
            total = episode_rows.count(conn, scope)
        return {"ok": True, "items": items, "count": len(items), "total": total}

    def get_queue_status(self) -> dict[str, Any]:
        """Background queue: depth, retrying, oldest task, per-kind depth, model readiness."""
        status = tasks.status(self.db.connection())
        return {"ok": True, **status, "model_ready": self.embeddings.ready, "processed": self.worker.processed}

    # -- protection and deletion -------------------------------------------------------
    def _set_lock(self, memory_id: int | str, agent_id: str | None, locked: bool) -> dict[str, Any]:
        rid = row_id(memory_id, "memory_id", "mem")
        agent = optional_str(agent_id, "agent_id")
        with self.db.write() as conn:
            self._owned_memory(rid, agent, for_change=False, conn=conn)
            memory_rows.set_locked(conn, rid, locked)
        return {"ok": True, "id": rid, "ref": f"mem:{rid}", "locked": locked}

    def lock_memory(self, memory_id: int | str, *, agent_id: str | None = None) -> dict[str, Any]:
        """Protect a memory from edit and delete."""
        return self._set_lock(memory_id, agent_id, True)

    def unlock_memory(self, memory_id: int | str, *, agent_id: str | None = None) -> dict[str, Any]:
        """Remove the protection."""
        return self._set_lock(memory_id, agent_id, False)

    def delete_memory(self, memory_id: int | str, *, agent_id: str | None = None) -> dict[str, Any]:
        """Delete one memory (refused when locked or owned by another agent)."""
        rid = row_id(memory_id, "memory_id", "mem")
        agent = optional_str(agent_id, "agent_id")
        with self.db.write() as conn:
            self._owned_memory(rid, agent, for_change=True, conn=conn)
            memory_rows.delete(conn, rid)
            tasks.remove_for_target(conn, "memories", rid)
        return {"ok": True, "id": rid, "ref": f"mem:{rid}", "deleted": True}

    def delete_episode(self, episode_id: int | str, *, agent_id: str | None = None) -> dict[str, Any]:
        """Delete one episode (ownership enforced when agent_id is given)."""
        rid = row_id(episode_id, "episode_id", "ep")
        agent = optional_str(agent_id, "agent_id")
        with self.db.write() as conn:
            row = episode_rows.get(conn, rid)
            if row is None or (agent is not None and row["agent_id"] != agent):
                raise NotFound(f"episode {rid} not found" + (f" for agent {agent!r}" if agent is not None else ""))
            episode_rows.delete(conn, rid)
            tasks.remove_for_target(conn, "episodes", rid)
        return {"ok": True, "id": rid, "ref": f"ep:{rid}", "deleted": True}

    def delete_agent_data(self, agent_id: str) -> dict[str, Any]:
        """Delete everything of one agent: memories (locked ones too), episodes, profiles, their tasks."""
        agent = required_str(agent_id, "agent_id")
        with self.db.write() as conn:
            for table in ("memories", "episodes"):
                conn.execute(
                    f"DELETE FROM pending_memory_tasks WHERE target_table = '{table}' AND target_id IN "
                    f"(SELECT id FROM {table} WHERE agent_id = ?)",
                    (agent,),
                )
            counts = {
                table: conn.execute(f"DELETE FROM {table} WHERE agent_id = ?", (agent,)).rowcount
                for table in ("memories", "episodes", "profiles")
            }
        return {"ok": True, "agent_id": agent, "deleted": counts}

    # -- health ----------------------------------------------------------------------
    def embedding_status(self) -> dict[str, Any]:
        """The degradation state: ``{state: unknown|healthy|hint|fault, kind?, reason?, evidence?, runbook?}``."""
        status = self.health.condition.as_dict()
        status.update(mode=self.embeddings.backend.mode)
        if self.health.state == HEALTHY:
            status.update(model_id=self.embeddings.model_id, dimension=self.embeddings.dimension)
        return status

    def _rows_outside_window(self, conn: sqlite3.Connection) -> dict[str, dict[str, int]]:
        """Per agent and table, rows with active vectors beyond the scan window (never searched by vector).

        The window applies per recall scope; an agent's whole pool is its widest scope, so
        this is the most any of its recalls can miss.
        """
        model_id = self.embeddings.model_id
        if not model_id:
            return {}
        outside: dict[str, dict[str, int]] = {}
        for table in ("memories", "episodes"):
            for agent, n in conn.execute(
                f"SELECT agent_id, COUNT(*) FROM {table} WHERE embedding_model = ? GROUP BY agent_id HAVING COUNT(*) > ?",
                (model_id, self.settings.max_memories),
            ):
                outside.setdefault(agent, {})[table] = int(n) - self.settings.max_memories
        return outside

    def stats(self) -> dict[str, Any]:
        """Counts, database path and size, embedding status, queue depth, vector window coverage."""
        conn = self.db.connection()
        counts = {
            t: int(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0])
            for t in ("memories", "episodes", "profiles")
        }
        embedded = int(
            conn.execute(
                "SELECT COUNT(*) FROM memories WHERE embedding IS NOT NULL AND embedding_model IS ?",
                (self.embeddings.model_id or None,),
            ).fetchone()[0]
        )
        size = sum(p.stat().st_size for p in self.db.path.parent.glob(self.db.path.name + "*") if p.is_file())
        return {
            "ok": True,
            "db_path": str(self.db.path),
            "db_bytes": size,
            "counts": counts,
            "memories_with_active_vectors": embedded,
            "vector_window": {
                "size": self.settings.max_memories,
                "rows_outside": self._rows_outside_window(conn),
            },
            "recall_mode": self.settings.recall_mode,
            "embedding": self.embedding_status(),
            "queue": tasks.status(conn),
        }


    # -- portability (export / import / merge / channel-axis repair) ---------------------
    def _portability(self) -> Any:
        from cpersona.portability.service import Portability

        def active_model() -> tuple[str, int] | None:
            ready = self.embeddings.ready and self.embeddings.model_id and self.embeddings.dimension
            return (self.embeddings.model_id, self.embeddings.dimension) if ready else None

        return Portability(
            self.db,
            self.settings,
            queue_backfill=lambda: self.embeddings.backend.mode != "none",
            active_model=active_model,
            wake=self.worker.wake,
        )

    def export_memories(
        self,
        agent_id: str | None,
        output_path: str,
        include_embeddings: bool = False,
        *,
        overwrite: bool = False,
        confined: bool = True,
        progress: Callable[[int, int], None] | None = None,
    ) -> dict[str, Any]:
        """Export one agent's memories, episodes and profiles (every agent's when None) as JSONL.

        ``output_path`` is confined to the export directory unless ``confined=False``
        (the operator CLI). The file is written atomically and never replaces an
        existing file unless ``overwrite``. Format: docs/tools.md "export_memories".
        """
        return self._portability().export_memories(
            agent_id, output_path, include_embeddings, overwrite=overwrite, confined=confined, progress=progress
        )

    def import_memories(
        self,
        input_path: str,
        target_agent_id: str | None = None,
        dry_run: bool = False,
        *,
        confined: bool = True,
        progress: Callable[[int, int], None] | None = None,
    ) -> dict[str, Any]:
        """Import an export file: idempotent, bad lines reported by number, rows without vectors queued."""
        return self._portability().import_memories(
            input_path, target_agent_id, dry_run, confined=confined, progress=progress
        )

    def merge_memories(
        self, source_agent_id: str, target_agent_id: str, strategy: str = "skip", mode: str = "copy",
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Copy or move every row of one agent into another in one transaction, skipping duplicates."""
        return self._portability().merge_memories(source_agent_id, target_agent_id, strategy, mode, dry_run)

    def migrate_channel_axis(
        self, agent_id: str | None = None, dry_run: bool = True, globalize_unrecoverable: bool = False,
        bridge_channels: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """One-time repair: move rows off bridge channels onto the channel named in their session id."""
        return self._portability().migrate_channel_axis(agent_id, dry_run, globalize_unrecoverable, bridge_channels)
