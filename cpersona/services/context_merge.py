"""recall_with_context: merging recalled memories with the caller's conversation entries."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cpersona.core.limits import MAX_CONTEXT_ENTRIES
from cpersona.core.text import clean_text, comparison_key, normalise_timestamp
from cpersona.errors import InvalidInput

MERGED_ROLES = ("user", "assistant")


def validate_entries(entries: Any, field: str = "external_context") -> list[dict[str, Any]]:
    """Check and normalise conversation entries ({role, content, name?, user_id?, timestamp?}).

    ``field`` is the argument's name in the caller's tool (``history`` for archive_episode), so an
    error names what the caller actually sent.
    """
    if entries is None:
        return []
    if isinstance(entries, str) or not isinstance(entries, Sequence):
        raise InvalidInput(f"{field} must be a list of {{role, content}} objects")
    if len(entries) > MAX_CONTEXT_ENTRIES:
        raise InvalidInput(f"{field} has {len(entries)} entries; at most {MAX_CONTEXT_ENTRIES} allowed")
    clean: list[dict[str, Any]] = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise InvalidInput(f"{field}[{index}] must be an object")
        role, content = entry.get("role"), entry.get("content")
        if not isinstance(role, str) or not role.strip():
            raise InvalidInput(f"{field}[{index}].role must be a non-empty string")
        if not isinstance(content, str):
            raise InvalidInput(f"{field}[{index}].content must be a string")
        item: dict[str, Any] = {"role": clean_text(role.strip()), "content": clean_text(content)}
        for key in ("name", "user_id"):
            if entry.get(key) is not None:
                if not isinstance(entry[key], str):
                    raise InvalidInput(f"{field}[{index}].{key} must be a string")
                item[key] = clean_text(entry[key])
        if entry.get("timestamp") is not None:
            item["timestamp"] = normalise_timestamp(entry["timestamp"], f"{field}[{index}].timestamp")
        clean.append(item)
    return clean


def merge_chronologically(
    recalled: Sequence[Mapping[str, Any]], entries: Sequence[dict[str, Any]]
) -> dict[str, Any]:
    """Recalled rows plus user/assistant entries, deduplicated, oldest first.

    Entries without a timestamp are the live conversation: they sort after
    every dated item, in the order given.
    """
    merged: list[tuple[tuple[str, int, int], dict[str, Any]]] = []
    seen: set[str] = set()
    for order, row in enumerate(recalled):
        key = comparison_key(row.get("content", ""))
        if key in seen:
            continue
        seen.add(key)
        stamp = row.get("timestamp") or row.get("start_time") or row.get("created_at") or ""
        merged.append(((stamp, 0, order), {"origin": "memory", **row}))
    other_roles: list[str] = []
    for order, entry in enumerate(entries):
        if entry["role"] not in MERGED_ROLES:
            if entry["role"] not in other_roles:
                other_roles.append(entry["role"])
            continue
        key = comparison_key(entry["content"])
        if not key or key in seen:
            continue
        seen.add(key)
        stamp = entry.get("timestamp") or "\uffff"
        merged.append(((stamp, 1, order), {"origin": "context", **entry}))
    merged.sort(key=lambda pair: pair[0])
    result: dict[str, Any] = {"items": [item for _, item in merged]}
    if other_roles:
        result["context_filter_only"] = other_roles
    return result
