"""``cpersona history`` and ``cpersona links`` (a memory's supersede chain; a walk of declared links), and
the time-cue options of ``cpersona recall``.

Each calls the ``Memory`` method the tool calls (``get_history``, ``traverse``; ``recall(time_cue=...)``)
and prints either lines for a person or, with ``--json``, the method's result. The command line is the
store's owner: it sees every agent, as the single-user MCP server does.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from cpersona.config import Settings
from cpersona.core.limits import (
    TRAVERSE_DEPTH_DEFAULT,
    TRAVERSE_DEPTH_MAX,
    TRAVERSE_LIMIT_DEFAULT,
    TRAVERSE_LIMIT_MAX,
)
from cpersona.errors import InvalidInput
from cpersona.retrieval.time_cue import CERTAINTIES, DEFAULT_CERTAINTY
from cpersona.services.links import DIRECTIONS

#: Characters of content shown per row in the human-readable output.
SNIPPET_CHARS = 160

OpenMemory = Callable[..., Any]


def _snippet(text: Any) -> str:
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= SNIPPET_CHARS else flat[: SNIPPET_CHARS - 1] + "…"


def _when(value: Any) -> str:
    return str(value or "")[:19].replace("T", " ")


def _print_json(value: Any) -> None:
    print(json.dumps(value, ensure_ascii=False, indent=2, default=str))


# -- recall's time cue -------------------------------------------------------------------------


def add_time_cue_arguments(recall: argparse.ArgumentParser) -> None:
    """``--time-cue JSON`` or ``--since`` / ``--until`` / ``--phrase`` with ``--certainty`` and ``--now``."""
    group = recall.add_argument_group(
        "time cue", "when the memory happened (its own timestamp); docs/retrieval.md 'Time cues'"
    )
    group.add_argument(
        "--time-cue",
        metavar="JSON",
        help='the API\'s time_cue as JSON, e.g. \'{"phrase": "last week", "certainty": "sure"}\'',
    )
    group.add_argument("--since", metavar="WHEN", help="period start: a date, 2023-05, 2023 or an ISO time")
    group.add_argument("--until", metavar="WHEN", help="period end, included (a date covers its whole day)")
    group.add_argument("--phrase", help="the period as a date phrase: 'last week', 'in May 2023', '先週'")
    group.add_argument(
        "--certainty",
        choices=CERTAINTIES,
        help=f"sure keeps only the period's rows; likely / vague boost them (default {DEFAULT_CERTAINTY})",
    )
    group.add_argument("--now", metavar="WHEN", help="the time a relative phrase is read against")


def time_cue_from_args(args: argparse.Namespace) -> dict[str, Any] | None:
    """The ``time_cue`` the recall options describe (None: no cue); InvalidInput for a bad combination."""
    parts = {"start": args.since, "end": args.until, "phrase": args.phrase}
    extra = {"certainty": args.certainty, "now": args.now}
    if args.time_cue is not None:
        if any(v is not None for v in (*parts.values(), *extra.values())):
            raise InvalidInput(
                "--time-cue takes the whole cue: leave out --since/--until/--phrase/--certainty/--now"
            )
        try:
            cue = json.loads(args.time_cue)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"--time-cue is not JSON: {exc.msg} (at character {exc.pos})") from None
        if not isinstance(cue, dict):
            raise InvalidInput('--time-cue must be a JSON object such as \'{"phrase": "last week"}\'')
        return cue
    cue = {k: v for k, v in (parts | extra).items() if v is not None}
    if cue and not any(v is not None for v in parts.values()):
        raise InvalidInput("--certainty and --now need a period: --since and/or --until, or --phrase")
    return cue or None


def describe_time_cue(cue: dict[str, Any]) -> str:
    """The cue that acted, in words (recall echoes it as ``time_cue``)."""
    period = f"{_when(cue.get('start')) or '…'} → {_when(cue.get('end')) or '…'} (end excluded)"
    how = "only rows in the period" if cue.get("certainty") == "sure" else "rows near the period boosted"
    origin = "read from the query" if cue.get("origin") == "query" else "given"
    phrase = f" {cue['phrase']!r}" if cue.get("phrase") else ""
    return f"time cue{phrase} {origin}: {period}, {cue.get('certainty')}: {how}"


# -- history -----------------------------------------------------------------------------------


def format_history(result: dict[str, Any]) -> list[str]:
    """The chain oldest to newest, the asked-for row and the current one marked."""
    chain = result.get("history") or []
    lines = [
        f"{len(chain)} memor{'y' if len(chain) == 1 else 'ies'} in the chain of {result.get('ref')}, oldest first; current: {result.get('current')}"
    ]
    for row in chain:
        ref = row.get("ref")
        mark = "current" if ref == result.get("current") else "       "
        here = " ◀" if ref == result.get("ref") else ""
        by = row.get("superseded_by")
        fate = f"  superseded by {by} on {_when(row.get('superseded_at'))}" if by else ""
        lines.append(
            f"{mark}  {ref}  {_when(row.get('timestamp'))}  {_snippet(row.get('content'))}{fate}{here}"
        )
    return lines


def cmd_history(args: argparse.Namespace, settings: Settings, open_memory: OpenMemory) -> int:
    """Print a memory's supersede chain (``Memory.get_history``)."""
    with open_memory(settings, background=False) as memory:
        result = memory.get_history(args.ref, agent_id=args.agent)
    if args.json:
        _print_json(result)
    else:
        for line in format_history(dict(result)):
            print(line)
    return 0


# -- links -------------------------------------------------------------------------------------


def format_traverse(result: dict[str, Any]) -> list[str]:
    """One line per node reached: hops, the node, and the links walked to it."""
    nodes = result.get("results") or []
    more = "; stopped at --limit (more are linked)" if result.get("truncated") else ""
    lines = [
        f"{len(nodes)} reached from {result.get('from')} ({result.get('direction')}, "
        f"up to {result.get('depth')} hop(s)){more}"
    ]
    for node in nodes:
        path = " ".join(
            f"{step['from']} -{step['relation']}-> {step['to']}" for step in node.get("path") or []
        )
        if node.get("type") == "entity":
            what = f"entity {node.get('entity')!r} ({node.get('agent_id')})"
        else:
            what = f"{node.get('ref')} ({node.get('agent_id')})  {_snippet(node.get('content'))}"
        lines.append(f"hop {node.get('hop')}  {what}")
        lines.append(f"       via {path}")
    return lines


def cmd_links(args: argparse.Namespace, settings: Settings, open_memory: OpenMemory) -> int:
    """Walk the declared links from a memory or an entity (``Memory.traverse``)."""
    with open_memory(settings, background=False) as memory:
        result = memory.traverse(
            args.agent,
            args.start,
            relation=args.relation,
            depth=args.depth,
            limit=args.limit,
            direction=args.direction,
        )
    if args.json:
        _print_json(result)
    else:
        for line in format_traverse(dict(result)):
            print(line)
    return 0


def add_chain_commands(sub: Any, open_memory: OpenMemory) -> None:
    """Register ``history`` and ``links``."""
    history = sub.add_parser(
        "history",
        help="a memory's supersede chain, oldest to newest (get_history)",
        description="Every memory of the supersede chain REF belongs to, oldest first, each superseded one "
        "with what superseded it and when; the current one is marked.",
    )
    history.add_argument("ref", help="memory ref (mem:12) or id")
    history.add_argument("--agent", help="only if the memory is this agent's (default: any agent)")
    history.add_argument("--json", action="store_true", help="print the raw JSON result")
    history.set_defaults(func=lambda args, settings: cmd_history(args, settings, open_memory))

    links = sub.add_parser(
        "links",
        help="walk declared associations from a memory or an entity (traverse)",
        description="Breadth-first walk of the links agents declared (store associations, "
        "declare_associations), from a memory ref or one of the agent's entities.",
    )
    links.add_argument("start", help="mem:<id>, entity:<name>, or a bare entity name")
    links.add_argument("--agent", required=True, help="the agent whose entities a name means")
    links.add_argument(
        "--depth",
        type=int,
        default=TRAVERSE_DEPTH_DEFAULT,
        help=f"hops, 1..{TRAVERSE_DEPTH_MAX} (default {TRAVERSE_DEPTH_DEFAULT})",
    )
    links.add_argument("--relation", help="follow only links of this relation")
    links.add_argument(
        "--direction",
        choices=DIRECTIONS,
        default="both",
        help="out: as declared; in: against it; both (default)",
    )
    links.add_argument(
        "--limit",
        type=int,
        default=TRAVERSE_LIMIT_DEFAULT,
        help=f"most nodes returned, 1..{TRAVERSE_LIMIT_MAX} (default {TRAVERSE_LIMIT_DEFAULT})",
    )
    links.add_argument("--json", action="store_true", help="print the raw JSON result")
    links.set_defaults(func=lambda args, settings: cmd_links(args, settings, open_memory))
