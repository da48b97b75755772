"""The ``secrets`` health check: rows already holding credentials, and ``fix=true`` redacting them in place.

Rows written before the guard existed, under ``CPERSONA_SECRETS=allow``, or imported by an older
version may hold what the guard now finds (cpersona.secret_guard). The check reads every memory
(content, source, metadata), episode (summary, keywords) and profile of the scope and reports refs
and kinds, never values. ``fix=true`` replaces each secret with its placeholder through
``HealthRepairs.replace_text`` (the keyword indexes follow their tables' triggers; a memory's or an
episode's vector is dropped and queued again), locked rows included: a lock protects a memory from
an agent's edits, not from the operator removing a credential from it. Each redaction is logged
(ref, column, kinds).
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

from cpersona.core.text import format_ts, utc_now
from cpersona.health.checks import (
    MAX_REPAIRS_PER_CHECK,
    SAMPLE_REFS,
    WARN,
    Check,
    Finding,
    HealthContext,
    Outcome,
    register,
)
from cpersona.health.deep_checks import DEEP_REGISTRY, DeepCheck
from cpersona.secret_guard import SecretGuard
from cpersona.storage.interface import Session, Store

LOG = logging.getLogger(__name__)
#: Rows read per page while scanning (the whole scope is read: the check's cost grows with it).
PAGE = 500


@dataclass(frozen=True)
class Hit:
    """One stored text holding secrets: where it is, what it holds now, what it would hold redacted."""

    ref: str
    table: str
    key: Any
    column: str
    old: str
    new: str
    kinds: dict[str, int]


#: The text columns scanned per table (source / metadata are JSON objects: their values are scanned).
_COLUMNS = {"memories": ("content", "source", "metadata"), "episodes": ("summary", "keywords")}
_JSON = {"source", "metadata"}


def _texts(session: Session, agent: str | None) -> list[tuple[str, str, Any, str, str, bool]]:
    """Every (ref, table, key, column, stored text, is_json) of the scope, raw as stored."""
    out: list[tuple[str, str, Any, str, str, bool]] = []
    for table, columns in _COLUMNS.items():
        prefix = "mem" if table == "memories" else "ep"
        after = 0
        while rows := session.health.stored_texts(table, columns, agent, after, PAGE):
            for r in rows:
                for column in columns:
                    if r[column]:
                        out.append(
                            (f"{prefix}:{r['id']}", table, r["id"], column, str(r[column]), column in _JSON)
                        )
            after = int(rows[-1]["id"])
    agents = [agent] if agent is not None else session.admin.agent_ids()
    for a in agents:
        for p in session.browse.profiles(a):
            key = (p["agent_id"], p["project_id"], p["user_id"])
            out.append((f"profile:{'/'.join(key)}", "profiles", key, "content", p["content"], False))
    return out


def find_secrets(store: Store, agent: str | None) -> list[Hit]:
    """Every stored text of ``agent`` (None: every agent) that holds a secret, with its redacted form."""
    guard = SecretGuard("redact")
    hits = []
    with store.read() as s:
        texts = _texts(s, agent)
    for ref, table, key, column, text, is_json in texts:
        try:
            result = guard.check_json(text, column) if is_json else guard.check(text, column)
        except ValueError:  # not JSON (the invalid_json check's finding): scanned as plain text
            result = guard.check(text, column)
        if result.total:
            hits.append(Hit(ref, table, key, column, text, result.text, result.counts))
    return hits


def redact_hits(store: Store, hits: list[Hit], *, queue: bool) -> int:
    """Rewrite the texts of ``hits`` (at most MAX_REPAIRS_PER_CHECK) in one transaction; how many were.

    ``queue``: queue the rewritten memories and episodes for embedding (there is a model to fill them).
    """
    fixed = 0
    requeue: dict[str, list[int]] = {"memories": [], "episodes": []}
    with store.write() as w:
        for hit in hits[:MAX_REPAIRS_PER_CHECK]:
            if not w.repair.replace_text(hit.table, hit.key, hit.column, hit.old, hit.new):
                continue
            fixed += 1
            LOG.warning("secrets: redacted %s %s (%s)", hit.ref, hit.column, ", ".join(sorted(hit.kinds)))
            if (hit.table, hit.column) in {("memories", "content"), ("episodes", "summary")}:
                requeue[hit.table].append(hit.key)
        if queue:
            for table, ids in requeue.items():
                w.repair.queue_embeddings(table, ids, format_ts(utc_now()))
    return fixed


def kinds_of(hits: list[Hit]) -> dict[str, int]:
    """The kinds and counts over ``hits``."""
    kinds: Counter[str] = Counter()
    for h in hits:
        kinds.update(h.kinds)
    return dict(kinds)


def _deep_secrets(ctx: HealthContext) -> tuple[list[Finding], dict[str, Any]]:
    # deep_check reports only: the same finding for the one agent, its fix left to check_health.
    out = _secrets(replace(ctx, fix=False))
    return out.findings, out.details


def _secrets(ctx: HealthContext) -> Outcome:
    hits = find_secrets(ctx.store, ctx.agent_id)
    out = Outcome()
    if hits and ctx.fix:
        fixed = redact_hits(ctx.store, hits, queue=ctx.embedding_mode != "none")
        if fixed and ctx.on_queued is not None:
            ctx.on_queued()
        hits = find_secrets(ctx.store, ctx.agent_id)
        out.repaired = {"fixed": fixed, "remaining": len(hits)}
    if hits:
        kinds = kinds_of(hits)
        refs = list(dict.fromkeys(h.ref for h in hits))
        out.findings.append(
            Finding(
                "secrets",
                WARN,
                f"{len(refs)} row(s) hold credentials: "
                + ", ".join(f"{k} x{n}" for k, n in sorted(kinds.items())),
                count=len(refs),
                refs=refs[:SAMPLE_REFS],
                fix="check_health fix=true replaces each with '[redacted: <kind>]' (locked rows too) and "
                "re-embeds the row",
            )
        )
        out.details = {"kinds": dict(sorted(kinds.items()))}
    return out


DEEP_REGISTRY["secrets"] = DeepCheck(
    "secrets",
    "memories, episodes and the profile holding credentials (check_health fixes them)",
    _deep_secrets,
)
register(
    Check(
        "secrets",
        "rows holding credentials (keys, tokens, passwords: docs/secrets-and-forgetting.md)",
        _secrets,
        "redacts them in place",
    )
)
