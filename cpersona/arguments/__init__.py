"""Tool argument types for service signatures, loaded when first read: ``arg.MemoryRef``, ``arg.Field``.

A service method annotates a parameter ``Annotated[int, arg.Field(ge=1, description=...)]`` or with
a shared type (``arg.ProjectRead``); ``scripts/gen_tool_arguments.py`` reads those into the tool's
input schema. The annotations are strings (``from __future__ import annotations``), so nothing
here runs when the services are imported: the types (and pydantic, ~120 ms) load only when an
annotation is evaluated (``typing.get_type_hints``, the generator).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cpersona.arguments.types import (
        API_ONLY as API_ONLY,
    )
    from cpersona.arguments.types import (
        Associations as Associations,
    )
    from cpersona.arguments.types import (
        ChannelRead as ChannelRead,
    )
    from cpersona.arguments.types import (
        ConversationEntry as ConversationEntry,
    )
    from cpersona.arguments.types import (
        DeepCheckName as DeepCheckName,
    )
    from cpersona.arguments.types import (
        EpisodeRef as EpisodeRef,
    )
    from cpersona.arguments.types import (
        ExcludeContents as ExcludeContents,
    )
    from cpersona.arguments.types import (
        ExpiresAt as ExpiresAt,
    )
    from cpersona.arguments.types import (
        Field as Field,
    )
    from cpersona.arguments.types import (
        FromRef as FromRef,
    )
    from cpersona.arguments.types import (
        HealthCheckName as HealthCheckName,
    )
    from cpersona.arguments.types import (
        LinkArg as LinkArg,
    )
    from cpersona.arguments.types import (
        ListLimit as ListLimit,
    )
    from cpersona.arguments.types import (
        MemoryRef as MemoryRef,
    )
    from cpersona.arguments.types import (
        OwnerAgentId as OwnerAgentId,
    )
    from cpersona.arguments.types import (
        ProjectRead as ProjectRead,
    )
    from cpersona.arguments.types import (
        ProjectWrite as ProjectWrite,
    )
    from cpersona.arguments.types import (
        Reason as Reason,
    )
    from cpersona.arguments.types import (
        RecallLimit as RecallLimit,
    )
    from cpersona.arguments.types import (
        Relation as Relation,
    )
    from cpersona.arguments.types import (
        RowRef as RowRef,
    )
    from cpersona.arguments.types import (
        SourceArg as SourceArg,
    )
    from cpersona.arguments.types import (
        StoreMessage as StoreMessage,
    )
    from cpersona.arguments.types import (
        Supersedes as Supersedes,
    )
    from cpersona.arguments.types import (
        TimeCueArg as TimeCueArg,
    )
    from cpersona.arguments.types import (
        TimeCueFields as TimeCueFields,
    )
    from cpersona.arguments.types import (
        Timestamp as Timestamp,
    )
    from cpersona.arguments.types import (
        Ttl as Ttl,
    )
    from cpersona.arguments.types import (
        UserId as UserId,
    )
    from cpersona.arguments.types import (
        WalkStart as WalkStart,
    )


def __getattr__(name: str) -> Any:
    types = importlib.import_module("cpersona.arguments.types")  # not "from ... import": that asks here again
    return getattr(types, name)
