"""Row shapes: a memory, an episode and a profile as the API returns them."""

# No ``from __future__ import annotations`` here: with string annotations Python 3.11 cannot see
# NotRequired at runtime, and the doc generator reads __optional_keys__.
from typing import Annotated, Any, Literal, NotRequired, TypedDict

from cpersona.result_types.common import (
    GateFallback,
    OwnerAgent,
    RowChannel,
    RowEmbedded,
    RowEmbeddingModel,
    RowProject,
)

# -- rows -------------------------------------------------------------------------------------------


class BlockSpan(TypedDict):
    """The part of a long memory whose block vector matched (docs/retrieval.md#long-records)."""

    index: Annotated[int, "The block's number, 1.. in text order (the memory's own vector reads the start)."]
    start: Annotated[int, "Its first character in the memory's content."]
    end: Annotated[int, "One past its last character."]


class MatchReason(TypedDict):
    """Why a scored row was returned (only rows recall ranked carry it)."""

    signal: Annotated[
        str,
        "What ranking keyed on (priority confidence > rsf > cosine > rrf): confidence, rsf, cosine (a list "
        "ranked by cosine alone), rrf or cascade.",
    ]
    score: Annotated[float, "The final score rows are ordered by (after penalties), rounded to 6 places."]
    confidence: NotRequired[Annotated[float, "Confidence before penalties (CPERSONA_CONFIDENCE_ENABLED)."]]
    cosine: NotRequired[
        Annotated[float, "Cosine similarity to the query (the vector channel found the row)."]
    ]
    rrf: NotRequired[Annotated[float, "Reciprocal-rank-fusion score before penalties."]]
    rsf: NotRequired[Annotated[float, "Relative-score-fusion score before penalties (the retrievers' sum)."]]
    context: NotRequired[
        Annotated[
            float,
            "The context channel's share: the row was stored next to one of the best hits, in its "
            "session (rsf only); the fused score is rsf + context.",
        ]
    ]
    vector_weight: NotRequired[
        Annotated[
            float,
            "The vector channel's weight in this recall's fusion, when below 1: the active model does not "
            "read the query's script (see search.language).",
        ]
    ]
    factors: Annotated[
        dict[str, float],
        "What score is made of, in order; the values multiply to score: the base (rsf, rrf, cascade or "
        "cosine; 'rsf+context' when the context channel added to it) then each factor applied after "
        "fusion that was not 1 (episode_boundary_penalty, recent_recall_penalty; under confidence "
        "time_decay, resolved_episode, recall_count_boost, confidence_cap).",
    ]
    block: NotRequired[
        Annotated[
            BlockSpan,
            "A long memory only: the block of its text whose vector scored it (better than the memory's own "
            "vector, which reads only the model's first window); cosine is that block's, less 0.05 (a block "
            "counts less than the memory's own vector: docs/retrieval.md#long-records).",
        ]
    ]
    gate: NotRequired[
        Annotated[
            str,
            "What the gate said about the row: 'passed', 'exact_match' (the row holds an identifier-like "
            "query token or the whole query verbatim, so the gate never cuts it) or 'fallback' (a "
            "below-gate lexical match under confidence); absent when no gate ran.",
        ]
    ]


class MemoryRow(TypedDict):
    """One stored memory."""

    ref: Annotated[str, "'mem:<id>', the handle get_contents takes."]
    type: Annotated[Literal["memory"], "Row kind."]
    id: Annotated[int, "Row id."]
    agent_id: OwnerAgent
    project_id: RowProject
    channel: RowChannel
    msg_id: Annotated[str, "The caller's message id ('' when none was given)."]
    content: Annotated[str, "The full text (the API never trims)."]
    source: Annotated[dict[str, Any] | None, "Who said it ({type, id, name}), as stored."]
    metadata: Annotated[dict[str, Any] | None, "Free-form JSON object, as stored."]
    timestamp: Annotated[str, "When it happened (UTC ISO-8601)."]
    created_at: Annotated[str, "When it was stored (UTC ISO-8601)."]
    locked: Annotated[bool, "Protected from update and delete."]
    recall_count: Annotated[int, "How often recall returned it."]
    last_recalled_at: Annotated[str | None, "When recall last returned it."]
    embedded: RowEmbedded
    embedding_model: RowEmbeddingModel
    match_reason: NotRequired[Annotated[MatchReason, "On rows recall scored."]]
    gate_fallback: NotRequired[
        Annotated[
            Literal[True],
            "Below the gate, returned as a lexical match because "
            "every row was below it (only with confidence scoring on).",
        ]
    ]
    superseded_by: NotRequired[
        Annotated[
            str,
            "'mem:<id>' of the memory that superseded this one (recall include_superseded, get_history, get_contents).",
        ]
    ]
    superseded_at: NotRequired[Annotated[str, "When it was superseded (UTC ISO-8601), with superseded_by."]]
    retired_at: NotRequired[
        Annotated[
            str,
            "When it was retired (UTC ISO-8601): out of recall, kept for history "
            "(recall include_retired, get_history).",
        ]
    ]
    retire_reason: NotRequired[
        Annotated[str | None, "Why it was retired (with retired_at; null: none given)."]
    ]
    expires_at: NotRequired[
        Annotated[str, "When it expires (UTC ISO-8601; store's ttl / expires_at); list_memories shows it."]
    ]


class EpisodeRow(TypedDict):
    """One archived session summary."""

    ref: Annotated[str, "'ep:<id>', the handle get_contents takes."]
    type: Annotated[Literal["episode"], "Row kind."]
    id: Annotated[int, "Row id."]
    agent_id: OwnerAgent
    project_id: RowProject
    channel: RowChannel
    content: Annotated[str, "The summary (same as summary, so every row has content)."]
    summary: Annotated[str, "The summary text."]
    keywords: Annotated[list[str], "Search keywords."]
    start_time: Annotated[str | None, "Earliest history timestamp."]
    end_time: Annotated[str | None, "Latest history timestamp."]
    resolved: Annotated[bool, "The session's issue was resolved."]
    created_at: Annotated[str, "When it was archived (UTC ISO-8601)."]
    embedded: RowEmbedded
    embedding_model: RowEmbeddingModel
    match_reason: NotRequired[Annotated[MatchReason, "On rows recall scored."]]
    gate_fallback: NotRequired[GateFallback]


class ProfileRow(TypedDict):
    """A profile as recall injects it (scope pool of at least 50 rows); never scored."""

    type: Annotated[Literal["profile"], "Row kind."]
    agent_id: OwnerAgent
    project_id: Annotated[str, "Profile scope ('' = global)."]
    user_id: Annotated[str, "Whose profile ('' = default)."]
    content: Annotated[str, "The profile text."]
    updated_at: Annotated[str, "Last replaced (UTC ISO-8601)."]


RecallRow = MemoryRow | EpisodeRow | ProfileRow
StoredRow = MemoryRow | EpisodeRow
