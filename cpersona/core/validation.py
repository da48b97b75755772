"""Argument checks shared by the Python API (the MCP layer adds JSON-schema checks on top)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cpersona.core.limits import (
    MAX_IDENTIFIER_CHARS,
    MAX_LIST_ITEM_CHARS,
    MAX_LIST_ITEMS,
    MAX_ROW_ID,
    MAX_ROW_ID_DIGITS,
)
from cpersona.core.text import clean_text
from cpersona.errors import InvalidInput


def optional_str(
    value: Any, name: str, max_len: int = MAX_IDENTIFIER_CHARS, *, free_text: bool = False
) -> str | None:
    """None or a cleaned string no longer than ``max_len``.

    Identifiers (the default) are keys: a NUL byte is refused rather than stripped, because
    stripping would make ``"ag\\0nt"`` silently share ``"agnt"``'s rows. ``free_text`` strings
    (queries) have NUL bytes removed like any content.
    """
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string")
    if not free_text and "\x00" in value:
        raise InvalidInput(f"{name} contains a NUL byte; identifiers are keys and must not")
    value = clean_text(value)
    if len(value) > max_len:
        raise InvalidInput(f"{name} is {len(value)} characters; at most {max_len} allowed")
    return value


def required_str(value: Any, name: str, max_len: int = MAX_IDENTIFIER_CHARS) -> str:
    """A cleaned string (empty allowed) no longer than ``max_len``."""
    if value is None:
        raise InvalidInput(f"{name} is required")
    result = optional_str(value, name, max_len)
    assert result is not None
    return result


def bounded_int(value: Any, name: str, low: int, high: int) -> int:
    """An integer within [low, high] (booleans refused: JSON true is not 1 here)."""
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise InvalidInput(f"{name} must be an integer between {low} and {high}")
    if not low <= value <= high:
        raise InvalidInput(f"{name} must be between {low} and {high} (got {value})")
    return value


def row_id(value: Any, name: str, prefix: str) -> int:
    """A positive row id given as an integer or as its ref (``mem:12`` / ``ep:3``)."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith(prefix + ":"):
            text = text[len(prefix) + 1 :]
        if text.isascii() and text.isdigit() and len(text) <= MAX_ROW_ID_DIGITS:
            value = int(text)
        else:
            raise InvalidInput(f"{name} must be an integer id or a '{prefix}:<id>' ref (got {value[:40]!r})")
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0 or value > MAX_ROW_ID:
        raise InvalidInput(f"{name} must be a positive integer id")
    return value


def string_list(
    value: Any, name: str, max_items: int = MAX_LIST_ITEMS, max_len: int = MAX_LIST_ITEM_CHARS
) -> tuple[str, ...]:
    """A list of strings (None → empty)."""
    if value is None:
        return ()
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidInput(f"{name} must be a list of strings")
    if len(value) > max_items:
        raise InvalidInput(f"{name} has {len(value)} items; at most {max_items} allowed")
    out = []
    for item in value:
        if not isinstance(item, str):
            raise InvalidInput(f"{name} must contain only strings")
        out.append(clean_text(item)[:max_len])
    return tuple(out)


def boolean(value: Any, name: str) -> bool:
    """A real boolean."""
    if not isinstance(value, bool):
        raise InvalidInput(f"{name} must be true or false")
    return value


def agent_set(value: Any, name: str = "allowed_agents") -> frozenset[str] | None:
    """None (no restriction) or a set of agent ids; a bare string is refused (it is not a set of ids)."""
    if value is None:
        return None
    if isinstance(value, str | bytes) or not hasattr(value, "__iter__"):
        raise InvalidInput(f"{name} must be a collection of agent ids, not {type(value).__name__}")
    agents = frozenset(value)
    if not all(isinstance(agent, str) for agent in agents):
        raise InvalidInput(f"{name} must contain only strings")
    return agents
