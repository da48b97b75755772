"""The argument types several tools share (imported on demand through ``cpersona.arguments``).

``Annotated`` types whose ``pydantic.Field`` carries the bounds and the agent-facing description,
read into each tool's input schema by ``scripts/gen_tool_arguments.py`` (the walker is
cpersona/server/json_schema.py). Shared texts are short on purpose: they repeat in every tool a
host hands its model each session (docs/tools.md, "Rules that apply to every tool", says the rest once).
"""

# No ``from __future__ import annotations`` here: the TypedDicts' NotRequired must be seen when the
# class is made (``__required_keys__``).
from collections.abc import Sequence
from typing import Annotated, Any, Literal, NotRequired, TypedDict

from pydantic import ConfigDict, Field, with_config

from cpersona.core.limits import (
    LIST_LIMIT_MAX,
    MAX_ASSOCIATIONS_PER_CALL,
    MAX_ENTITY_CHARS,
    MAX_LIST_ITEMS,
    MAX_REASON_CHARS,
    MAX_ROW_ID,
    MAX_ROW_ID_DIGITS,
    RECALL_LIMIT_MAX,
    RELATION_PATTERN,
    TTL_MAX_SECONDS,
    TTL_MIN_SECONDS,
)
from cpersona.health.checks import check_names
from cpersona.health.deep_checks import deep_check_names

__all__ = [
    "API_ONLY",
    "Associations",
    "ChannelRead",
    "ConversationEntry",
    "DeepCheckName",
    "EpisodeRef",
    "ExcludeContents",
    "ExpiresAt",
    "Field",
    "FromRef",
    "HealthCheckName",
    "LinkArg",
    "ListLimit",
    "MemoryRef",
    "OwnerAgentId",
    "ProjectRead",
    "ProjectWrite",
    "Reason",
    "RecallLimit",
    "Relation",
    "RowRef",
    "SourceArg",
    "StoreMessage",
    "Supersedes",
    "TimeCueArg",
    "TimeCueFields",
    "Timestamp",
    "Ttl",
    "UserId",
    "WalkStart",
]

#: Marks a parameter of the Python API that no tool takes (``recall``'s ``record``): ``Annotated[bool,
#: API_ONLY]`` leaves it out of the tool's schema.
API_ONLY = Field(exclude=True)


def _row_id_pattern(prefix: str) -> str:
    return f"^{prefix}:[1-9][0-9]{{0,{MAX_ROW_ID_DIGITS - 1}}}$"


# One branch per form, so each keyword sits beside the one type it constrains (strict validators
# refuse "minimum" or "pattern" next to a type array).
MemoryRef = Annotated[int, Field(ge=1, le=MAX_ROW_ID)] | Annotated[str, Field(pattern=_row_id_pattern("mem"))]
EpisodeRef = Annotated[int, Field(ge=1, le=MAX_ROW_ID)] | Annotated[str, Field(pattern=_row_id_pattern("ep"))]
#: Any of the agent's rows by ref ('mem:<id>', 'ep:<id>').
RowRef = Annotated[str, Field(pattern=_row_id_pattern("(mem|ep)"))]

#: declare_associations' ``from`` on the wire (the API's ``from_ref``).
FromRef = MemoryRef
#: traverse's ``from`` on the wire (the API's ``start``).
WalkStart = Annotated[
    Annotated[int, Field(ge=1, le=MAX_ROW_ID)]
    | Annotated[str, Field(min_length=1, max_length=4 * MAX_ENTITY_CHARS)],
    Field(description="'mem:<id>', 'entity:<name>' or an entity name."),
]

# agent_id says what it is, and the instructions say rows are isolated per agent: no text per tool.
OwnerAgentId = Annotated[str | None, Field(description="Always pass it.")]
ProjectRead = Annotated[str | None, Field(description="Omitted: all; '': global only; 'X': X + global.")]
ProjectWrite = Annotated[str | None, Field(description="Default '': the global pool.")]
ChannelRead = Annotated[str | None, Field(description="Omitted or '': all; 'X': X + channel-less rows.")]
UserId = Annotated[str, Field(description="Per end user.")]
Timestamp = Annotated[str | float, Field(description="ISO-8601 (naive = UTC) or Unix seconds.")]
ListLimit = Annotated[int, Field(ge=0, le=LIST_LIMIT_MAX)]
RecallLimit = Annotated[int, Field(ge=0, le=RECALL_LIMIT_MAX)]
#: recall's exclude_contents on the wire: one text or a list (the API takes a list).
ExcludeContents = Annotated[Sequence[str] | str, Field(description="Skip rows that start like these texts.")]

Supersedes = Annotated[
    Sequence[MemoryRef],
    Field(max_length=MAX_LIST_ITEMS, description="Memories this one replaces (kept, out of recall)."),
]

#: store's ttl / expires_at (docs/secrets-and-forgetting.md#expiry).
Ttl = Annotated[
    float,
    Field(
        ge=TTL_MIN_SECONDS,
        le=TTL_MAX_SECONDS,
        description="Seconds until it expires.",
    ),
]
ExpiresAt = Annotated[str | float, Field(description="When it expires; instead of ttl.")]


class TimeCueFields(TypedDict, total=False):
    """recall's time cue (retrieval/time_cue.py; docs/retrieval.md "Time cues")."""

    phrase: Annotated[str, Field(description="e.g. 'last week', 'in May 2023'; or start/end.")]
    start: Annotated[str | float, Field(description="Date or time.")]
    end: Annotated[str | float, Field(description="Included.")]
    certainty: Annotated[
        Literal["sure", "likely", "vague"],
        Field(default="likely", description="sure filters; likely, vague boost."),
    ]
    now: Annotated[str | float, Field(description="For relative phrases.")]


#: A time cue argument as tools describe it.
TimeCueArg = Annotated[TimeCueFields | None, Field(description="When it happened, if known.")]

Reason = Annotated[str | None, Field(max_length=MAX_REASON_CHARS, description="Why; shown by get_history.")]

#: The names check_health / deep_check accept (their registries are the source).
HealthCheckName = Annotated[str, Field(json_schema_extra={"enum": list(check_names())})]
DeepCheckName = Annotated[str, Field(json_schema_extra={"enum": list(deep_check_names())})]

Relation = Annotated[str, Field(pattern=RELATION_PATTERN, description="e.g. 'decided_by'.")]


class LinkArg(TypedDict):
    """One declared link: exactly one of ``to`` / ``entity`` (the API checks)."""

    relation: Relation
    to: NotRequired[MemoryRef]
    entity: NotRequired[
        Annotated[
            str,
            Field(
                min_length=1,
                max_length=4 * MAX_ENTITY_CHARS,
                description=f"At most {MAX_ENTITY_CHARS} characters.",
            ),
        ]
    ]


#: store's and declare_associations' list of links.
Associations = Annotated[
    Sequence[LinkArg],
    Field(
        max_length=MAX_ASSOCIATIONS_PER_CALL,
        description="Typed links, each to a memory or an entity.",
    ),
]


class ConversationEntry(TypedDict):
    """One entry of recall_with_context's ``external_context``."""

    role: Annotated[str, Field(description="user, assistant, system, tool, ...")]
    content: str
    name: NotRequired[str]
    user_id: NotRequired[str]
    timestamp: NotRequired[Timestamp]


@with_config(ConfigDict(extra="allow"))
class SourceArg(TypedDict, total=False):
    """Who said it (more keys are kept)."""

    type: str
    id: str | int
    name: str


class StoreMessage(TypedDict):
    """store's ``message`` on the wire: the API's content, msg_id, source, timestamp, metadata."""

    id: NotRequired[Annotated[str | int, Field(description="Your message id; a repeat is skipped.")]]
    content: Annotated[str, Field(description="The text; make it stand alone.")]
    source: NotRequired[Annotated[SourceArg | str, Field(description="Who said it.")]]
    timestamp: NotRequired[Timestamp]
    metadata: NotRequired[Annotated[dict[str, Any] | str, Field(description="A JSON object kept with it.")]]
