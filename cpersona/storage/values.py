"""The values that cross the storage boundary: rows to insert, queries, filters, what a search returns.

Plain data with no behaviour, engine-neutral; the protocols that take and return them (what the
layers above may ask of storage) are in ``cpersona.storage.interface``. Both engines and the layers
above import these; this module imports nothing of storage, so every storage module can use it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: numpy stays out of the MCP handshake's imports (lazy start-up)
    import numpy as np

MEMORIES = "memories"
EPISODES = "episodes"
VECTOR_TABLES = (MEMORIES, EPISODES)

Row = dict[str, Any]
#: One stored vector with its isolation axes: (id, agent_id, project_id, channel, float32 bytes).
VectorRow = tuple[int, str, str, str, bytes]


@dataclass(frozen=True)
class VectorState:
    """What an in-memory vector index compares with what it has seen.

    ``generation`` moving means "reload everything"; ``max_id`` is the highest row id
    (new rows are appended by id); ``change_seq`` is the newest entry of the change log
    (updates and deletes of vectors) and ``oldest_change`` its oldest retained entry
    (0 when empty): an index that saw less than ``oldest_change - 1`` missed entries.
    """

    generation: int
    max_id: int
    change_seq: int
    oldest_change: int


@dataclass(frozen=True)
class QueryTerms:
    """Terms of a query: ``match`` feeds trigram full-text search (≥ 3 chars), ``like`` substring
    search, ``words`` the word-level index (whole words, unstemmed: the index stems them itself)."""

    match: tuple[str, ...]
    like: tuple[str, ...]
    words: tuple[str, ...] = ()


@dataclass(frozen=True)
class KeywordHits:
    """Ranked (id, score) pairs, higher is better, and the method that produced them ("fts" | "like" | "none")."""

    hits: list[tuple[int, float]]
    method: str


@dataclass(frozen=True)
class VectorQuery:
    """A recall query's vector and the model it came from: only vectors of this model and dimension compare."""

    vector: np.ndarray  # float32, L2-normalised (so inner product = cosine)
    model_id: str
    dimension: int
    #: The question's content blended into ``vector`` (a question that counts: retrieval/query_form.py).
    content: str | None = None


@dataclass(frozen=True)
class NewMemory:
    """A validated memory ready to insert (axes already normalised to '' when omitted)."""

    agent_id: str
    project_id: str
    channel: str
    msg_id: str
    content: str
    source: str | None
    metadata: str | None
    timestamp: str
    created_at: str
    embedding: bytes | None = None
    embedding_model: str | None = None
    embedding_dim: int | None = None


@dataclass(frozen=True)
class NewEpisode:
    """A validated episode (session summary) ready to insert; ``keywords`` as stored, one per line."""

    agent_id: str
    project_id: str
    channel: str
    summary: str
    keywords: str
    start_time: str | None
    end_time: str | None
    resolved: bool
    created_at: str
    embedding: bytes | None = None
    embedding_model: str | None = None
    embedding_dim: int | None = None


@dataclass(frozen=True)
class NewProfile:
    """A profile text to store under its key (agent, project, user): the one row that is replaced."""

    agent_id: str
    project_id: str
    user_id: str
    content: str
    updated_at: str


@dataclass(frozen=True)
class BrowseFilter:
    """Exact-value filters for browsing (None = any); ``locked`` applies to memories only."""

    agent_id: str | None = None
    project_id: str | None = None
    channel: str | None = None
    locked: bool | None = None
    embedded: bool | None = None


#: The task kind of the queue's one job: compute (or recompute) the vector of one memory or episode.
EMBED = "embed"


@dataclass(frozen=True)
class Task:
    """One queued unit of work (``kind`` is ``EMBED``)."""

    id: int
    kind: str
    target_table: str
    target_id: int
    attempts: int


#: A period in stored timestamp form, [start, end) with None for an open end (a ``sure`` time cue).
Period = tuple[str | None, str | None]


@dataclass(frozen=True)
class LinkRow:
    """One declared association, with both ends' agents (``to_agent`` None for an entity target)."""

    from_id: int
    relation: str
    to_id: int | None
    entity: str | None
    entity_key: str | None
    from_agent: str
    to_agent: str | None


#: One agent's calibration state (layout in docs/quality-gate.md), and a change applied to a fresh copy of it.
CalibrationEntry = dict[str, Any]
Change = Callable[[CalibrationEntry | None], CalibrationEntry | None]


@dataclass(frozen=True)
class Saved:
    """What ``CalibrationStates.modify`` did: the entry now in force and whether it reached durable storage."""

    entry: CalibrationEntry | None
    persisted: bool
    problem: str | None = None
