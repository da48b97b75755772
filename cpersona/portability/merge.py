"""merge_memories: argument rules around the one-transaction merge in storage."""

from __future__ import annotations

from typing import Any

from cpersona.errors import InvalidInput
from cpersona.storage.maintenance_interface import COPY, MOVE, MaintenanceRows
from cpersona.validation import required_str

STRATEGIES = ("skip",)
MODES = (COPY, MOVE)


def merge(
    rows: MaintenanceRows,
    source_agent_id: str,
    target_agent_id: str,
    *,
    strategy: str,
    mode: str,
    dry_run: bool,
    queued_at: str | None,
) -> dict[str, Any]:
    """Copy or move every row of one agent to another, skipping what the target already holds."""
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
    counts = rows.merge_agents(
        source, target, mode=mode, dry_run=dry_run, queued_at=None if dry_run else queued_at
    )
    return {
        "ok": True,
        "dry_run": dry_run,
        "source_agent_id": source,
        "target_agent_id": target,
        "mode": mode,
        "strategy": strategy,
        "counts": counts,
    }
