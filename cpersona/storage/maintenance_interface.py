"""What the health checks, repairs, merge and channel-axis repair may ask of storage (engine-neutral).

Part of the storage interface (``cpersona.storage.interface`` re-exports these names): a
``Session`` offers ``health`` (read-only queries) and ``repair`` (bounded write statements,
run inside the caller's ``Store.write()``); a ``Store`` offers ``maintenance_rows()`` (merge
and channel-axis, each one transaction of its own). Each engine answers them with its own SQL
(SQLite: ``storage/health_queries.py``, ``repair.py``, ``deep_queries.py``, ``port_merge.py``,
``port_channels.py``; PostgreSQL: ``storage/postgres/health*.py``, ``repair.py``, ``merge.py``).

A question an engine has no real equivalent for (an SQLite file's page free list, FTS5 shadow
tables on PostgreSQL) is answered with ``NotApplicable(reason)``, never with a made-up value;
the check reports it as an info finding.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

C = TypeVar("C")

#: merge_memories modes: new rows for the target, or the source rows re-owned.
COPY, MOVE = "copy", "move"
#: Row tables checked by the row-level checks (profiles are handled separately).
ROW_TABLES = ("memories", "episodes")


@dataclass(frozen=True)
class NotApplicable:
    """This engine has no equivalent of the question asked; ``reason`` says why (shown to people)."""

    reason: str


@dataclass(frozen=True)
class SchemaObject:
    """An index, trigger or extension the migrations create, with the statement that creates it."""

    kind: str  # "index" | "trigger" | "extension"
    name: str
    unique: bool
    ddl: str


@dataclass
class FtsReport:
    """How one keyword index differs from its table."""

    table: str
    index: str = ""
    rows: int = 0
    missing: int = 0  # rows with no index entry
    extra: int = 0  # index entries whose row is gone (counted only for the whole store)
    mismatched: int = 0  # indexed with a different text than the row holds now
    sample: list[int] | None = None


@dataclass
class VectorReport:
    """Rows of one table whose vector is absent or unusable for the active model."""

    table: str
    missing: int = 0  # no vector at all
    other_model: int = 0  # a vector from another model or dimension, or of the wrong length
    queued: int = 0  # of the above, rows that already have an embedding task waiting


#: ``resolve(source_json_text, metadata_json_text) -> concrete channel or None``.
Resolver = Callable[[str | None, str | None], str | None]

#: Problem rows listed per category in a channel-axis report (the counts are always complete).
EXAMPLES = 20


@dataclass(frozen=True)
class MergeRequest:
    """One agent merge, as both engines receive it: ``source``'s rows copied or moved to ``target``.

    ``mode`` is ``COPY`` or ``MOVE``; ``queued_at`` stamps the embed tasks of copied rows that have
    no vector (None queues none); ``step`` is called before each source memory and episode inside
    the transaction, and an exception it raises (a cancel) rolls the whole merge back.
    """

    source: str
    target: str
    mode: str
    dry_run: bool
    queued_at: str | None
    step: Callable[[], None] | None = None


@dataclass(frozen=True)
class ChannelRequest:
    """One channel-axis run: rows of ``agent_id`` (None: every agent) stored under ``bridges``.

    ``resolve`` reads a memory's concrete channel from its source and metadata; ``globalize``
    sends the rows it cannot place to the global channel instead of leaving them.
    """

    agent_id: str | None
    bridges: Sequence[str]
    resolve: Resolver
    globalize: bool
    dry_run: bool


class _DryRun(Exception):
    """Raised inside a merge's or channel run's transaction to roll a dry run back after counting."""


@contextmanager
def rolled_back_if(dry_run: bool, transaction: AbstractContextManager[C]) -> Iterator[C]:
    """``transaction``'s connection for one merge or channel run; a dry run is rolled back at the end.

    A dry run does all the work inside the transaction, so its counts are exactly what a real run
    does; raising through the transaction is what rolls it back. An error in the body propagates.
    """
    try:
        with transaction as conn:
            yield conn
            if dry_run:
                raise _DryRun
    except _DryRun:
        pass


def merge_counts(mode: str) -> dict[str, int]:
    """A table's merge counts before the first row: ``copied`` or ``moved``, and ``skipped``."""
    return {"copied" if mode == COPY else "moved": 0, "skipped": 0}


@dataclass
class ChannelReport:
    """What a channel-axis run did (or would do)."""

    scanned: int = 0
    moved: int = 0
    globalized: int = 0
    unrecoverable: int = 0
    collisions: int = 0
    locked: int = 0
    targets: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def note(self, kind: str, ref: str, **extra: Any) -> None:
        """Count a problem row and keep its first few refs."""
        setattr(self, kind, getattr(self, kind) + 1)
        bucket = self.examples.setdefault(kind, [])
        if len(bucket) < EXAMPLES:
            bucket.append({"ref": ref, **extra})

    def target_for(self, row: Any, request: ChannelRequest) -> tuple[str, str] | None:
        """Where a memory row goes (channel, moved | globalized), or None (counted) when it stays.

        The channel is what ``request.resolve`` reads from the row's source and metadata. Locked
        rows stay; a row whose channel is unknown or a bridge goes to the global channel only
        when ``request.globalize`` is set. Both engines decide here; only their SQL differs.
        """
        ref = f"mem:{row['id']}"
        if row["locked"]:
            self.note("locked", ref, channel=row["channel"])
            return None
        found = request.resolve(row["source"], row["metadata"])
        if found is None or found in request.bridges:
            if not request.globalize:
                self.note("unrecoverable", ref, channel=row["channel"])
                return None
            return "", "globalized"
        return found, "moved"

    def landed(self, kind: str, target: str) -> None:
        """Count a row moved (``kind`` moved | globalized) onto channel ``target``."""
        setattr(self, kind, getattr(self, kind) + 1)
        self.targets[target] = self.targets.get(target, 0) + 1


class HealthQueries(Protocol):
    """Read-only questions behind ``check_health`` and ``deep_check``.

    ``agent`` scopes row-level queries to one agent (None: the whole store). Queries that could
    return many rows take a ``limit`` and return the full count separately.
    """

    # -- the store itself --------------------------------------------------------------------
    def integrity_errors(self, limit: int = 20) -> list[str] | NotApplicable:
        """The engine's own structural check (SQLite: integrity_check; PostgreSQL: amcheck); [] when sound."""
        ...

    def schema_version(self) -> int:
        """The schema version recorded in the store (0 when never migrated)."""
        ...

    def latest_version(self) -> int:
        """The newest schema version this engine's migrations know."""
        ...

    def expected_objects(self) -> list[SchemaObject]:
        """Every index / trigger / extension the migrations create."""
        ...

    def present_objects(self) -> set[tuple[str, str]]:
        """(kind, name) of every index, trigger and extension present."""
        ...

    def keyword_reports(self, agent: str | None, sample: int) -> list[FtsReport] | NotApplicable:
        """Keyword indexes compared with their tables (indexes the engine does not keep itself)."""
        ...

    def storage_facts(self) -> dict[str, Any]:
        """page_size, page_count, freelist_count, db_bytes, wal_bytes; None where the engine has no such
        figure, with the reason under ``not_applicable``."""
        ...

    def queue_depth(self) -> int:
        """Number of queued tasks."""
        ...

    # -- rows ----------------------------------------------------------------------------------
    def vector_report(
        self, table: str, agent: str | None, model_id: str | None, dimension: int | None
    ) -> VectorReport:
        """Counts of rows needing a (new) vector; with no active model only missing vectors count."""
        ...

    def unqueued_vector_rows(
        self, table: str, agent: str | None, model_id: str | None, dimension: int | None, limit: int
    ) -> list[int]:
        """Ids (oldest first) needing a vector that have no embedding task yet."""
        ...

    def vector_shapes(self, agent: str | None) -> list[dict[str, Any]]:
        """Stored vectors per table, model and dimension: {table, model, dimension, rows, bad_length}."""
        ...

    def rows_outside_window(
        self, agent: str | None, model_id: str | None, window: int
    ) -> dict[str, dict[str, int]]:
        """Per agent and table, vector rows beyond the newest ``window``."""
        ...

    def duplicate_groups(self, agent: str | None, limit: int) -> tuple[int, list[list[tuple[int, bool]]]]:
        """Memories sharing a dedup key: (groups, up to ``limit`` groups of [(id, locked)] oldest first)."""
        ...

    def oversized_memories(
        self, agent: str | None, cap: int, limit: int
    ) -> tuple[int, list[tuple[int, int, bool]]]:
        """Memories longer than ``cap`` characters: (count, [(id, length, locked)])."""
        ...

    def oversized_profiles(
        self, agent: str | None, cap: int, limit: int
    ) -> tuple[int, list[tuple[str, str, str, int]]]:
        """Profiles longer than ``cap`` characters: (count, [(agent, project, user, length)])."""
        ...

    def empty_rows(self, agent: str | None, limit: int) -> tuple[int, list[str]]:
        """Memories and episodes whose text is empty or whitespace: (count, refs)."""
        ...

    def invalid_json_rows(
        self, agent: str | None, limit: int
    ) -> tuple[int, list[tuple[int, str, str, bool]]] | NotApplicable:
        """Memories whose source or metadata is not a JSON object: (count, [(id, column, raw, locked)])."""
        ...

    def stored_texts(
        self, table: str, columns: Sequence[str], agent: str | None, after: int, limit: int
    ) -> list[dict[str, Any]]:
        """Rows of ``memories`` or ``episodes`` with ``id`` above ``after``, by id: ``id`` and the raw
        stored ``columns`` (the secrets check pages through every text this way)."""
        ...

    def malformed_timestamps(
        self, agent: str | None, limit: int
    ) -> tuple[int, list[tuple[str, Any, str, str, bool]]]:
        """Timestamps not in the stored form: (count, [(table, key, column, value, locked)])."""
        ...

    def orphan_tasks(self, limit: int) -> tuple[int, list[int]]:
        """Queued tasks whose target row no longer exists."""
        ...

    def failing_tasks(
        self, agent: str | None, min_attempts: int, created_before: str, limit: int
    ) -> tuple[int, list[dict[str, Any]]]:
        """Tasks that failed ``min_attempts`` times or wait since before ``created_before``."""
        ...

    def distributions(self, agent: str | None, limit: int = 50) -> dict[str, Any]:
        """Rows per agent and memories per project / channel."""
        ...

    # -- deep_check (one agent) ------------------------------------------------------------------
    def anonymous_sources(self, agent: str, limit: int) -> tuple[int, list[int]] | NotApplicable:
        """Memories with no source, or a source carrying neither an id nor a name."""
        ...

    def short_memories(self, agent: str, min_chars: int, limit: int) -> tuple[int, list[int]]:
        """Memories whose trimmed text is shorter than ``min_chars``."""
        ...

    def profiles_with_newer_memories(self, agent: str) -> list[dict[str, Any]]:
        """Each profile of the agent with how many memories of its project arrived after its update."""
        ...

    def orphaned_episodes(self, agent: str, limit: int) -> tuple[int, list[int]]:
        """Episodes with no memory of their scope in their time range."""
        ...

    def recent_vectors(
        self, agent: str, model_id: str, dimension: int, limit: int
    ) -> list[tuple[int, bytes]]:
        """The agent's ``limit`` newest memory vectors of the active model: [(id, float32 bytes)]."""
        ...


class HealthRepairs(Protocol):
    """Bounded write statements behind ``check_health(fix=true)``; a locked memory is never touched."""

    def recreate(self, obj: SchemaObject) -> None:
        """Run the migration statement that creates a missing object."""
        ...

    def rebuild_keyword_index(self, index_name: str) -> None:
        """Rebuild one keyword index from its table."""
        ...

    def queue_embeddings(self, table: str, ids: Iterable[int], when: str) -> int:
        """Queue embedding tasks (existing ones kept); how many were new."""
        ...

    def delete_unlocked_memories(self, ids: Iterable[int]) -> int:
        """Delete memories (and their tasks) unless locked; rows deleted."""
        ...

    def cut_memory(self, rid: int, cap: int) -> bool:
        """Cut an unlocked memory to ``cap`` characters and drop its vector; False when refused."""
        ...

    def cut_profile(self, agent: str, project: str, user: str, cap: int) -> bool:
        """Cut a profile to ``cap`` characters."""
        ...

    def wrap_invalid_json(self, rid: int, column: str, raw: str) -> bool:
        """Replace a non-object source/metadata with ``{"invalid_json": <the original text>}``."""
        ...

    def set_timestamp(self, table: str, key: Any, column: str, old: str, new: str) -> bool:
        """Rewrite one timestamp in the stored form (only if it still holds ``old``)."""
        ...

    def replace_text(self, table: str, key: Any, column: str, old: str, new: str) -> bool:
        """Rewrite one text column (only if it still holds ``old``), locked rows included: the secrets
        check's redaction. A memory's content or an episode's summary drops its vector with it.
        False when the row changed meanwhile or the new text would duplicate another memory."""
        ...

    def delete_tasks(self, ids: Iterable[int]) -> int:
        """Remove queued tasks by id."""
        ...


def stepped(ids: Iterable[int], step: Callable[[], None] | None) -> Iterator[int]:
    """``ids``, calling ``step`` before each: a merge's cancel and progress hook, for both engines."""
    for rid in ids:
        if step is not None:
            step()
        yield rid


class MaintenanceRows(Protocol):
    """Agent merges and the channel-axis repair; each call is one write transaction (rolled back on dry runs)."""

    def merge_agents(self, request: MergeRequest) -> dict[str, dict[str, int]]:
        """Copy or move ``request.source``'s rows to its target skipping duplicates; counts per table.

        A dry run does the whole merge and rolls it back, so its counts are what a real run does.
        """
        ...

    def migrate_channels(self, request: ChannelRequest) -> ChannelReport:
        """Move rows under the bridges onto the channel ``resolve`` finds (locked rows stay, collisions skipped)."""
        ...
