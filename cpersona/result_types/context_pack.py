"""Shapes of the context pack: reconstruct (docs/tools.md#reconstruct)."""

# No ``from __future__ import annotations`` here (see cpersona/result_types/everyday.py).
from typing import Annotated, Literal, NotRequired, TypedDict

from cpersona.result_types.common import Success
from cpersona.result_types.everyday import Advisory, RecallTimeCue
from cpersona.result_types.links import PathStep


class EntityMention(TypedDict):
    """An entity a seed memory links to (named, not followed)."""

    relation: Annotated[str, "The link's type, as declared."]
    entity: Annotated[str, "The entity's name, as first declared."]


class PackItem(TypedDict):
    """reconstruct: one row quoted from the store, with why it is in the pack."""

    ref: Annotated[str, "'mem:<id>' or 'ep:<id>'."]
    type: Annotated[Literal["memory", "episode"], "Row kind."]
    agent_id: Annotated[str, "The row's agent (a linked row may be another agent you may read)."]
    role: Annotated[
        Literal["match", "given", "current", "replaced", "linked"],
        "match: a recall row; given: a row named in refs; current: the memory in force that "
        "supersedes the seed; replaced: a memory the seed's chain superseded; linked: one declared "
        "link from or to the seed.",
    ]
    seed: Annotated[str, "The ref of the seed this item hangs off (a seed names itself)."]
    why: Annotated[str, "One line: the rank, the supersede relation or the declared link."]
    text: Annotated[
        str,
        "The row's text verbatim (a memory's content, an episode's summary); when truncated, a prefix "
        "followed by the marker ' […]'.",
    ]
    truncated: Annotated[bool, "text is a prefix (the budget ran out); get_contents has the whole."]
    text_len: Annotated[int, "Characters of the whole text."]
    timestamp: Annotated[
        str | None, "When it happened: a memory's timestamp, an episode's end time (else when archived)."
    ]
    score: NotRequired[Annotated[float, "recall's score (role match only)."]]
    link: NotRequired[Annotated[PathStep, "The declared link that brought it in (role linked)."]]
    superseded_by: NotRequired[Annotated[str, "'mem:<id>' that superseded this memory."]]
    entities: NotRequired[
        Annotated[list[EntityMention], "Entities a seed memory links to (seeds only, when it has any)."]
    ]


class ReconstructResult(TypedDict):
    """reconstruct: the best rows with their supersede neighbours and links, within a text budget."""

    ok: Success
    items: Annotated[
        list[PackItem],
        "Seeds in groups, the most important group LAST; each group ends with its seed, its "
        "neighbours just before it.",
    ]
    count: Annotated[int, "len(items)."]
    budget_chars: Annotated[int, "The budget used: characters of the items' text fields."]
    used_chars: Annotated[int, "Characters of text quoted (sum of len(text); never above budget_chars)."]
    omitted: Annotated[list[str], "Refs that were candidates but did not fit, most important first."]
    missing: Annotated[list[str], "Given refs that are unknown or not yours (never revealed)."]
    advisory: NotRequired[Annotated[Advisory, "recall's advisory: search is degraded."]]
    explanation: NotRequired[Annotated[str, "recall's explanation of an empty or short answer."]]
    time_cue: NotRequired[Annotated[RecallTimeCue, "The time cue that acted on the recall."]]
