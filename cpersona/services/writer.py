"""Writing: store, archive, edit, lock, delete, profile replacement.

Embeddings are computed outside the write transaction (a slow model never
holds the write lock); a row that could not be embedded is queued for the
back-fill worker in the same transaction that writes it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from datetime import timedelta
from typing import Annotated, Any

from cpersona import arguments as arg
from cpersona.core.limits import MAX_KEYWORD_CHARS, MAX_REASON_CHARS, TTL_MAX_SECONDS, TTL_MIN_SECONDS
from cpersona.core.public import public
from cpersona.core.text import (
    cap_text,
    clean_text,
    format_ts,
    json_field,
    normalise_timestamp,
    parse_ts,
    utc_now,
)
from cpersona.core.validation import agent_set, boolean, optional_str, required_str, row_id, string_list
from cpersona.errors import DuplicateRow, InvalidInput, LockedRow, NotFound, Rejected, SecretDetected
from cpersona.result_types.everyday import (
    ArchiveEpisodeResult,
    DeleteResult,
    LockResult,
    RetireResult,
    StoreResult,
    StoreSkipped,
    StoreStored,
    UpdateMemoryResult,
    UpdateProfileResult,
)
from cpersona.result_types.links import AssociationOutcome
from cpersona.runtime import persistence
from cpersona.runtime.health_state import HINT
from cpersona.secret_guard import Redaction, merge_counts
from cpersona.services import context_merge, supersede
from cpersona.services.core import Core, CoreService
from cpersona.services.links import Association, declare_in, parse_associations
from cpersona.services.long_records import embed_with_blocks
from cpersona.storage.blocks import NewBlock
from cpersona.storage.interface import Session
from cpersona.storage.scope import write_axes
from cpersona.storage.values import EMBED, EPISODES, MEMORIES, NewEpisode, NewMemory, NewProfile, Row
from cpersona.storage.vectors import to_blob


def _skipped(existing_id: int, why: str) -> StoreSkipped:
    reason = (
        "same msg_id already stored in this scope" if why == "msg_id" else "identical content already stored"
    )
    return {"ok": True, "result": "skipped", "id": existing_id, "ref": f"mem:{existing_id}", "reason": reason}


class Writer(CoreService):
    """Every write a client can ask for, validated, deduplicated and embedded."""

    def __init__(
        self, core: Core, wake_worker: Callable[[], None], on_stored: Callable[[str], None] | None = None
    ) -> None:
        super().__init__(core)
        self.wake_worker = wake_worker
        # Told the agent of every stored memory (self-calibration's counter: O(1), no I/O).
        self.on_stored = on_stored

    def _embed_document(self, text: str) -> tuple[bytes | None, str | None, int | None]:
        vectors = self.embeddings.embed_documents([text])
        if vectors is None:
            return None, None, None
        return to_blob(vectors[0]), self.embeddings.model_id, self.embeddings.dimension

    def _embed_memory(self, text: str) -> tuple[bytes | None, str | None, int | None, list[NewBlock]]:
        """The memory's vector and its blocks' (a long text: docs/retrieval.md#long-records), one batch."""
        done = embed_with_blocks(self.embeddings, [text])
        if done is None:
            return None, None, None, []
        return done[0].embedding, self.embeddings.model_id, self.embeddings.dimension, done[0].blocks

    def _queue_if_unembedded(self, session: Session, table: str, target_id: int, embedded: bool) -> None:
        # In mode none there is no model to back-fill with; rows are queued when one is configured.
        if not embedded and self.health.state != HINT:
            session.tasks.enqueue(EMBED, table, target_id, format_ts(utc_now()))
            self.wake_worker()

    def _validated_memory(
        self,
        agent_id: str,
        content: str,
        msg_id: str | int | None,
        source: dict[str, Any] | str | None,
        timestamp: str | float | None,
        metadata: dict[str, Any] | str | None,
        channel: str | None,
        project_id: str | None,
    ) -> tuple[NewMemory, bool, str, Redaction]:
        s = self.settings
        agent = required_str(agent_id, "agent_id")
        project, chan = write_axes(optional_str(project_id, "project_id"), optional_str(channel, "channel"))
        if not isinstance(content, str):
            raise InvalidInput("content must be a string")
        if isinstance(msg_id, bool) or not isinstance(msg_id, str | int | None):
            raise InvalidInput("message id must be a string or an integer")
        msg = optional_str(str(msg_id) if msg_id is not None else None, "message id") or ""
        # Secrets go before the cap: a key cut in half by it would no longer be recognised.
        guarded = self.secrets.check(clean_text(content).strip(), "content")
        cleaned = guarded.text
        text, truncated = cap_text(cleaned, s.max_content_length)
        if not text:
            raise InvalidInput("content is empty")
        meta = self.secrets.check_json(json_field(metadata, "metadata", s.max_metadata_bytes), "metadata")
        src = self.secrets.check_json(json_field(source, "source", s.max_metadata_bytes), "source")
        now = format_ts(utc_now())
        new = NewMemory(
            agent_id=agent,
            project_id=project,
            channel=chan,
            msg_id=msg.strip(),
            content=text,
            source=src.text if source is not None else None,
            metadata=meta.text if metadata is not None else None,
            timestamp=normalise_timestamp(timestamp) if timestamp is not None else now,
            created_at=now,
        )
        return new, truncated, cleaned, merge_counts(guarded, meta, src)

    @public
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
        project_id: arg.ProjectWrite = None,
        associations: arg.Associations | None = None,
        readable_agents: frozenset[str] | None = None,
        supersedes: arg.Supersedes | None = None,
        ttl: arg.Ttl | None = None,
        expires_at: arg.ExpiresAt | None = None,
    ) -> StoreResult:
        """Store one memory. Returns ``result`` stored | skipped; raises ``Rejected`` for unusable input.

        ``associations`` declares links from the new memory in the same transaction
        (cpersona.services.links): a target memory that is unknown or outside ``readable_agents``
        (None: every agent) refuses the whole store (NotFound); a duplicate is skipped, links included.

        ``supersedes`` (memory refs of the same agent) marks those rows superseded by the new one, in
        the same transaction (docs/decisions.md "Supersede, keep history"); a refused link writes
        nothing. A skipped duplicate links nothing (``update_memory`` links an existing row).

        ``ttl`` (seconds, 1 .. ten years) or ``expires_at`` (a time in that window) lets the memory
        expire: from then on no recall returns it, and the queue worker deletes it after
        CPERSONA_EXPIRY_GRACE seconds (a skipped duplicate keeps the existing row's expiry).
        """
        older = supersede.parse_refs(supersedes)
        links: list[Association] = []
        try:
            new, truncated, cleaned, redacted = self._validated_memory(
                agent_id, content, msg_id, source, timestamp, metadata, channel, project_id
            )
            if associations is not None:
                links = parse_associations(associations)
            expiry = _expiry(ttl, expires_at)
        except SecretDetected:
            raise  # its own code (secret_detected), not a generic rejection
        except InvalidInput as exc:
            raise Rejected(str(exc)) from exc
        # Paused: skipped, persisted: false, nothing written (docs/tools.md#pause_persistence).
        if persistence.is_paused():
            return persistence.PROCESS.store_skipped()

        if older:  # refuse a bad link before the embedding is paid for (checked again when written)
            supersede.check_links(self.storage.session(), None, new.agent_id, older, None)
        duplicate = self.storage.session().memories.find_duplicate(new)
        if duplicate is not None:
            return _skipped(*duplicate)
        blob, model_id, dim, blocks = self._embed_memory(new.content)
        new = NewMemory(
            **{**new.__dict__, "embedding": blob, "embedding_model": model_id, "embedding_dim": dim}
        )
        try:
            with self.storage.write() as session:
                duplicate = session.memories.find_duplicate(new)
                if duplicate is not None:
                    return _skipped(*duplicate)
                marked = supersede.check_links(session, None, new.agent_id, older, None) if older else []
                new_id = session.memories.insert(new)
                if expiry is not None:
                    session.supersede.set_expiry(new_id, expiry)
                if blocks and model_id is not None and dim is not None:
                    session.memories.set_blocks(new_id, blocks, model_id, dim)
                if marked:
                    session.supersede.mark(marked, new_id, new.created_at)
                declared = self._declare(session, new_id, links, readable_agents)
                self._queue_if_unembedded(session, MEMORIES, new_id, blob is not None)
        except DuplicateRow:  # another process won the race past our probe
            duplicate = self.storage.session().memories.find_duplicate(new)
            if duplicate is None:
                raise
            return _skipped(*duplicate)
        if self.on_stored is not None:
            self.on_stored(new.agent_id)
        result: StoreStored = {
            "ok": True,
            "result": "stored",
            "id": new_id,
            "ref": f"mem:{new_id}",
            "embedded": blob is not None,
        }
        if older:
            result["supersedes"] = [f"mem:{i}" for i in older]
        if truncated:
            result["truncated"] = True
            result["original_length"] = len(cleaned)
        if associations is not None:
            result["associations"] = declared
        if redacted.total:
            result["redacted"] = redacted.summary()
        if expiry is not None:
            result["expires_at"] = expiry
        return result

    @staticmethod
    def _declare(
        session: Session, new_id: int, links: list[Association], readable: frozenset[str] | None
    ) -> list[AssociationOutcome]:
        if not links:
            return []
        row = session.memories.get(new_id)
        assert row is not None  # inserted in this transaction
        agent = str(row["agent_id"])
        return declare_in(session, row, links, None if readable is None else readable | {agent})

    @public
    def archive_episode(
        self,
        agent_id: str,
        summary: Annotated[str, arg.Field(description="What happened, was decided, is open.")],
        *,
        keywords: Annotated[
            Sequence[str] | str | None,
            arg.Field(description="Search keywords (list, or one comma-separated string)."),
        ] = None,
        resolved: Annotated[
            bool, arg.Field(description="True when the session's issue was resolved.")
        ] = False,
        history: Annotated[
            Sequence[dict[str, Any]] | None,
            arg.Field(description="The session's messages; their timestamps set start and end."),
        ] = None,
        project_id: arg.ProjectWrite = None,
        channel: str | None = None,
    ) -> ArchiveEpisodeResult:
        """Store a session summary; it becomes the newest episode boundary of its scope."""
        persistence.check_writable("archive_episode")
        agent = required_str(agent_id, "agent_id")
        project, chan = write_axes(optional_str(project_id, "project_id"), optional_str(channel, "channel"))
        if not isinstance(summary, str):
            raise InvalidInput("summary must be a string")
        guarded = self.secrets.check(clean_text(summary).strip(), "summary")
        text, truncated = cap_text(guarded.text, self.settings.max_content_length)
        if not text:
            raise InvalidInput("summary is empty")
        if isinstance(keywords, str):
            keywords = [k for k in keywords.split(",")]
        words = [k.strip() for k in string_list(keywords, "keywords", max_len=MAX_KEYWORD_CHARS) if k.strip()]
        guarded_words = [self.secrets.check(w, "keywords") for w in words]
        words = [g.text for g in guarded_words]
        guarded = merge_counts(guarded, *guarded_words)
        entries = context_merge.validate_entries(history, "history")
        stamps = sorted(e["timestamp"] for e in entries if "timestamp" in e)
        blob, model_id, dim = self._embed_document(text)
        now = format_ts(utc_now())
        with self.storage.write() as session:
            new_id = session.episodes.insert(
                NewEpisode(
                    agent_id=agent,
                    project_id=project,
                    channel=chan,
                    summary=text,
                    keywords="\n".join(words),  # one per line, as stored (so FTS indexes each)
                    start_time=stamps[0] if stamps else None,
                    end_time=stamps[-1] if stamps else None,
                    resolved=boolean(resolved, "resolved"),
                    created_at=now,
                    embedding=blob,
                    embedding_model=model_id,
                    embedding_dim=dim,
                )
            )
            self._queue_if_unembedded(session, EPISODES, new_id, blob is not None)
        result: ArchiveEpisodeResult = {
            "ok": True,
            "id": new_id,
            "ref": f"ep:{new_id}",
            "embedded": blob is not None,
            "start_time": stamps[0] if stamps else None,
            "end_time": stamps[-1] if stamps else None,
        }
        if truncated:
            result["truncated"] = True
        if guarded.total:
            result["redacted"] = guarded.summary()
        return result

    @public
    def update_memory(
        self,
        memory_id: arg.MemoryRef,
        content: Annotated[
            str | None, arg.Field(description="The new text (optional with supersedes).")
        ] = None,
        *,
        agent_id: arg.OwnerAgentId = None,
        allowed_agents: Collection[str] | None = None,
        supersedes: arg.Supersedes | None = None,
    ) -> UpdateMemoryResult:
        """Replace a memory's content and re-embed it; refused when locked or not owned.

        A row outside ``agent_id`` or ``allowed_agents`` (ACL grants) answers not found.
        ``supersedes`` marks those memories (of the same agent) superseded by this one; with it,
        ``content`` may be omitted (the text stays, only the links are written).
        """
        persistence.check_writable("update_memory")
        rid = row_id(memory_id, "memory_id", "mem")
        agent = optional_str(agent_id, "agent_id")
        allowed = agent_set(allowed_agents)
        older = supersede.parse_refs(supersedes)
        text: str | None = None
        truncated = False
        guarded = Redaction("")
        if content is not None or not older:
            if not isinstance(content, str):
                raise InvalidInput("content must be a string")
            guarded = self.secrets.check(clean_text(content).strip(), "content")
            text, truncated = cap_text(guarded.text, self.settings.max_content_length)
            if not text:
                raise InvalidInput("content is empty")
        row = _owned_memory(self.storage.session(), rid, agent, allowed, for_change=True)
        if older:
            supersede.check_links(self.storage.session(), rid, row["agent_id"], older, allowed)
        blob, model_id, dim, blocks = self._embed_memory(text) if text is not None else (None, None, None, [])
        try:
            with self.storage.write() as session:
                row = _owned_memory(session, rid, agent, allowed, for_change=True)
                marked = supersede.check_links(session, rid, row["agent_id"], older, allowed) if older else []
                if text is not None:
                    session.memories.update_content(rid, text)
                    if blob is not None:
                        session.memories.set_embedding(rid, blob, model_id, dim)
                    if (
                        blocks and model_id is not None and dim is not None
                    ):  # the old ones went with the old text
                        session.memories.set_blocks(rid, blocks, model_id, dim)
                    self._queue_if_unembedded(session, MEMORIES, rid, blob is not None)
                if marked:
                    session.supersede.mark(marked, rid, format_ts(utc_now()))
        except DuplicateRow as exc:
            raise InvalidInput("another memory in the same scope already has this content") from exc
        embedded = blob is not None if text is not None else bool(row["embedded"])
        result: UpdateMemoryResult = {"ok": True, "id": rid, "ref": f"mem:{rid}", "embedded": embedded}
        if older:
            result["supersedes"] = [f"mem:{i}" for i in older]
        if truncated:
            result["truncated"] = True
        if guarded.total:
            result["redacted"] = guarded.summary()
        return result

    @public
    def update_profile(
        self,
        agent_id: str,
        profile: Annotated[str, arg.Field(description="The full new profile text.")],
        *,
        project_id: Annotated[str, arg.Field(description="Default '': the global profile.")] = "",
        user_id: arg.UserId = "",
    ) -> UpdateProfileResult:
        """Replace the profile (capped at CPERSONA_MAX_PROFILE_LENGTH, says ``truncated``)."""
        persistence.check_writable("update_profile")
        agent = required_str(agent_id, "agent_id")
        project, user = required_str(project_id, "project_id"), required_str(user_id, "user_id")
        if not isinstance(profile, str):
            raise InvalidInput("profile must be a string")
        guarded = self.secrets.check(clean_text(profile).strip(), "profile")
        text, truncated = cap_text(guarded.text, self.settings.max_profile_length)
        if not text:
            raise InvalidInput("profile is empty")
        now = format_ts(utc_now())
        with self.storage.write() as session:
            session.profiles.upsert(NewProfile(agent, project, user, text, now))
        result: UpdateProfileResult = {"ok": True, "agent_id": agent, "updated_at": now, "length": len(text)}
        if truncated:
            result["truncated"] = True
        if guarded.total:
            result["redacted"] = guarded.summary()
        return result

    def _set_lock(
        self, memory_id: int | str, agent_id: str | None, allowed_agents: Collection[str] | None, locked: bool
    ) -> LockResult:
        persistence.check_writable("lock_memory" if locked else "unlock_memory")
        rid = row_id(memory_id, "memory_id", "mem")
        agent = optional_str(agent_id, "agent_id")
        allowed = agent_set(allowed_agents)
        with self.storage.write() as session:
            _owned_memory(session, rid, agent, allowed, for_change=False)
            session.memories.set_locked(rid, locked)
        return {"ok": True, "id": rid, "ref": f"mem:{rid}", "locked": locked}

    @public
    def lock_memory(
        self,
        memory_id: arg.MemoryRef,
        *,
        agent_id: arg.OwnerAgentId = None,
        allowed_agents: Collection[str] | None = None,
    ) -> LockResult:
        """Protect a memory from edit and delete."""
        return self._set_lock(memory_id, agent_id, allowed_agents, True)

    @public
    def unlock_memory(
        self,
        memory_id: arg.MemoryRef,
        *,
        agent_id: arg.OwnerAgentId = None,
        allowed_agents: Collection[str] | None = None,
    ) -> LockResult:
        """Remove the protection."""
        return self._set_lock(memory_id, agent_id, allowed_agents, False)

    def _set_retired(
        self,
        memory_id: int | str,
        reason: str | None,
        agent_id: str | None,
        allowed_agents: Collection[str] | None,
        retire: bool,
    ) -> RetireResult:
        action = "retire_memory" if retire else "unretire_memory"
        persistence.check_writable(action)
        rid = row_id(memory_id, "memory_id", "mem")
        agent = optional_str(agent_id, "agent_id")
        allowed = agent_set(allowed_agents)
        why = optional_str(reason, "reason", max_len=MAX_REASON_CHARS, free_text=True)
        if why is not None:
            # A reason is stored text like any other: the secret guard applies to it.
            why = self.secrets.check(clean_text(why).strip(), "reason").text or None
        with self.storage.write() as session:
            _owned_memory(session, rid, agent, allowed, for_change=True)  # locked rows refuse, as for edits
            before = session.supersede.retirements([rid]).get(rid)
            if retire and before is None:
                session.supersede.set_retired(rid, format_ts(utc_now()), why)
            elif not retire and before is not None:
                session.supersede.set_retired(rid, None, None)
            after = session.supersede.retirements([rid]).get(rid)
        result: RetireResult = {
            "ok": True,
            "id": rid,
            "ref": f"mem:{rid}",
            "retired": after is not None,
            "was_retired": before is not None,
        }
        if after is not None:
            result["retired_at"], result["retire_reason"] = after
        return result

    @public
    def retire_memory(
        self,
        memory_id: arg.MemoryRef,
        reason: arg.Reason = None,
        *,
        agent_id: arg.OwnerAgentId = None,
        allowed_agents: Collection[str] | None = None,
    ) -> RetireResult:
        """Take a memory out of recall without a successor; it stays for get_history and the browser view.

        Refused when locked (``locked``); another agent's row (or one outside ``allowed_agents``) answers
        not found. Retiring a retired memory keeps its first time and reason (``was_retired: true``).
        """
        return self._set_retired(memory_id, reason, agent_id, allowed_agents, True)

    @public
    def unretire_memory(
        self,
        memory_id: arg.MemoryRef,
        *,
        agent_id: arg.OwnerAgentId = None,
        allowed_agents: Collection[str] | None = None,
    ) -> RetireResult:
        """Bring a retired memory back into recall (refused when locked, as retire is)."""
        return self._set_retired(memory_id, None, agent_id, allowed_agents, False)

    @public
    def delete_memory(
        self,
        memory_id: arg.MemoryRef,
        *,
        agent_id: arg.OwnerAgentId = None,
        allowed_agents: Collection[str] | None = None,
    ) -> DeleteResult:
        """Delete one memory (refused when locked; not found when owned by another or an ungranted agent)."""
        persistence.check_writable("delete_memory")
        rid = row_id(memory_id, "memory_id", "mem")
        agent = optional_str(agent_id, "agent_id")
        allowed = agent_set(allowed_agents)
        with self.storage.write() as session:
            _owned_memory(session, rid, agent, allowed, for_change=True)
            session.memories.delete(rid)
            session.tasks.remove_for_target(MEMORIES, rid)
        return {"ok": True, "id": rid, "ref": f"mem:{rid}", "deleted": True}

    @public
    def delete_episode(
        self,
        episode_id: arg.EpisodeRef,
        *,
        agent_id: arg.OwnerAgentId = None,
        allowed_agents: Collection[str] | None = None,
    ) -> DeleteResult:
        """Delete one episode (ownership enforced when agent_id or allowed_agents is given)."""
        persistence.check_writable("delete_episode")
        rid = row_id(episode_id, "episode_id", "ep")
        agent = optional_str(agent_id, "agent_id")
        allowed = agent_set(allowed_agents)
        with self.storage.write() as session:
            row = session.episodes.get(rid)
            if row is None or not _visible(row, agent, allowed):
                raise NotFound(
                    f"episode {rid} not found" + (f" for agent {agent!r}" if agent is not None else "")
                )
            session.episodes.delete(rid)
            session.tasks.remove_for_target(EPISODES, rid)
        return {"ok": True, "id": rid, "ref": f"ep:{rid}", "deleted": True}


def _expiry(ttl: float | None, expires_at: str | float | None) -> str | None:
    """The stored expiry time of a new memory, or None; refuses both, a bad type or a time out of bounds."""
    if ttl is None and expires_at is None:
        return None
    if ttl is not None and expires_at is not None:
        raise InvalidInput("give ttl or expires_at, not both")
    now = utc_now()
    if ttl is not None:
        if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not math.isfinite(ttl):
            raise InvalidInput("ttl must be a number of seconds")
        seconds = float(ttl)
    else:
        seconds = (parse_ts(normalise_timestamp(expires_at, "expires_at")) - now).total_seconds()
    if not TTL_MIN_SECONDS <= seconds <= TTL_MAX_SECONDS:
        what = "ttl" if ttl is not None else "expires_at"
        raise InvalidInput(
            f"{what} must be between {TTL_MIN_SECONDS} second and {TTL_MAX_SECONDS // 86400} days from now"
        )
    return format_ts(now + timedelta(seconds=seconds))


def _visible(row: Row, agent: str | None, allowed: frozenset[str] | None) -> bool:
    # Another agent's row, or an ungranted agent's, looks absent: its existence is not revealed.
    owner = row["agent_id"]
    return (agent is None or owner == agent) and (allowed is None or owner in allowed)


def _owned_memory(
    session: Session, rid: int, agent: str | None, allowed: frozenset[str] | None, *, for_change: bool
) -> Row:
    row = session.memories.get(rid)
    if row is None or not _visible(row, agent, allowed):
        raise NotFound(f"memory {rid} not found" + (f" for agent {agent!r}" if agent is not None else ""))
    if for_change and row["locked"]:
        raise LockedRow(f"memory {rid} is locked; unlock_memory it first")
    return row
