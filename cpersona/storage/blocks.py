"""Block vectors of long memories: the shapes both engines store and read (docs/retrieval.md#long-records).

A memory longer than the model's window keeps, beside its own vector, one vector per block of its
text beyond the first window (``embed/runtime/blocks.py`` cuts them). The vector channel scores the memory by
its best vector; ``BlockHit`` says which block won, for ``match_reason`` and the preview.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The table of block vectors (SQLite and PostgreSQL).
MEMORY_BLOCKS = "memory_blocks"
#: How much less a block's cosine counts than a memory's own vector's. A long memory scores the best of
#: its blocks, and the best of many cosines is high by chance alone, so without it long assistant answers
#: pushed out the short user turns that state a fact. 0.05 was chosen on our long histories' "choose" half
#: (against 0 and 0.10) and confirmed on "confirm" (docs/retrieval.md#long-records).
BLOCK_DISCOUNT = 0.05


@dataclass(frozen=True)
class NewBlock:
    """One block of a memory's text with its vector (float32 bytes, ``storage/vectors.py``)."""

    index: int  # 1.. in text order (0 is the row's own vector: the first window)
    start: int  # character offsets into the memory's content, end exclusive
    end: int
    embedding: bytes


@dataclass(frozen=True)
class StoredBlock:
    """A stored block: the ``NewBlock`` of one memory, as read back."""

    memory_id: int
    index: int
    start: int
    end: int
    embedding: bytes


@dataclass(frozen=True)
class BlockHit:
    """The block whose vector scored a memory higher than the memory's own vector did."""

    index: int
    start: int
    end: int
    cosine: float  # the block's score: its cosine with the query less BLOCK_DISCOUNT

    def describe(self) -> dict[str, int]:
        """``match_reason``'s ``block`` field."""
        return {"index": self.index, "start": self.start, "end": self.end}
