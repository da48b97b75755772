"""The ``blocks`` health check: long memories without the block vectors of the active model
(docs/retrieval.md#long-records, docs/health.md).

A memory longer than the model's window is found by meaning beyond its first window only through its
blocks, and a fact said in its opening sentence before a long request only through its lead block.
Rows stored before blocks (or leads) existed, or imported without them, lack them until the back-fill
sweep at start-up queues them; this check reports them and ``fix=true`` queues them now (the queue
re-embeds the row with its blocks). Which texts need blocks is ``blocks.needs_blocks``' rule.

Registered through ``cpersona.health.checks.register`` when the health package is imported.
"""

from __future__ import annotations

from cpersona.core.text import format_ts, utc_now
from cpersona.health.checks import (
    MAX_REPAIRS_PER_CHECK,
    WARN,
    Check,
    Finding,
    HealthContext,
    Outcome,
    register,
)

#: Memories read per page while looking for missing blocks.
_PAGE = 500


def _unblocked(ctx: HealthContext, window: int, limit: int) -> list[int]:
    """Memories (of ``ctx.agent_id`` when given) due blocks of the active model they do not hold."""
    # Here, not at the top: the health registry is imported by the MCP handshake, which stays free of numpy.
    from cpersona.embed.runtime.blocks import due_pages, shortest_blocked

    def read_page(after: int) -> list[tuple[int, str, int]]:
        with ctx.store.read() as s:
            return s.memories.without_lead(
                ctx.model_id, ctx.dimension, shortest_blocked(window), after, _PAGE
            )

    found: list[int] = []
    for due in due_pages(read_page, window):
        if ctx.agent_id is not None and due:
            with ctx.store.read() as s:
                owners = {i: r["agent_id"] for i, r in s.memories.get_many(due).items()}
            due = [i for i in due if owners.get(i) == ctx.agent_id]
        found += due[: limit - len(found)]
        if len(found) >= limit:
            break
    return found


def _blocks(ctx: HealthContext) -> Outcome:
    window = ctx.window_tokens
    out = Outcome(details={"window_tokens": window})
    if not window or not ctx.model_id or ctx.embedding_mode == "none":
        return out  # no model, or one whose window is unknown: no blocks are made
    if ctx.fix:
        ids = _unblocked(ctx, window, MAX_REPAIRS_PER_CHECK + 1)
        with ctx.store.write() as w:
            queued = w.repair.queue_embeddings("memories", ids[:MAX_REPAIRS_PER_CHECK], format_ts(utc_now()))
        # Queued ones keep no blocks until the back-fill runs: "remaining" counts those past this run's cap.
        fixed = min(len(ids), MAX_REPAIRS_PER_CHECK)
        out.repaired = {"queued": queued, "fixed": fixed, "remaining": len(ids) - fixed}
        if queued and ctx.on_queued is not None:
            ctx.on_queued()
    missing = _unblocked(ctx, window, MAX_REPAIRS_PER_CHECK)
    out.details["missing"] = len(missing)
    if missing:
        out.findings.append(
            Finding(
                "blocks",
                WARN,
                f"{len(missing)} long memor{'y' if len(missing) == 1 else 'ies'} without the block vectors of "
                "the active model they are due: the text past the model's window, or the opening sentence on "
                "its own, is found by keyword only",
                count=len(missing),
                refs=[f"mem:{i}" for i in missing[:20]],
                fix="fix=true queues them; the back-fill embeds each with its blocks",
            )
        )
    return out


register(
    Check(
        "blocks",
        "long memories without block vectors of the active model",
        _blocks,
        "queues them for embedding",
    )
)
