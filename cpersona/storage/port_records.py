"""Values crossing the portability boundary: validated import records, per-record outcomes, and the
rules both engines' ``PortabilityRows`` apply to them (which outcome, whether to queue a vector).

Engine-neutral: the portability service builds these from export lines, and each
engine's ``PortabilityRows`` writes them.
"""

from __future__ import annotations

from dataclasses import dataclass

from cpersona.storage.blocks import NewBlock
from cpersona.storage.values import NewEpisode, NewMemory, NewProfile


@dataclass(frozen=True)
class ImportedMemory:
    """A validated memory record from an export file (with the recall statistics a new row has not)."""

    row: NewMemory
    recall_count: int = 0
    last_recalled_at: str | None = None
    locked: bool = False
    # Block vectors of a long memory (docs/retrieval.md#long-records), of the row's own vector's model.
    blocks: tuple[NewBlock, ...] = ()


#: An episode record carries nothing a new episode lacks (keywords already joined one per line).
ImportedEpisode = NewEpisode
#: A profile record is the profile to store.
ImportedProfile = NewProfile

ImportRecord = ImportedMemory | ImportedEpisode | ImportedProfile

#: Outcomes of one record: inserted, duplicate (already there), updated / kept (profiles).
INSERTED, DUPLICATE, UPDATED, KEPT = "inserted", "duplicate", "updated", "kept"

Model = tuple[str, int]


def vector_model(blob: bytes | None, model_id: str | None, dim: int | None) -> Model | None:
    """(model, dimension) of a stored vector, or None when the row carries none."""
    return (model_id, dim) if blob is not None and model_id and dim else None


def needs_vector(blob: bytes | None, model: Model | None, active_model: Model | None) -> bool:
    """A new row is queued for embedding when it has no vector, or one of another model than the active one."""
    return blob is None or (active_model is not None and model != active_model)


def profile_outcome(stored_updated_at: str | None, profile: NewProfile) -> str:
    """What importing ``profile`` does to the one stored under its key (updated_at None: there is none).

    The newer text wins; equal or older imports keep what is there (so a re-import changes nothing).
    """
    if stored_updated_at is None:
        return INSERTED
    return UPDATED if profile.updated_at > stored_updated_at else KEPT
