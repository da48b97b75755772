"""Shapes of the declared-association calls: declare_associations, traverse (and store's links)."""

# No ``from __future__ import annotations`` here (see cpersona/result_types/everyday.py).
from typing import Annotated, Literal, TypedDict

from cpersona.result_types.rows import MemoryRow


class AssociationOutcome(TypedDict):
    """One declared link and what the call did with it."""

    relation: Annotated[str, "The link's type."]
    to: Annotated[str, "The target: 'mem:<id>' or 'entity:<name>'."]
    result: Annotated[Literal["declared", "unchanged"], "declared: new; unchanged: it was already declared."]


# "from" is a Python keyword, so the shapes with a key of that name use the functional form.
DeclareAssociationsResult = TypedDict(
    "DeclareAssociationsResult",
    {
        "ok": Annotated[Literal[True], "Success."],
        "from": Annotated[str, "The source memory's ref."],
        "declared": Annotated[int, "Links new in this call."],
        "unchanged": Annotated[int, "Links that were already declared."],
        "associations": Annotated[list[AssociationOutcome], "One outcome per link, in the order given."],
    },
)
DeclareAssociationsResult.__doc__ = "declare_associations: links from one memory, all written or none."

PathStep = TypedDict(
    "PathStep",
    {
        "from": Annotated[str, "The memory that declared the link ('mem:<id>')."],
        "relation": Annotated[str, "The link's type."],
        "to": Annotated[str, "The link's target: 'mem:<id>' or 'entity:<name>'."],
    },
)
PathStep.__doc__ = "One link a traverse walked, as it was declared (whichever way the walk crossed it)."


class TraversedMemory(MemoryRow):
    """traverse: a memory reached (the row, previewed over MCP like recall's)."""

    hop: Annotated[int, "Links from the start (1 = a direct neighbour)."]
    path: Annotated[list[PathStep], "The links walked from the start to this row, in order."]


class TraversedEntity(TypedDict):
    """traverse: a named entity reached."""

    ref: Annotated[str, "'entity:<name>'."]
    type: Annotated[Literal["entity"], "Node kind."]
    entity: Annotated[str, "The name as first declared."]
    agent_id: Annotated[str, "The agent the entity belongs to (entities are per agent)."]
    hop: Annotated[int, "Links from the start."]
    path: Annotated[list[PathStep], "The links walked from the start to this entity, in order."]


TraverseResult = TypedDict(
    "TraverseResult",
    {
        "ok": Annotated[Literal[True], "Success."],
        "from": Annotated[str, "The start: 'mem:<id>' or 'entity:<name>'."],
        "direction": Annotated[Literal["both", "out", "in"], "Which way links were followed."],
        "depth": Annotated[int, "The hop bound used."],
        "results": Annotated[
            list[TraversedMemory | TraversedEntity], "Nodes reached, by hop, then discovery order."
        ],
        "count": Annotated[int, "len(results)."],
        "truncated": Annotated[
            bool,
            "limit stopped the walk before it ran out of links or depth, or a step met its read bound (more may lie beyond).",
        ],
    },
)
TraverseResult.__doc__ = "traverse: what the declared links reach, nearest first, each node once."
