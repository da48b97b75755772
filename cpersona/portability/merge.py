"""merge_memories: argument rules around the one-transaction merge in storage."""

from __future__ import annotations

from typing import Literal, cast

from cpersona.core.validation import required_str
from cpersona.core.work import Work
from cpersona.errors import InvalidInput
from cpersona.result_types.operations import MergeResult
from cpersona.storage.maintenance_interface import COPY, MOVE, MaintenanceRows, MergeRequest

STRATEGIES = ("skip",)
MODES = (COPY, MOVE)
#: Source rows between progress reports and cancel checks.
BATCH = 500


def merge(
    rows: MaintenanceRows,
    source_agent_id: str,
    target_agent_id: str,
    *,
    strategy: str,
    mode: str,
    dry_run: bool,
    queued_at: str | None,
    work: Work | None = None,
) -> MergeResult:
    """Copy or move every row of one agent to another, skipping what the target already holds.

    ``work`` gets progress every ``BATCH`` source rows and may cancel there; the merge is one
    transaction, so a cancel rolls it back whole (nothing merged).
    """
    source = required_str(source_agent_id, "source_agent_id")
    target = required_str(target_agent_id, "target_agent_id")
    if source == target:
        raise InvalidInput("source_agent_id and target_agent_id are the same agent; nothing to merge")
    if strategy not in STRATEGIES:
        raise InvalidInput(f"strategy must be one of {', '.join(STRATEGIES)} (got {str(strategy)[:40]!r})")
    if mode not in MODES:
        raise InvalidInput(f"mode must be one of {', '.join(MODES)} (got {str(mode)[:40]!r})")
    if not isinstance(dry_run, bool):
        raise InvalidInput("dry_run must be true or false")
    work = work or Work()
    seen = 0

    def step() -> None:
        nonlocal seen
        if seen and seen % BATCH == 0:
            work.report(seen, None, "source rows")
            work.checkpoint("merge_memories", "the merge was rolled back: nothing was merged")
        seen += 1

    counts = rows.merge_agents(
        MergeRequest(source, target, mode, dry_run, None if dry_run else queued_at, step)
    )
    return {
        "ok": True,
        "dry_run": dry_run,
        "source_agent_id": source,
        "target_agent_id": target,
        "mode": cast("Literal['copy', 'move']", mode),  # checked against MODES above
        "strategy": cast("Literal['skip']", strategy),  # checked against STRATEGIES above
        "counts": counts,
    }
