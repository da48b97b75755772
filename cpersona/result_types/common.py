"""Keys that many result shapes share, written once: the same type and the same meaning everywhere."""

# No ``from __future__ import annotations`` here (see rows.py): these aliases are read at runtime.
from typing import Annotated, Literal, TypedDict

#: ``ok`` of a success.
Success = Annotated[Literal[True], "Success."]
#: ``count`` of a listing.
ItemCount = Annotated[int, "len(items)."]
#: ``notice`` (always ``NotRequired``): the agent id asked about owns no rows at all.
AgentNotice = Annotated[str, "The agent id owns no rows at all: 'agent 'x' has no rows; known agents: ...'."]
#: The row keys memories and episodes share.
OwnerAgent = Annotated[str, "Owner agent."]
RowProject = Annotated[str, "Project scope ('' = global pool)."]
RowChannel = Annotated[str, "Channel ('' = none)."]
RowEmbedded = Annotated[bool, "A vector is stored for it."]
RowEmbeddingModel = Annotated[str | None, "The model the stored vector came from."]
GateFallback = Annotated[
    Literal[True],
    "Below the gate, returned as a lexical match because every row was below it (only with confidence scoring on).",
]


class RedactedKind(TypedDict):
    """One kind of secret the guard replaced in a write (docs/secrets-and-forgetting.md)."""

    kind: Annotated[str, "The kind of credential, as in its placeholder '[redacted: <kind>]'."]
    count: Annotated[int, "How many of that kind were replaced."]


#: ``redacted`` (always ``NotRequired``): what CPERSONA_SECRETS=redact replaced before writing.
Redacted = Annotated[
    list[RedactedKind],
    "Credentials replaced by '[redacted: <kind>]' before writing: kind and count, never the value.",
]
