"""Response shaping for MCP: preview tier and response budgets (docs/tools.md#rules-that-apply-to-every-tool).

The Python API always returns full rows; an MCP response lands in an agent's
context window, so here long texts become previews (a pure prefix, or the part around the block of a
long memory that matched, plus ``content_truncated``, ``content_len`` and a ``ref`` that ``get_contents``
expands) and every list-shaped response has a character budget.

Budgets count the characters of the row texts (``content`` and, for episodes,
``summary``), the part of a row that can be large; the other fields are small
and bounded by the row count.
"""

from __future__ import annotations

from typing import Any

from cpersona.core.limits import (
    GET_CONTENTS_BUDGET_CHARS,
    LIST_BUDGET_CHARS,
    RECALL_FULL_CONTENT_BUDGET_CHARS,
)

_TEXT_FIELDS = ("content", "summary")


def text_cost(row: dict[str, Any]) -> int:
    """Characters a row's long text fields contribute to a response."""
    return sum(len(row[key]) for key in _TEXT_FIELDS if isinstance(row.get(key), str))


def row_ref(row: dict[str, Any]) -> str | None:
    """The row's ``mem:<id>`` / ``ep:<id>`` ref (built from type and id when the row lacks one)."""
    ref = row.get("ref")
    if isinstance(ref, str) and ref:
        return ref
    prefix = {"memory": "mem", "episode": "ep"}.get(str(row.get("type")))
    if prefix and row.get("id") is not None:
        return f"{prefix}:{row['id']}"
    return None


def is_previewable(row: dict[str, Any]) -> bool:
    """Profile rows (and rows without a ref to expand them) are never trimmed."""
    return row.get("type") != "profile" and row_ref(row) is not None


def _block_window(row: dict[str, Any], length: int, preview_chars: int) -> int:
    """Where a preview of ``preview_chars`` starts: 0, or around the block that matched a long memory
    (``match_reason.block``, docs/retrieval.md#long-records): a short block centred, a long one from its start."""
    reason = row.get("match_reason")
    block = reason.get("block") if isinstance(reason, dict) else None
    if (
        not isinstance(block, dict)
        or not isinstance(block.get("start"), int)
        or not isinstance(block.get("end"), int)
    ):
        return 0
    start, end = block["start"], block["end"]
    begin = start - max(0, preview_chars - (end - start)) // 2
    return max(0, min(begin, length - preview_chars))


def preview_row(row: dict[str, Any], preview_chars: int) -> dict[str, Any]:
    """A copy of ``row`` whose long text is cut to ``preview_chars`` characters: a pure prefix, or for a
    long memory a block of matched, the window around that block (``content_start`` says where it begins).

    Rows short enough, profile rows and rows without a ref come back unchanged.
    """
    content = row.get("content")
    if not is_previewable(row) or not isinstance(content, str) or len(content) <= preview_chars:
        return row
    shaped = dict(row)
    begin = _block_window(row, len(content), preview_chars)
    shaped["content"] = content[begin : begin + preview_chars]
    if begin:
        shaped["content_start"] = begin
    summary = row.get("summary")
    if isinstance(summary, str) and len(summary) > preview_chars:
        # Episodes repeat their text as summary; leaving it whole would defeat the preview.
        shaped["summary"] = summary[:preview_chars]
    shaped["content_truncated"] = True
    shaped["content_len"] = len(content)
    shaped["ref"] = row_ref(row)
    return shaped


def shape_recall(
    result: dict[str, Any],
    *,
    preview_chars: int,
    full_content: bool,
    budget_chars: int = RECALL_FULL_CONTENT_BUDGET_CHARS,
) -> dict[str, Any]:
    """Apply the preview tier (or the full-content budget) to a recall-shaped result.

    Results are ordered worst → best, so the budget is spent from the END: the
    most relevant rows stay whole first, and rows that no longer fit fall back
    to previews.
    """
    rows = result.get("results")
    if not isinstance(rows, list):
        return result
    shaped = dict(result)
    if not full_content:
        shaped["results"] = [preview_row(r, preview_chars) if isinstance(r, dict) else r for r in rows]
        return shaped
    remaining = budget_chars
    out: list[Any] = list(rows)
    fell_back = 0
    for index in range(len(rows) - 1, -1, -1):
        row = rows[index]
        if not isinstance(row, dict) or not is_previewable(row):
            continue
        cost = text_cost(row)
        if cost <= remaining:
            remaining -= cost
            continue
        trimmed = preview_row(row, preview_chars)
        if trimmed is not row:
            fell_back += 1
        out[index] = trimmed
        remaining = max(0, remaining - text_cost(trimmed))
    shaped["results"] = out
    shaped["full_content_budget_chars"] = budget_chars
    if fell_back:
        shaped["full_content_budget_exceeded"] = True
        shaped["previewed_count"] = fell_back
    return shaped


def shape_get_contents(
    result: dict[str, Any], *, budget_chars: int = GET_CONTENTS_BUDGET_CHARS
) -> dict[str, Any]:
    """Cut a get_contents batch to the character budget; refs that did not fit go to ``deferred``.

    Items keep request order and ``deferred`` is the contiguous tail that did not
    fit, so the caller simply asks again for ``deferred``. The first item is
    always returned whole even when it alone exceeds the budget: a single row is
    at most the content cap (16,000 characters by default), and deferring it
    would leave the caller with no way ever to read it.
    """
    items = result.get("items")
    if not isinstance(items, list):
        return result
    kept: list[Any] = []
    deferred: list[str] = []
    used = 0
    for item in items:
        cost = text_cost(item) if isinstance(item, dict) else 0
        if deferred or (kept and used + cost > budget_chars):
            ref = row_ref(item) if isinstance(item, dict) else None
            if ref is not None:
                deferred.append(ref)
                continue
        kept.append(item)
        used += cost
    shaped = dict(result)
    shaped["items"] = kept
    shaped["deferred"] = deferred
    shaped.setdefault("missing", [])
    if deferred:
        shaped["budget_chars"] = budget_chars
    return shaped


def shape_listing(
    result: dict[str, Any], *, preview_chars: int, budget_chars: int = LIST_BUDGET_CHARS, key: str = "items"
) -> dict[str, Any]:
    """Bound a list_memories / list_episodes (``key`` "history": get_history) response: whole texts
    until the budget, previews after."""
    items = result.get(key)
    if not isinstance(items, list):
        return result
    out: list[Any] = []
    used = 0
    previewed = 0
    for item in items:
        if not isinstance(item, dict):
            out.append(item)
            continue
        cost = text_cost(item)
        if used + cost <= budget_chars:
            out.append(item)
            used += cost
            continue
        trimmed = preview_row(item, preview_chars)
        if trimmed is not item:
            previewed += 1
        out.append(trimmed)
        used += text_cost(trimmed)
    shaped = dict(result)
    shaped[key] = out
    if previewed:
        shaped["content_budget_exceeded"] = True
        shaped["content_budget_chars"] = budget_chars
        shaped["previewed_count"] = previewed
    return shaped


def shape_context_results(result: dict[str, Any], *, preview_chars: int) -> dict[str, Any]:
    """Preview stored rows in a recall_with_context result; the caller's own entries stay as given."""
    shaped = dict(result)
    for key in ("results", "items", "merged"):
        rows = result.get(key)
        if isinstance(rows, list):
            shaped[key] = [preview_row(r, preview_chars) if isinstance(r, dict) else r for r in rows]
    return shaped
