"""What the layers above storage may ask of it: engine-neutral protocols (the values they pass: storage/values.py).

Services, recall and the server see only these names. The SQLite engine
(``cpersona.storage.sqlite.store``) and the PostgreSQL engine
(``cpersona.storage.postgres``) implement them; ``cpersona.storage.open_store``
chooses one. Rows cross this boundary as plain dicts in
the public shapes of docs/api-shapes.md; vectors as float32 bytes
(``cpersona.storage.vectors``). A duplicate is reported as
``cpersona.errors.DuplicateRow``, never as an engine exception.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from cpersona.storage.blocks import BlockHit, NewBlock, StoredBlock
from cpersona.storage.maintenance_interface import HealthQueries, HealthRepairs, MaintenanceRows
from cpersona.storage.scope import Scope
from cpersona.storage.supersede_interface import SupersedeLinks

# EPISODES, MEMORIES: re-exported for retrieval/ until its imports name storage.values (a parallel change edits it).
from cpersona.storage.values import EPISODES as EPISODES  # noqa: E402
from cpersona.storage.values import MEMORIES as MEMORIES  # noqa: E402
from cpersona.storage.values import (
    BrowseFilter,
    Change,
    KeywordHits,
    LinkRow,
    NewEpisode,
    NewMemory,
    NewProfile,
    Period,
    QueryTerms,
    Row,
    Saved,
    Task,
    VectorQuery,
)

if TYPE_CHECKING:  # annotations only: numpy stays out of the MCP handshake's imports (lazy start-up)
    import numpy as np

    from cpersona.storage.port_records import ImportRecord


class TableRows(Protocol):
    """What the ``memories`` and ``episodes`` repositories both answer: rows by id, vectors, newest first."""

    def get(self, row_id: int) -> Row | None:
        """One row by id, whoever owns it (callers check ownership)."""
        ...

    def get_many(self, ids: Sequence[int], scope: Scope | None = None) -> dict[int, Row]:
        """Rows by id, restricted to ``scope`` when given."""
        ...

    def text_of(self, row_id: int) -> str | None:
        """The text an embedding is computed from (None when the row is gone)."""
        ...

    def set_embedding(self, row_id: int, blob: bytes | None, model_id: str | None, dim: int | None) -> None:
        """Record (or clear) the vector of one row."""
        ...

    def delete(self, row_id: int) -> None:
        """Delete one row."""
        ...

    def list_recent(self, scope: Scope, limit: int) -> list[Row]:
        """Newest first."""
        ...

    def recent_lengths(self, scope: Scope, limit: int) -> list[int]:
        """The text lengths (characters) of the newest ``limit`` rows, newest first."""
        ...

    def count(self, scope: Scope, *, cap: int | None = None) -> int:
        """Rows in scope; with ``cap``, counted up to ``cap`` (a threshold check then reads at most ``cap``
        rows, not the whole scope)."""
        ...


class MemoryRows(TableRows, Protocol):
    """The ``memories`` table: insert with dedup, fetch, edit, lock, delete, list."""

    def find_duplicate(self, new: NewMemory) -> tuple[int, str] | None:
        """An existing row ``new`` duplicates: (id, 'msg_id' | 'content'), or None."""
        ...

    def insert(self, new: NewMemory) -> int:
        """Insert and return the new id; raises DuplicateRow when a unique rule refuses it."""
        ...

    def update_content(self, memory_id: int, content: str) -> None:
        """Replace content and drop the stale vector and blocks; raises DuplicateRow on a content clash."""
        ...

    def set_blocks(self, memory_id: int, blocks: Sequence[NewBlock], model_id: str, dim: int) -> None:
        """Replace the memory's block vectors (docs/retrieval.md#long-records); none: drop them."""
        ...

    def blocks_of(self, memory_ids: Sequence[int], model_id: str, dim: int) -> list[StoredBlock]:
        """The stored blocks of ``memory_ids`` with vectors of this model, by memory then index."""
        ...

    def without_lead(
        self, model_id: str, dim: int, min_chars: int, after_id: int, limit: int
    ) -> list[tuple[int, str, int]]:
        """(id, content, blocks held) of memories with a vector of this model, ``min_chars`` long and no
        lead block (index 0) of it."""
        ...

    def set_locked(self, memory_id: int, locked: bool) -> None:
        """Lock or unlock one row."""
        ...

    def mark_recalled(self, ids: Iterable[int], when: str) -> None:
        """Bump recall_count and last_recalled_at of the rows a recall returned."""
        ...

    def ids_with_source(self, scope: Scope, source_id: str) -> list[int]:
        """Ids in scope whose ``source.id`` starts with ``source_id``."""
        ...

    def ids_in_period(self, scope: Scope, start: str | None, end: str | None) -> list[int]:
        """Ids in scope whose ``timestamp`` (stored form) is in [start, end); None leaves that end open."""
        ...

    def timeline(self, agent_id: str) -> list[tuple[int, str, str, str]]:
        """(id, timestamp, project_id, channel) of one agent's memories, in id (insertion) order."""
        ...


class EpisodeRows(TableRows, Protocol):
    """The ``episodes`` table (session summaries)."""

    def insert(self, new: NewEpisode) -> int:
        """Insert one episode and return its id."""
        ...

    def newest_boundary(self, scope: Scope) -> str | None:
        """created_at of the newest episode in scope: the episode boundary."""
        ...


class ProfileRows(Protocol):
    """The ``profiles`` table: one text per (agent, project, user)."""

    def get(self, agent_id: str, project_id: str, user_id: str) -> Row | None:
        """The profile for exactly this key."""
        ...

    def upsert(self, profile: NewProfile) -> None:
        """Replace the profile text under its key."""
        ...

    def newest_in_scope(self, scope: Scope, limit: int = 3) -> list[Row]:
        """Up to ``limit`` profiles in scope, newest first."""
        ...


class TaskQueue(Protocol):
    """The durable task queue; a task is deleted in the transaction that records its result."""

    def enqueue(self, kind: str, table: str, target_id: int, when: str) -> None:
        """Queue a task once (an identical pending task is kept as it is)."""
        ...

    def enqueue_missing(self, kind: str, model_id: str, dimension: int, when: str) -> int:
        """Queue every row without a vector of this model and dimension; returns how many were queued."""
        ...

    def due(self, now: str, limit: int) -> list[Task]:
        """Tasks whose retry time has come, oldest first."""
        ...

    def complete(self, task_id: int) -> None:
        """Remove a finished task."""
        ...

    def retry_later(self, task_id: int, error: str, not_before: str) -> None:
        """Record a failure and when to try again."""
        ...

    def remove_for_target(self, table: str, target_id: int) -> None:
        """Drop tasks of a row that no longer exists."""
        ...

    def status(self) -> dict[str, Any]:
        """Depth, retrying, oldest task, depth per kind, last error."""
        ...


class KeywordSearch(Protocol):
    """Full-text search; how it ranks (FTS5 bm25, tsvector, ...) is the engine's business."""

    def memories(
        self,
        terms: QueryTerms,
        scope: Scope,
        limit: int,
        *,
        source_id: str | None = None,
        period: Period | None = None,
    ) -> KeywordHits:
        """Ranked memory ids; a substring pass stands in when full-text search cannot run or finds nothing.
        ``period`` (stored-form [start, end), either open): only rows whose ``timestamp`` lies in it,
        filtered inside the statements, before any row budget or limit (a ``sure`` time cue)."""
        ...

    def episodes(self, terms: QueryTerms, scope: Scope, limit: int) -> KeywordHits:
        """Ranked episode ids over summary + keywords."""
        ...

    def memories_words(
        self,
        terms: QueryTerms,
        scope: Scope,
        limit: int,
        *,
        source_id: str | None = None,
        period: Period | None = None,
    ) -> KeywordHits:
        """Ranked memory ids from the word-level index (stemmed whole words, any of ``terms.words``);
        ``period`` as in ``memories``."""
        ...


class VectorSearch(Protocol):
    """Nearest stored vectors to a query: the engine's business how (SQLite: an in-memory index synced
    from the file; PostgreSQL: an HNSW index queried in SQL). Recall never holds vectors itself."""

    def nearest(
        self,
        table: str,
        query: VectorQuery,
        scope: Scope,
        limit: int,
        *,
        window: int | None,
        allowed_ids: Sequence[int] | None = None,
    ) -> list[tuple[int, float]]:
        """Top ``limit`` (id, cosine) of ``table`` among the ``window`` most recent rows (None: every row) in
        scope holding a
        vector of the query's model and dimension, restricted to ``allowed_ids`` when given;
        best first, ties on the higher (newer) id."""
        ...

    def cosines(self, table: str, query: VectorQuery, ids: Sequence[int]) -> dict[int, float]:
        """Cosine of the query with each of ``ids`` that holds a vector of the query's model and dimension
        (a memory's best vector: its own or one of its blocks')."""
        ...

    def best_blocks(self, query: VectorQuery, memory_ids: Sequence[int]) -> dict[int, BlockHit]:
        """For each of ``memory_ids`` whose best vector is one of its blocks, that block."""
        ...

    def agent_vectors(
        self, table: str, model_id: str, dimension: int, agent_id: str
    ) -> tuple[np.ndarray, np.ndarray]:
        """(ids, vectors) of one agent's rows holding a vector of this model and dimension, in id order."""
        ...

    def agent_counts(self, table: str, model_id: str, dimension: int) -> dict[str, int]:
        """Rows per agent holding a vector of this model and dimension (what calibration would see)."""
        ...


class VectorFeed(Protocol):
    """Corpus-wide vector bookkeeping (which dimensions are stored, clearing stale ones).

    The SQLite engine's in-memory index reads more than this (``SqliteVectorFeed``: state, change log);
    that is engine-internal, behind ``VectorSearch``.
    """

    def dimensions(self, model_id: str) -> set[int]:
        """Every dimension stored for ``model_id`` in memories and episodes."""
        ...

    def invalidate(self, model_id: str, dimension: int) -> None:
        """Clear vectors of ``model_id`` whose dimension differs (so they are queued again)."""
        ...


class AdminQueries(Protocol):
    """Whole-database counts and deletions."""

    def row_counts(self) -> dict[str, int]:
        """Rows per table: memories, episodes, profiles."""
        ...

    def active_vector_count(self, model_id: str | None) -> int:
        """Memories holding a vector of ``model_id``."""
        ...

    def rows_beyond_window(self, model_id: str, window: int) -> dict[str, dict[str, int]]:
        """Per agent and table, how many rows with vectors of ``model_id`` lie beyond ``window``."""
        ...

    def agent_ids(self) -> list[str]:
        """Every agent id owning at least one memory or episode, sorted."""
        ...

    def known_agent_ids(self) -> list[str]:
        """Every agent id owning any row at all (memory, episode or profile), sorted."""
        ...

    def has_rows(self, agent_id: str) -> bool:
        """Whether ``agent_id`` owns any memory, episode or profile."""
        ...

    def delete_agent(self, agent_id: str) -> dict[str, int]:
        """Delete every memory, episode, profile and queued task of one agent; rows deleted per table."""
        ...


class BrowseQueries(Protocol):
    """What a person browsing the store asks for (the ``cpersona ui`` pages)."""

    def axes(self) -> list[Row]:
        """Per (agent, project, channel): memories, episodes, embedded_memories, locked_memories."""
        ...

    def profile_counts(self) -> dict[str, int]:
        """Profiles per agent."""
        ...

    def agents_after(self, after: str | None, limit: int, among: Sequence[str] | None = None) -> list[str]:
        """Up to ``limit`` agents owning a row, in order, after ``after`` (None: from the first), only
        those in ``among`` when given: one keyset page, whose cost does not grow with the page number."""
        ...

    def memories(self, f: BrowseFilter, offset: int, limit: int) -> tuple[list[Row], int]:
        """One page of memories newest first, and how many match in all."""
        ...

    def episodes(self, f: BrowseFilter, offset: int, limit: int) -> tuple[list[Row], int]:
        """One page of episodes newest first, and how many match in all."""
        ...

    def profiles(self, agent_id: str) -> list[Row]:
        """Every profile of one agent, newest first."""
        ...

    def daily(self, agent_id: str | None) -> list[Row]:
        """Per UTC day (oldest first): {day, stored, embedded} memories."""
        ...


class PortabilityRows(Protocol):
    """Export streaming and import batches (records from ``cpersona.storage.port_records``)."""

    def stream(
        self, agent_id: str | None, *, include_vectors: bool, chunk: int = 500
    ) -> Generator[tuple[str, dict[str, Any]], None, None]:
        """Yield ``("counts", {...})`` then every row as ``(type, columns)`` in one consistent snapshot:
        memories, episodes, profiles, each in id (or key) order; ``embedding`` bytes only when asked."""
        ...

    def write_batch(
        self, records: Sequence[ImportRecord], *, queued_at: str | None, active_model: tuple[str, int] | None
    ) -> tuple[list[str], int]:
        """Write ``records`` in one transaction; (outcome per record, rows queued for embedding)."""
        ...

    def bulk_load(self) -> AbstractContextManager[bool]:
        """Around a whole import's ``write_batch`` calls: True when an index is built at its end instead of
        maintained per batch (PostgreSQL into an empty keyword index; the block ends with it built)."""
        ...

    def probe_batch(self, records: Sequence[ImportRecord]) -> list[str]:
        """What ``write_batch`` would do, writing nothing (dry run)."""
        ...

    def memory_ids(self, rows: Sequence[NewMemory]) -> list[int | None]:
        """The stored row each of these (just imported) memories is: its dedup match, or None."""
        ...

    def write_links(self, links: Sequence[tuple[int, str, int | None, str | None, str | None]]) -> list[bool]:
        """Declare (from_id, relation, to_id, entity, entity_key) links in one transaction; True = new."""
        ...

    def link_superseded(self, pairs: Sequence[tuple[NewMemory, NewMemory, str]]) -> tuple[int, int]:
        """Write an import's supersede links, rows named by their dedup keys, in one transaction;
        returns (linked, skipped) (``supersede_interface.apply_imported_links``)."""
        ...

    def mark_lifecycle(self, items: Sequence[tuple[NewMemory, str | None, str | None, str | None]]) -> int:
        """Give imported memories (named by their dedup keys) their (expires_at, retired_at, reason), where
        the stored row has none yet (what is there wins, as for duplicates); rows changed."""
        ...


class LinkRows(Protocol):
    """The associations agents declare between memories and entities (docs/decisions.md)."""

    def add(
        self,
        from_id: int,
        relation: str,
        to_id: int | None,
        entity: str | None,
        entity_key: str | None,
        when: str,
    ) -> bool:
        """Record one link; False when the same link was already declared (nothing changes)."""
        ...

    def outgoing(
        self, ids: Sequence[int], *, relation: str | None = None, limit: int | None = None
    ) -> list[LinkRow]:
        """Links declared by these memories, oldest first. ``relation``: only those (filtered in the
        query); ``limit``: at most that many, read no further (a hub of 50,000 links costs ``limit``)."""
        ...

    def incoming(
        self, ids: Sequence[int], *, relation: str | None = None, limit: int | None = None
    ) -> list[LinkRow]:
        """Links pointing at these memories, oldest first; ``relation`` and ``limit`` as ``outgoing``."""
        ...

    def into_entity(
        self, agent_id: str, keys: Sequence[str], *, relation: str | None = None, limit: int | None = None
    ) -> list[LinkRow]:
        """Links from ``agent_id``'s memories to these entity keys; ``relation`` and ``limit`` as ``outgoing``."""
        ...


#: The repositories every ``Session`` offers, by attribute name (each engine's session slots).
SESSION_REPOSITORIES = (
    "memories",
    "episodes",
    "profiles",
    "tasks",
    "keyword",
    "vectors",
    "vector_search",
    "admin",
    "browse",
    "health",
    "repair",
    "links",
    "supersede",
)


class Session(Protocol):
    """One unit of work on the store (a transaction, a snapshot, or autocommit)."""

    @property
    def memories(self) -> MemoryRows: ...

    @property
    def episodes(self) -> EpisodeRows: ...

    @property
    def profiles(self) -> ProfileRows: ...

    @property
    def tasks(self) -> TaskQueue: ...

    @property
    def keyword(self) -> KeywordSearch: ...

    @property
    def vectors(self) -> VectorFeed: ...

    @property
    def vector_search(self) -> VectorSearch: ...

    @property
    def admin(self) -> AdminQueries: ...

    @property
    def browse(self) -> BrowseQueries: ...

    @property
    def health(self) -> HealthQueries: ...

    @property
    def repair(self) -> HealthRepairs: ...

    @property
    def links(self) -> LinkRows: ...

    @property
    def supersede(self) -> SupersedeLinks: ...


class CalibrationStates(Protocol):
    """Per-agent calibration state (SQLite: the sidecar file, ``storage.sqlite.calibration``; PostgreSQL:
    a table, ``storage.postgres.calibration``). Reads never raise; writes report what they could not save."""

    @property
    def location(self) -> str:
        """Where the state lives (a file path, or the table and database)."""
        ...

    def agents(self) -> dict[str, dict[str, Any]]:
        """Every agent's entry (copies)."""
        ...

    def get(self, agent_id: str) -> dict[str, Any] | None:
        """One agent's entry (a copy), or None."""
        ...

    def peek(self, agent_id: str) -> dict[str, Any] | None:
        """One agent's entry as held, not copied (recall reads it twice a query: a copy costs ~90 µs);
        read it at once and never change it."""
        ...

    def exclusive(self, agent_id: str, wait: float = 0.0) -> AbstractContextManager[bool]:
        """Hold the right to calibrate ``agent_id`` (across processes); yields False when not had in time."""
        ...

    def modify(self, agent_id: str, change: Change, wait: float = 30.0) -> Saved:
        """Apply ``change`` to the freshly re-read entry and save it (None removes the entry)."""
        ...

    def problem(self) -> str | None:
        """Why calibration state cannot be saved now, or None."""
        ...


class Store(Protocol):
    """A database: hands out sessions. One per ``Memory``."""

    @property
    def location(self) -> str:
        """Where the data lives, as stats shows it (a file path, or a URL without its password)."""
        ...

    def session(self) -> Session:
        """Autocommit access for single statements outside a transaction."""
        ...

    def read(self) -> AbstractContextManager[Session]:
        """A consistent snapshot for several reads."""
        ...

    def recall_read(self) -> AbstractContextManager[Session]:
        """``read`` for one recall pipeline's statements (PostgreSQL: planned once per connection)."""
        ...

    def write(self) -> AbstractContextManager[Session]:
        """One write transaction: all of it lands or none of it does (nested use joins the outer one)."""
        ...

    def size_bytes(self) -> int:
        """Bytes the store occupies on disk."""
        ...

    def read_only(self) -> bool:
        """Whether this process cannot write the store (writes would raise ``ReadOnlyStorage``)."""
        ...

    def maintenance_rows(self) -> MaintenanceRows:
        """Merging agents and the channel-axis repair (each one write transaction of its own)."""
        ...

    def portability_rows(self) -> PortabilityRows:
        """Row streaming and dedup-aware batch writes for export and import (every engine has them)."""
        ...

    def calibration_states(self) -> CalibrationStates:
        """Where this store keeps per-agent calibration state (one object per store)."""
        ...

    def close(self) -> None:
        """Close every connection."""
        ...
