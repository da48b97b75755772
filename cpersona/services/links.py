"""Declared associations: typed links an agent declares between its memories and named entities.

Nothing here extracts or infers: the graph is exactly what agents declared (``store(associations=...)``
or ``declare_associations``), and ``traverse`` walks it breadth first. What a caller may see is decided
from both ends' agents on every step (``readable_agents``: None means every agent, the single-user
model). Choices are in docs/decisions.md#declared-associations.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, cast

from cpersona import arguments as arg
from cpersona.core.limits import (
    MAX_ASSOCIATIONS_PER_CALL,
    MAX_ENTITY_CHARS,
    MAX_RELATION_CHARS,
    MAX_ROW_ID,
    RELATION_PATTERN,
    TRAVERSE_DEPTH_DEFAULT,
    TRAVERSE_DEPTH_MAX,
    TRAVERSE_LIMIT_DEFAULT,
    TRAVERSE_LIMIT_MAX,
)
from cpersona.core.public import public
from cpersona.core.text import clean_text, format_ts, utc_now
from cpersona.core.validation import required_str
from cpersona.errors import InvalidInput, NotFound
from cpersona.result_types.links import (
    AssociationOutcome,
    DeclareAssociationsResult,
    TraversedEntity,
    TraversedMemory,
    TraverseResult,
)
from cpersona.runtime import persistence
from cpersona.storage.interface import Session, Store
from cpersona.storage.values import LinkRow, Row

_RELATION = re.compile(RELATION_PATTERN)
_MEMORY_REF = re.compile(r"^mem:([1-9][0-9]{0,18})$")
_ENTITY_PREFIX = "entity:"
#: Links one walk step reads beyond what it can still return and the nodes already seen (links to a
#: node the caller may not read are skipped too): the fixed margin of a bounded step.
WALK_MARGIN = 50

Direction = Literal["out", "in", "both"]
DIRECTIONS: tuple[str, ...] = ("both", "out", "in")


@dataclass(frozen=True)
class Association:
    """One validated link to declare: to a memory (``to_id``) or to an entity (``entity``)."""

    relation: str
    to_id: int | None = None
    entity: str | None = None

    @property
    def entity_key(self) -> str | None:
        """How the entity is matched: case and width folded (``Phoenix`` = ``phoenix``)."""
        return None if self.entity is None else entity_key(self.entity)

    def target(self) -> str:
        """The target as a ref: ``mem:<id>`` or ``entity:<name>``."""
        return f"mem:{self.to_id}" if self.to_id is not None else f"{_ENTITY_PREFIX}{self.entity}"


def entity_name(value: Any, where: str) -> str:
    """An entity name as stored: cleaned, whitespace collapsed, 1..MAX_ENTITY_CHARS characters."""
    if not isinstance(value, str):
        raise InvalidInput(f"{where} must be a string naming an entity")
    name = " ".join(clean_text(value).split())
    if not name:
        raise InvalidInput(f"{where} must not be empty")
    if len(name) > MAX_ENTITY_CHARS:
        raise InvalidInput(f"{where} is longer than {MAX_ENTITY_CHARS} characters")
    return name


def entity_key(name: str) -> str:
    """The matching key of an entity name (NFKC, casefolded)."""
    return unicodedata.normalize("NFKC", name).casefold()


def memory_id(value: Any, where: str) -> int:
    """A memory id from an integer or a ``mem:<id>`` ref."""
    if isinstance(value, bool):
        raise InvalidInput(f"{where} must be a memory ref 'mem:<id>' or an integer id")
    if isinstance(value, int):
        rid = value
    elif isinstance(value, str) and (match := _MEMORY_REF.match(value)):
        rid = int(match.group(1))
    else:
        shown = repr(value)[:60]
        raise InvalidInput(f"{where} must be a memory ref 'mem:<id>' or an integer id, got {shown}")
    if not 1 <= rid <= MAX_ROW_ID:
        raise InvalidInput(f"{where} is not a valid memory id")
    return rid


def parse_associations(value: Any) -> list[Association]:
    """Validate the ``associations`` argument; InvalidInput naming the first bad entry."""
    if not isinstance(value, list):
        raise InvalidInput("associations must be a list of {relation, to} or {relation, entity} objects")
    if len(value) > MAX_ASSOCIATIONS_PER_CALL:
        raise InvalidInput(
            f"associations must have at most {MAX_ASSOCIATIONS_PER_CALL} items, got {len(value)}"
        )
    parsed: list[Association] = []
    for n, item in enumerate(value):
        where = f"associations[{n}]"
        if not isinstance(item, Mapping):
            raise InvalidInput(f"{where} must be an object {{relation, to}} or {{relation, entity}}")
        extra = sorted(str(k)[:40] for k in item if k not in {"relation", "to", "entity"})
        if extra:
            raise InvalidInput(f"{where} has unknown keys {extra}; allowed: relation, to, entity")
        relation = item.get("relation")
        if not isinstance(relation, str) or not _RELATION.match(relation):
            raise InvalidInput(
                f"{where}.relation must be lower-case letters, digits and '_', starting with a letter, "
                f"at most {MAX_RELATION_CHARS} characters (e.g. 'decided_by'), got {repr(relation)[:60]}"
            )
        if ("to" in item) == ("entity" in item):
            raise InvalidInput(f"{where} needs exactly one of 'to' (a memory ref) or 'entity' (a name)")
        if "to" in item:
            parsed.append(Association(relation, to_id=memory_id(item["to"], f"{where}.to")))
        else:
            parsed.append(Association(relation, entity=entity_name(item["entity"], f"{where}.entity")))
    return parsed


def may_read(agent: str | None, readable: frozenset[str] | None) -> bool:
    """Whether a row of ``agent`` may be shown to a caller who may read ``readable`` (None: every agent).

    The one readability rule for following declared links (traverse, declare_associations, reconstruct).
    """
    return agent is not None and (readable is None or agent in readable)


def declare_in(
    session: Session,
    source: Row,
    associations: Sequence[Association],
    readable: frozenset[str] | None,
) -> list[AssociationOutcome]:
    """Write ``associations`` from ``source`` inside the caller's transaction; one outcome per link.

    A target memory that does not exist, or whose agent the caller may not read, is refused
    (NotFound, the same words for both so a refusal reveals nothing); nothing is written then.
    """
    wanted = sorted({a.to_id for a in associations if a.to_id is not None})
    targets = session.memories.get_many(wanted) if wanted else {}
    for association in associations:
        if association.to_id is None:
            continue
        if association.to_id == source["id"]:
            raise InvalidInput(f"a memory cannot be linked to itself ({association.target()})")
        target = targets.get(association.to_id)
        if target is None or not may_read(target["agent_id"], readable):
            raise NotFound(f"association target {association.target()} is not a memory you may read")
    when = format_ts(utc_now())
    outcomes: list[AssociationOutcome] = []
    for association in associations:
        added = session.links.add(
            int(source["id"]),
            association.relation,
            association.to_id,
            association.entity,
            association.entity_key,
            when,
        )
        outcomes.append(
            {
                "relation": association.relation,
                "to": association.target(),
                "result": "declared" if added else "unchanged",
            }
        )
    return outcomes


@dataclass(frozen=True)
class _Node:
    kind: Literal["memory", "entity"]
    key: tuple[Any, ...]  # ("m", id) or ("e", agent, entity_key)
    ref: str
    agent: str
    path: tuple[dict[str, str], ...]


def _step(link: LinkRow) -> dict[str, str]:
    to = f"mem:{link.to_id}" if link.to_id is not None else f"{_ENTITY_PREFIX}{link.entity}"
    return {"from": f"mem:{link.from_id}", "relation": link.relation, "to": to}


class Links:
    """``declare_associations`` and ``traverse`` over one store."""

    def __init__(self, storage: Store) -> None:
        self.storage = storage

    @public
    def declare_associations(
        self,
        agent_id: str,
        from_ref: str | int,
        associations: Annotated[arg.Associations, arg.Field(min_length=1)],
        *,
        readable_agents: frozenset[str] | None = None,
    ) -> DeclareAssociationsResult:
        """Declare typed links from one of ``agent_id``'s memories to memories or entities.

        Re-declaring a link changes nothing (``result: unchanged``). Raises NotFound when the source
        is not ``agent_id``'s memory or a target memory is unknown or unreadable (``readable_agents``;
        None: every agent); InvalidInput for a malformed association. All or nothing.
        """
        source_id = memory_id(from_ref, "from")
        parsed = parse_associations(associations)
        if not parsed:
            raise InvalidInput("associations must name at least one link")
        persistence.check_writable("declare_associations")
        readable = None if readable_agents is None else readable_agents | {agent_id}
        with self.storage.write() as session:
            source = session.memories.get(source_id)
            if source is None or source["agent_id"] != agent_id:
                raise NotFound(f"memory {source_id} not found for agent {agent_id[:80]!r}")
            outcomes = declare_in(session, source, parsed, readable)
        declared = sum(1 for o in outcomes if o["result"] == "declared")
        answer: DeclareAssociationsResult = {
            "ok": True,
            "from": f"mem:{source_id}",
            "declared": declared,
            "unchanged": len(outcomes) - declared,
            "associations": outcomes,
        }
        return answer

    @public
    def traverse(
        self,
        agent_id: str,
        start: str | int,
        *,
        relation: Annotated[
            arg.Relation | None, arg.Field(description="Follow only links of this relation.")
        ] = None,
        depth: Annotated[
            int, arg.Field(ge=1, le=TRAVERSE_DEPTH_MAX, description="Hops from the start.")
        ] = TRAVERSE_DEPTH_DEFAULT,
        limit: Annotated[
            int, arg.Field(ge=1, le=TRAVERSE_LIMIT_MAX, description="Most nodes returned.")
        ] = TRAVERSE_LIMIT_DEFAULT,
        direction: Annotated[
            Literal["both", "out", "in"], arg.Field(description="out: as declared; in: against it.")
        ] = "both",
        readable_agents: frozenset[str] | None = None,
    ) -> TraverseResult:
        """Walk declared links breadth first from a memory ref or one of ``agent_id``'s entities.

        ``start``: ``mem:<id>`` (or an integer id), ``entity:<name>``, or a bare entity name.
        ``direction``: ``out`` follows links as declared, ``in`` against it, ``both`` either way.
        Every node comes back once, at its fewest hops, with the path of links that reached it;
        a memory the caller may not read (``readable_agents``; None: every agent) is neither
        returned nor walked through. ``truncated`` says ``limit`` stopped the walk.
        """
        agent_id = required_str(agent_id, "agent_id")  # an entity origin is looked up by it in SQL
        if direction not in DIRECTIONS:
            raise InvalidInput(
                f"direction must be one of {', '.join(DIRECTIONS)}, got {str(direction)[:40]!r}"
            )
        if relation is not None and (not isinstance(relation, str) or not _RELATION.match(relation)):
            raise InvalidInput(f"relation must match {RELATION_PATTERN}, got {repr(relation)[:60]}")
        if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= TRAVERSE_DEPTH_MAX:
            raise InvalidInput(f"depth must be an integer from 1 to {TRAVERSE_DEPTH_MAX}")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= TRAVERSE_LIMIT_MAX:
            raise InvalidInput(f"limit must be an integer from 1 to {TRAVERSE_LIMIT_MAX}")
        readable = None if readable_agents is None else readable_agents | {agent_id}
        with self.storage.read() as session:
            origin = self._origin(session, agent_id, start, readable)
            reached, truncated = self._walk(session, origin, relation, depth, limit, direction, readable)
            rows = session.memories.get_many([n.key[1] for n in reached if n.kind == "memory"])
        results: list[dict[str, Any]] = []
        for node in reached:
            shown: dict[str, Any]
            if node.kind == "memory":
                row = rows.get(node.key[1])
                if row is None:  # deleted between the walk's reads of one snapshot cannot happen; be safe
                    continue
                shown = dict(row)
            else:
                shown = {"ref": node.ref, "type": "entity", "entity": node.ref[len(_ENTITY_PREFIX) :]}
                shown["agent_id"] = node.agent
            shown["hop"] = len(node.path)
            shown["path"] = list(node.path)
            results.append(shown)
        # The rows are the storage's plain dicts plus hop and path: the one cast (docs/decisions.md).
        answer: TraverseResult = {
            "ok": True,
            "from": origin.ref,
            "direction": direction,  # checked against DIRECTIONS
            "depth": depth,
            "results": cast(list[TraversedMemory | TraversedEntity], results),
            "count": len(results),
            "truncated": truncated,
        }
        return answer

    def _origin(
        self, session: Session, agent_id: str, start: str | int, readable: frozenset[str] | None
    ) -> _Node:
        if isinstance(start, int) or (isinstance(start, str) and _MEMORY_REF.match(start)):
            rid = memory_id(start, "from")
            row = session.memories.get(rid)
            if row is None or not may_read(row["agent_id"], readable):
                raise NotFound(f"memory {rid} is not a memory you may read")
            return _Node("memory", ("m", rid), f"mem:{rid}", str(row["agent_id"]), ())
        if not isinstance(start, str):
            raise InvalidInput("from must be a memory ref 'mem:<id>' or an entity name")
        raw = start[len(_ENTITY_PREFIX) :] if start.startswith(_ENTITY_PREFIX) else start
        name = entity_name(raw, "from")
        declared = session.links.into_entity(agent_id, [entity_key(name)], limit=1)
        shown = declared[0].entity if declared and declared[0].entity else name
        return _Node("entity", ("e", agent_id, entity_key(name)), f"{_ENTITY_PREFIX}{shown}", agent_id, ())

    def _walk(
        self,
        session: Session,
        origin: _Node,
        relation: str | None,
        depth: int,
        limit: int,
        direction: str,
        readable: frozenset[str] | None,
    ) -> tuple[list[_Node], bool]:
        seen = {origin.key}
        reached: list[_Node] = []
        frontier = [origin]
        capped = False
        for _hop in range(depth):
            following: list[_Node] = []
            # Each step reads at most what it can still return plus the nodes already seen (a link
            # back to one is skipped) and a margin, with the relation filtered in the query: a hub of
            # 50,000 links costs what 150 do (docs/input-rules.md "Walks").
            cap = limit - len(reached) + len(seen) + WALK_MARGIN
            edges, step_capped = self._edges(session, frontier, direction, relation, cap)
            capped = capped or step_capped
            for node, link, way in edges:
                neighbour = _neighbour(node, link, way, readable)
                if neighbour is None or neighbour.key in seen:
                    continue
                if len(reached) >= limit:
                    return reached, True
                seen.add(neighbour.key)
                neighbour = _Node(
                    neighbour.kind, neighbour.key, neighbour.ref, neighbour.agent, (*node.path, _step(link))
                )
                reached.append(neighbour)
                following.append(neighbour)
            if not following:
                break
            frontier = following
        # A step that met its cap may have left nodes unread: the answer says it may be partial.
        return reached, capped

    def _edges(
        self, session: Session, frontier: Sequence[_Node], direction: str, relation: str | None, cap: int
    ) -> tuple[list[tuple[_Node, LinkRow, str]], bool]:
        """The frontier's links (at most ``cap`` per query), and whether a query met its cap."""
        edges: list[tuple[_Node, LinkRow, str]] = []
        capped = False
        by_memory = {n.key[1]: n for n in frontier if n.kind == "memory"}
        ids = list(by_memory)
        if ids and direction in ("out", "both"):
            found = session.links.outgoing(ids, relation=relation, limit=cap)
            capped = capped or len(found) >= cap
            edges.extend((by_memory[link.from_id], link, "out") for link in found)
        if direction not in ("in", "both"):
            return edges, capped
        if ids:
            found = session.links.incoming(ids, relation=relation, limit=cap)
            capped = capped or len(found) >= cap
            edges.extend((by_memory[link.to_id], link, "in") for link in found if link.to_id is not None)
        entities: dict[str, dict[str, _Node]] = {}
        for n in frontier:
            if n.kind == "entity":
                entities.setdefault(n.key[1], {})[n.key[2]] = n
        for agent, nodes in entities.items():
            found = session.links.into_entity(agent, list(nodes), relation=relation, limit=cap)
            capped = capped or len(found) >= cap
            edges.extend(
                (nodes[link.entity_key], link, "in")
                for link in found
                if link.entity_key is not None and link.entity_key in nodes
            )
        return edges, capped


def _neighbour(node: _Node, link: LinkRow, way: str, readable: frozenset[str] | None) -> _Node | None:
    """The node at the other end of ``link`` from ``node``, or None when the caller may not read it."""
    if way == "in":
        if not may_read(link.from_agent, readable):
            return None
        return _Node("memory", ("m", link.from_id), f"mem:{link.from_id}", link.from_agent, ())
    if link.to_id is not None:
        if not may_read(link.to_agent, readable):
            return None
        return _Node("memory", ("m", link.to_id), f"mem:{link.to_id}", str(link.to_agent), ())
    key = link.entity_key or ""
    # An entity belongs to the agent of the memory that declared it.
    return _Node("entity", ("e", link.from_agent, key), f"{_ENTITY_PREFIX}{link.entity}", link.from_agent, ())
