"""Values crossing the portability boundary: validated import records and per-record outcomes.

Engine-neutral: the portability service builds these from export lines, and each
engine's ``PortabilityRows`` writes them.
"""

from __future__ import annotations

from dataclasses import dataclass

from cpersona.storage.interface import NewMemory


@dataclass(frozen=True)
class ImportedMemory:
    """A validated memory record from an export file."""

    row: NewMemory
    recall_count: int = 0
    last_recalled_at: str | None = None
    locked: bool = False


@dataclass(frozen=True)
class ImportedEpisode:
    """A validated episode record (keywords already joined one per line)."""

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
class ImportedProfile:
    """A validated profile record."""

    agent_id: str
    project_id: str
    user_id: str
    content: str
    updated_at: str


ImportRecord = ImportedMemory | ImportedEpisode | ImportedProfile

#: Outcomes of one record: inserted, duplicate (already there), updated / kept (profiles).
INSERTED, DUPLICATE, UPDATED, KEPT = "inserted", "duplicate", "updated", "kept"
