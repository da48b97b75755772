"""The context pack (issue 22 point 4): ``reconstruct`` quotes the best rows with what superseded them,
what they replaced and what they link to, trimmed to a character budget, in one call.

Nothing is retrieved here that recall does not rank: the seeds are recall's own rows (``Recaller``,
run with ``record=False``) and the rows the caller names in ``refs``; their neighbours come from the
supersede chain (``services.supersede.history``) and one hop of declared links, read with the links
service's readability rule (``links.may_read``). No model runs beyond recall's query embedding.
Choices are in docs/decisions.md "Context pack".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, cast

from cpersona import arguments as arg
from cpersona.core.limits import (
    MAX_REF_CHARS,
    MAX_REFS_PER_CALL,
    MAX_ROW_ID,
    MAX_ROW_ID_DIGITS,
    RECONSTRUCT_BUDGET_DEFAULT,
    RECONSTRUCT_BUDGET_MAX,
    RECONSTRUCT_BUDGET_MIN,
    RECONSTRUCT_LIMIT_DEFAULT,
    RECONSTRUCT_LIMIT_MAX,
    RECONSTRUCT_MIN_QUOTE_CHARS,
    RECONSTRUCT_NEIGHBOURS_PER_SEED,
)
from cpersona.core.public import public
from cpersona.core.validation import bounded_int, optional_str, required_str, string_list
from cpersona.errors import InvalidInput, NotFound
from cpersona.result_types.context_pack import EntityMention, PackItem, ReconstructResult
from cpersona.result_types.links import PathStep
from cpersona.services import supersede
from cpersona.services.links import WALK_MARGIN, may_read
from cpersona.services.recaller import Recaller
from cpersona.storage.interface import Session, Store
from cpersona.storage.scope import Scope
from cpersona.storage.values import Row

#: What ends a quoted prefix (counted in the budget like the text it follows).
TRUNCATION_MARKER = " […]"

Role = Literal["match", "given", "current", "replaced", "linked"]
#: Budget priority: every seed first, then the versions in force, then history, then links.
_TIER: dict[str, int] = {"match": 0, "given": 0, "current": 1, "replaced": 2, "linked": 3}


@dataclass
class _Candidate:
    """A row that may go into the pack, with where it hangs and how much it matters."""

    row: Row
    role: Role
    seed: int  # index of its seed in seed order (0 = the most important)
    order: int  # position among its seed's candidates of the same role
    why: str
    score: float | None = None
    link: PathStep | None = None
    entities: list[EntityMention] = field(default_factory=list)
    seed_ref: str = ""  # the seed's ref (a seed's own is its ref)

    @property
    def ref(self) -> str:
        return _ref(self.row)

    @property
    def priority(self) -> tuple[int, int, int]:
        return (_TIER[self.role], self.seed, self.order)


def _ref(row: Row) -> str:
    return f"{'mem' if row['type'] == 'memory' else 'ep'}:{row['id']}"


def _parse_refs(refs: Sequence[str] | None) -> list[tuple[str, str, int]]:
    """``refs`` as (ref, kind, id); repeats count once. An id no row can have is kept as 0 (missing)."""
    wanted = string_list(refs, "refs", max_items=MAX_REFS_PER_CALL, max_len=MAX_REF_CHARS)
    parsed: list[tuple[str, str, int]] = []
    for raw in wanted:
        ref = raw.strip()
        kind, _, digits = ref.partition(":")
        if kind not in ("mem", "ep") or not (digits.isascii() and digits.isdigit()):
            raise InvalidInput(f"refs: {ref[:40]!r} is not of the form mem:<id> or ep:<id>")
        number = int(digits) if len(digits) <= MAX_ROW_ID_DIGITS else 0
        if all(ref != seen for seen, _, _ in parsed):
            parsed.append((ref, kind, number if 0 < number <= MAX_ROW_ID else 0))
    return parsed


class ContextPack:
    """``reconstruct`` over one store, seeded by the ``Recaller``."""

    def __init__(self, storage: Store, recaller: Recaller) -> None:
        self.storage = storage
        self.recaller = recaller

    @public
    def reconstruct(
        self,
        agent_id: str,
        query: Annotated[
            str, arg.Field(description="What the context is about (optional with refs or time_cue).")
        ] = "",
        *,
        refs: Annotated[
            Sequence[arg.RowRef] | None,
            arg.Field(
                max_length=MAX_REFS_PER_CALL,
                description="Your rows to build around too.",
            ),
        ] = None,
        budget_chars: Annotated[
            int,
            arg.Field(
                ge=RECONSTRUCT_BUDGET_MIN,
                le=RECONSTRUCT_BUDGET_MAX,
                description="Most characters quoted in all.",
            ),
        ] = RECONSTRUCT_BUDGET_DEFAULT,
        limit: Annotated[
            int, arg.Field(ge=1, le=RECONSTRUCT_LIMIT_MAX, description="Most recall rows taken as seeds.")
        ] = RECONSTRUCT_LIMIT_DEFAULT,
        time_cue: arg.TimeCueArg = None,
        project_id: arg.ProjectRead = None,
        channel: arg.ChannelRead = None,
        readable_agents: frozenset[str] | None = None,
    ) -> ReconstructResult:
        """A context pack: recall's best rows (and the rows named in ``refs``) quoted from the store,
        each with its supersede neighbours and one hop of declared links, within ``budget_chars``.

        Seeds are recall's rows for ``query`` (at most ``limit``; ``time_cue``, ``project_id`` and
        ``channel`` go to recall; recall statistics are not recorded) and the rows in ``refs``
        (``agent_id``'s own; others are listed in ``missing``). Each seed memory brings the memory in
        force that supersedes it (``current``), the memories its chain replaced (``replaced``) and the
        memories linked to it either way (``linked``; only rows of agents in ``readable_agents``,
        None: every agent). The budget counts the characters of the items' ``text``; it is spent on
        seeds first (best first), then current, replaced, linked; a row that no longer fits whole is
        quoted as a prefix ending in ``TRUNCATION_MARKER`` when at least
        ``RECONSTRUCT_MIN_QUOTE_CHARS`` remain, else listed in ``omitted``. ``items`` come grouped
        by seed, the most important group last, each group ending with its seed.
        """
        agent = required_str(agent_id, "agent_id")
        text = optional_str(query, "query", max_len=10**9, free_text=True) or ""
        given = _parse_refs(refs)
        budget = bounded_int(budget_chars, "budget_chars", RECONSTRUCT_BUDGET_MIN, RECONSTRUCT_BUDGET_MAX)
        seeds_limit = bounded_int(limit, "limit", 1, RECONSTRUCT_LIMIT_MAX)
        if time_cue is not None and not isinstance(time_cue, dict):
            raise InvalidInput("time_cue must be an object {phrase} or {start, end}, with certainty")
        if not text.strip() and not given and time_cue is None:
            raise InvalidInput("reconstruct needs a query, refs, or a time_cue")
        readable = None if readable_agents is None else frozenset(readable_agents) | {agent}
        recalled: dict[str, Any] = {}
        if text.strip() or time_cue is not None:
            # record=False: a pack is a quote of what is stored, and counting its rows as recalled
            # would demote them on the agent's next recall (the recent-recall penalty).
            recalled = dict(
                self.recaller.recall(
                    agent,
                    text,
                    limit=seeds_limit,
                    time_cue=time_cue,
                    project_id=project_id,
                    channel=channel,
                    record=False,
                )
            )
        matches = [
            dict(row)
            for row in reversed(recalled.get("results", []))  # recall answers worst → best
            if row.get("type") in ("memory", "episode")
        ]
        with self.storage.read() as session:
            seeds, missing = self._seeds(session, agent, matches, given)
            candidates = list(seeds)
            for index, seed in enumerate(seeds):
                if seed.row["type"] == "memory":
                    candidates += self._chain(session, seed, index)
            candidates += self._links(session, seeds, readable)
        items, used, omitted = _fit(candidates, budget)
        answer: ReconstructResult = {
            "ok": True,
            "items": items,
            "count": len(items),
            "budget_chars": budget,
            "used_chars": used,
            "omitted": omitted,
            "missing": missing,
        }
        for key in ("advisory", "explanation", "time_cue"):
            if key in recalled:
                answer[key] = recalled[key]  # keys shared with recall
        return answer

    def _seeds(
        self, session: Session, agent: str, matches: list[dict[str, Any]], given: list[tuple[str, str, int]]
    ) -> tuple[list[_Candidate], list[str]]:
        """Recall's rows best first, then the given rows in the order given (each row once)."""
        seeds: list[_Candidate] = []
        total = len(matches)
        for rank, row in enumerate(matches, start=1):
            score = row.get("match_reason", {}).get("score")
            seeds.append(
                _Candidate(row, "match", rank - 1, 0, f"recall match {rank} of {total}", score=score)
            )
        scope = Scope(agent_id=agent)
        mems = session.memories.get_many([n for _, k, n in given if k == "mem" and n], scope)
        eps = session.episodes.get_many([n for _, k, n in given if k == "ep" and n], scope)
        known = {c.ref for c in seeds}
        missing: list[str] = []
        for ref, kind, number in given:
            found = (mems if kind == "mem" else eps).get(number)
            if found is None:
                missing.append(ref)
                continue
            row = dict(found)
            if _ref(row) in known:
                continue
            known.add(_ref(row))
            seeds.append(_Candidate(row, "given", len(seeds), 0, "named in refs"))
        marked = [c.row for c in seeds if c.row["type"] == "memory"]
        supersede.mark_rows(session, marked)  # a given superseded row says by what
        return seeds, missing

    def _chain(self, session: Session, seed: _Candidate, index: int) -> list[_Candidate]:
        """The seed's supersede chain: the memory in force (when not the seed) and the rows it replaced."""
        try:
            # Read no more of the chain than the pack can use: the seed, the rows up to the one in
            # force, and the neighbours nearest it (a fan-in of 20,000 costs what 22 rows do).
            chain = supersede.history(
                session,
                int(seed.row["id"]),
                str(seed.row["agent_id"]),
                None,
                max_rows=RECONSTRUCT_NEIGHBOURS_PER_SEED + 2,
            )
        except NotFound:  # a recall row deleted since recall's own read: it keeps no neighbours
            return []
        rows = [dict(r) for r in chain["history"]]  # oldest → newest, the current row last
        head = chain["current"]
        out: list[_Candidate] = []
        if head != seed.ref and rows and _ref(rows[-1]) == head:
            direct = seed.row.get("superseded_by") == head
            why = f"in force: supersedes {seed.ref}" + ("" if direct else " down its chain")
            out.append(_Candidate(rows[-1], "current", index, 0, why, seed_ref=seed.ref))
        older = [r for r in reversed(rows) if _ref(r) not in (seed.ref, head)]  # nearest the head first
        for order, row in enumerate(older[:RECONSTRUCT_NEIGHBOURS_PER_SEED]):
            why = f"replaced: superseded by {row.get('superseded_by', '?')}, in the history of {seed.ref}"
            out.append(_Candidate(row, "replaced", index, order, why, seed_ref=seed.ref))
        return out

    def _links(
        self, session: Session, seeds: list[_Candidate], readable: frozenset[str] | None
    ) -> list[_Candidate]:
        """One hop of declared links from and to each seed memory, to memories the caller may read;
        the entities a seed links to are named on the seed."""
        by_id = {int(s.row["id"]): s for s in seeds if s.row["type"] == "memory"}
        if not by_id:
            return []
        found: dict[int, list[tuple[int, PathStep]]] = {}
        # Per seed, at most what the pack quotes plus a margin (links to unreadable rows are
        # skipped): a hub's other links are never read (docs/input-rules.md "Walks").
        cap = RECONSTRUCT_NEIGHBOURS_PER_SEED + WALK_MARGIN
        outgoing = [link for rid in by_id for link in session.links.outgoing([rid], limit=cap)]
        incoming = [link for rid in by_id for link in session.links.incoming([rid], limit=cap)]
        for link in outgoing:
            seed = by_id[link.from_id]
            step: PathStep = {"from": f"mem:{link.from_id}", "relation": link.relation, "to": ""}
            if link.to_id is None:
                if len(seed.entities) < RECONSTRUCT_NEIGHBOURS_PER_SEED and link.entity:
                    seed.entities.append({"relation": link.relation, "entity": link.entity})
                continue
            if may_read(link.to_agent, readable):
                step["to"] = f"mem:{link.to_id}"
                found.setdefault(link.from_id, []).append((link.to_id, step))
        for link in incoming:
            if link.to_id is not None and may_read(link.from_agent, readable):
                step = {"from": f"mem:{link.from_id}", "relation": link.relation, "to": f"mem:{link.to_id}"}
                found.setdefault(link.to_id, []).append((link.from_id, step))
        wanted = sorted({rid for pairs in found.values() for rid, _ in pairs})
        rows = {rid: dict(row) for rid, row in session.memories.get_many(wanted).items()}
        supersede.mark_rows(session, list(rows.values()))
        out: list[_Candidate] = []
        for seed_id, pairs in found.items():
            seed = by_id[seed_id]
            order = 0
            for rid, step in pairs:
                row = rows.get(rid)
                if row is None or order >= RECONSTRUCT_NEIGHBOURS_PER_SEED:
                    continue
                why = f"linked: {step['from']} {step['relation']} {step['to']}"
                out.append(_Candidate(row, "linked", seed.seed, order, why, link=step, seed_ref=seed.ref))
                order += 1
        return out


def _fit(candidates: list[_Candidate], budget: int) -> tuple[list[PackItem], int, list[str]]:
    """Spend ``budget`` in priority order; return the items (grouped, best group last), used, omitted."""
    chosen: list[tuple[_Candidate, PackItem]] = []
    omitted: list[str] = []
    placed: set[str] = set()
    seeds_in: set[int] = set()
    remaining = budget
    for candidate in sorted(candidates, key=lambda c: c.priority):
        ref = candidate.ref
        if ref in placed:
            continue  # a row comes once, where it matters most
        placed.add(ref)
        whole = str(candidate.row["content"])
        if candidate.role not in ("match", "given") and candidate.seed not in seeds_in:
            omitted.append(ref)  # a neighbour comes only beside its seed
            continue
        if len(whole) <= remaining:
            quoted, truncated = whole, False
        elif remaining >= RECONSTRUCT_MIN_QUOTE_CHARS:
            quoted, truncated = whole[: remaining - len(TRUNCATION_MARKER)] + TRUNCATION_MARKER, True
        else:
            omitted.append(ref)
            continue
        remaining -= len(quoted)
        if candidate.role in ("match", "given"):
            seeds_in.add(candidate.seed)
        chosen.append((candidate, _item(candidate, quoted, truncated, len(whole))))
    # Output: seed groups least important first; inside a group, its least important item first.
    chosen.sort(key=lambda pair: (-pair[0].seed, -_TIER[pair[0].role], -pair[0].order))
    items = [item for _, item in chosen]
    return items, budget - remaining, omitted


def _item(candidate: _Candidate, quoted: str, truncated: bool, length: int) -> PackItem:
    row = candidate.row
    is_memory = row["type"] == "memory"
    timestamp = row.get("timestamp") if is_memory else (row.get("end_time") or row.get("created_at"))
    item: PackItem = {
        "ref": candidate.ref,
        "type": cast(Literal["memory", "episode"], row["type"]),
        "agent_id": str(row["agent_id"]),
        "role": candidate.role,
        "seed": candidate.seed_ref or candidate.ref,
        "why": candidate.why,
        "text": quoted,
        "truncated": truncated,
        "text_len": length,
        "timestamp": None if timestamp is None else str(timestamp),
    }
    if candidate.score is not None:
        item["score"] = float(candidate.score)
    if candidate.link is not None:
        item["link"] = candidate.link
    if is_memory and row.get("superseded_by"):
        item["superseded_by"] = str(row["superseded_by"])
    if candidate.entities:
        item["entities"] = list(candidate.entities)
    return item
