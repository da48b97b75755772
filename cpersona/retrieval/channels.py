"""The retrieval channels, registered once: recall runs them, and fusion sums them, in this order.

A new channel is one module with a ``Retriever`` (cpersona/retrieval/retriever.py) and one line here
(docs/architecture.md "How to add a retrieval channel").
"""

from __future__ import annotations

from cpersona.retrieval.keyword_channels import (
    FTS_EPISODES,
    FTS_MEMORIES,
    FTS_WORDS,
    EpisodeKeywords,
    TrigramMemories,
    WordMemories,
)
from cpersona.retrieval.retriever import Retriever
from cpersona.retrieval.vector_channel import VECTOR, VectorChannel

RETRIEVERS: tuple[Retriever, ...] = (
    VectorChannel(),
    TrigramMemories(),
    WordMemories(),
    EpisodeKeywords(),
)
#: The channels' names in registry order: fusion visits them so (reproducible sums).
CHANNEL_ORDER = tuple(retriever.name for retriever in RETRIEVERS)

__all__ = ["CHANNEL_ORDER", "FTS_EPISODES", "FTS_MEMORIES", "FTS_WORDS", "RETRIEVERS", "VECTOR"]
