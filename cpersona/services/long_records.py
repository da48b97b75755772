"""Block vectors of long memories, computed beside the row's own vector (docs/retrieval.md#long-records).

Every path that embeds a memory (store, update_memory, the back-fill queue and so re-embed) embeds its
text and its blocks' texts in one batch (``embed_with_blocks``) and writes them together, so a memory's
blocks are always of the model and the text its own vector is of.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cpersona.embed.runtime.blocks import block_spans
from cpersona.embed.runtime.service import EmbeddingService
from cpersona.storage.blocks import NewBlock
from cpersona.storage.vectors import to_blob


@dataclass(frozen=True)
class Embedded:
    """One text's own vector (float32 bytes) and its blocks' ([] when the text fits the window)."""

    embedding: bytes
    blocks: list[NewBlock]


Spans = list[tuple[int, int, int]]


def embedding_inputs(
    texts: Sequence[str], window: int | None, blocked: Sequence[bool] | None = None
) -> tuple[list[str], list[Spans]]:
    """What one call embeds for ``texts``: the texts, then the blocks (lead first) of each where
    ``blocked`` (default: every text); and each text's block spans."""
    spans = [
        block_spans(text, window) if blocked is None or blocked[k] else [] for k, text in enumerate(texts)
    ]
    pieces = [*texts, *(text[s:e] for text, found in zip(texts, spans, strict=True) for _, s, e in found)]
    return pieces, spans


def embed_with_blocks(
    embeddings: EmbeddingService, texts: Sequence[str], blocked: Sequence[bool] | None = None
) -> list[Embedded] | None:
    """Each text's vector and, where ``blocked`` (default: every text), its blocks' vectors, all in one
    ``embed_documents`` batch; None when the model could not embed (the rows are left to the queue)."""
    pieces, spans = embedding_inputs(texts, embeddings.window_tokens, blocked)
    vectors = embeddings.embed_documents(pieces) if pieces else None
    if vectors is None:
        return None
    done: list[Embedded] = []
    at = len(texts)
    for k, found in enumerate(spans):
        blocks = [NewBlock(i, s, e, to_blob(vectors[at + j])) for j, (i, s, e) in enumerate(found)]
        done.append(Embedded(to_blob(vectors[k]), blocks))
        at += len(found)
    return done
