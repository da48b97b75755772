"""Normalisation of agent-supplied text and timestamps (documented in docs/input-rules.md)."""

from __future__ import annotations

import functools
import json
import math
import re
import unicodedata
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from cpersona.core.limits import MAX_JSON_DEPTH
from cpersona.errors import InvalidInput

#: A lone UTF-16 surrogate: text that holds one cannot be encoded as UTF-8 (the one pattern for it).
LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")
_WHITESPACE = re.compile(r"\s+")
# The exact form format_ts writes; parse_ts reads it without strptime (~10x faster, same result).
_STORED_TS = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z")


def clean_text(text: str) -> str:
    """Drop NUL bytes and replace lone surrogates with U+FFFD so the text is storable UTF-8."""
    if "\x00" in text:
        text = text.replace("\x00", "")
    if text.isascii() and type(text) is str:  # no surrogate in it: most texts, a C scan, not a regex pass
        return text
    return LONE_SURROGATE.sub("\ufffd", text)


def cap_text(text: str, limit: int) -> tuple[str, bool]:
    """Cut ``text`` to ``limit`` characters; returns (text, truncated)."""
    if len(text) <= limit:
        return text, False
    return text[:limit], True


def comparison_key(text: str) -> str:
    """Case-folded, NFKC, whitespace-collapsed form used by exclude_contents matching."""
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFKC", text)).strip().casefold()


def utc_now() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def format_ts(moment: datetime) -> str:
    """Fixed-width ISO-8601 UTC with microseconds, so stored timestamps sort as text.

    The year is padded to four digits by hand: ``strftime("%Y")`` writes years below 1000 with
    fewer digits on glibc (``385-07-25…``), which sorts after ``2000-…`` and breaks period scans.
    """
    at = moment.astimezone(UTC)
    return f"{at.year:04d}-{at.strftime('%m-%dT%H:%M:%S.%f')}Z"


def iso_seconds(epoch: float | None = None) -> str:
    """ISO-8601 UTC to the second (``2026-01-31T09:30:00Z``) for people and side files; now when None."""
    moment = utc_now() if epoch is None else datetime.fromtimestamp(epoch, UTC)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """'1 memory', '2 memories', '0 episodes': a count with its noun in the right number."""
    if count == 1:
        return f"{count} {noun}"
    return f"{count} {plural or noun + 's'}"


def local_minute(value: Any) -> str:
    """A stored timestamp as people read it: local time to the minute (``2026-11-01 11:00``); the
    text as it is when it is not a stored timestamp, "" for None."""
    if not value:
        return ""
    try:
        moment = parse_ts(str(value))
    except ValueError:
        return str(value)
    return moment.astimezone().strftime("%Y-%m-%d %H:%M")


@functools.lru_cache(maxsize=8192)
def parse_ts(value: str) -> datetime:
    """Parse a stored timestamp (always written by ``format_ts``).

    Recall parses a few timestamps per candidate row; ``strptime`` costs ~30 µs each, so the
    fixed-width form goes through ``fromisoformat``. Anything else takes the strptime path, which
    decides what is accepted (both raise ValueError on an impossible date). Cached: a recall reads
    the same rows' times in several stages (~130 parses a recall on a long history), and a datetime
    is immutable; a failure is not cached, so it raises every time.
    """
    if _STORED_TS.fullmatch(value):
        return datetime.fromisoformat(value[:-1]).replace(tzinfo=UTC)
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def normalise_timestamp(value: Any, field: str = "timestamp") -> str:
    """Accept an ISO-8601 string or a Unix epoch number; return the stored UTC form.

    Offsets are converted to UTC. A naive timestamp (no offset) is taken as UTC;
    that rule is documented because agents often omit the zone.
    """
    if isinstance(value, bool):
        raise InvalidInput(f"{field} must be an ISO-8601 string or a Unix time, not a boolean")
    if isinstance(value, int | float):
        try:
            return format_ts(datetime.fromtimestamp(float(value), UTC))
        except (OverflowError, OSError, ValueError) as exc:
            raise InvalidInput(f"{field} {value!r} is out of range") from exc
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be an ISO-8601 string")
    raw = value.strip()
    if raw.endswith(("Z", "z")):
        raw = raw[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError as exc:
        raise InvalidInput(f"{field} {value[:60]!r} is not ISO-8601 (e.g. 2026-01-31T09:30:00Z)") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return format_ts(moment)
    except (OverflowError, ValueError) as exc:
        raise InvalidInput(f"{field} {value[:60]!r} is out of range") from exc


def json_field(value: Any, field: str, max_bytes: int) -> str | None:
    """Serialise a source/metadata value to JSON; refuse (never cut) when over ``max_bytes``.

    Strings are parsed as JSON so agents may pass either an object or its text.
    """
    if value is None:
        return None
    too_deep = f"{field} is nested deeper than {MAX_JSON_DEPTH} levels; flatten it"
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            # A bare word ("user") is the commonest slip: say what shape is wanted, not just where it broke.
            raise InvalidInput(
                f"{field} is not valid JSON: {exc.msg} at position {exc.pos}; pass a JSON object, "
                f'for example {{"type": "user"}}'
            ) from exc
        except RecursionError as exc:
            # The decoder gives up near the interpreter's recursion limit, far past MAX_JSON_DEPTH.
            raise InvalidInput(too_deep) from exc
    if not isinstance(value, dict):
        raise InvalidInput(f"{field} must be a JSON object")
    if json_depth(value, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise InvalidInput(too_deep)
    try:
        text = json.dumps(clean_json(value), ensure_ascii=False, sort_keys=True, allow_nan=False)
    except ValueError as exc:
        raise InvalidInput(f"{field} holds a value JSON cannot carry ({exc})") from exc
    if len(text.encode("utf-8")) > max_bytes:
        raise InvalidInput(f"{field} is {len(text.encode('utf-8'))} bytes; the cap is {max_bytes} bytes")
    return text


def json_depth(value: Any, limit: int) -> int:
    """Nesting depth of dicts/lists in ``value`` (a scalar is 0), counting no further than ``limit + 1``.

    Iterative, so a value nested thousands of levels deep costs no recursion.
    """
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if deepest > limit:
            return deepest
        stack.extend((child, level + 1) for child in children)
    return deepest


def clean_json(value: Any, *, coerce: bool = False) -> Any:
    """A copy of a JSON-like value with every string and key through ``clean_text``.

    The one walker for JSON going in (metadata, wire messages) and out (tool replies).
    Mappings become dicts with ``str`` keys, lists and tuples become lists. Other values
    are kept as they are, so that the encoder refuses what JSON cannot carry (a NaN in
    metadata is the caller's error, not ours to rewrite); with ``coerce`` (replies, which
    must always encode) NaN and infinities become None and any other object its cleaned
    ``str()``. Recursive: callers bound the depth first (limits.MAX_JSON_DEPTH,
    MAX_MESSAGE_DEPTH) or walk values they built.
    """
    kind = type(value)  # exact-type checks first: every reply passes through here (~50 values a row)
    if kind is str:
        return clean_text(value)
    if kind is dict:
        return {
            clean_text(k if type(k) is str else str(k)): clean_json(v, coerce=coerce)
            for k, v in value.items()
        }
    if kind is list:
        return [clean_json(v, coerce=coerce) for v in value]
    if kind is int or kind is bool or value is None:
        return value
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, Mapping):
        return {clean_text(str(k)): clean_json(v, coerce=coerce) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean_json(v, coerce=coerce) for v in value]
    if not coerce or value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return clean_text(str(value))
