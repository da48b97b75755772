"""The JSONL export format: one header line, then one JSON object per memory, episode or profile.

Field names are explicit and independent of the schema version (see
docs/tools.md "export_memories" for the full format). Records are validated
on import with the same rules as ``store`` / ``archive_episode`` /
``update_profile``: text cleaned and capped (a cut is counted, not refused),
source/metadata must be JSON objects within the byte cap, timestamps are
normalised to the stored UTC form.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections import Counter
from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np

from cpersona.config import Settings
from cpersona.core.limits import MAX_REASON_CHARS
from cpersona.core.text import cap_text, clean_text, json_field, normalise_timestamp
from cpersona.core.validation import optional_str
from cpersona.embed.registry import expected_dimension
from cpersona.embed.runtime.blocks import MAX_BLOCKS
from cpersona.errors import InvalidInput
from cpersona.secret_guard import SecretGuard
from cpersona.storage.blocks import NewBlock
from cpersona.storage.port_records import ImportedEpisode, ImportedMemory, ImportedProfile, ImportRecord
from cpersona.storage.values import NewMemory

# The records here stay plain dicts on purpose: they are lines of the export file (the format in
# docs/tools.md "export_memories"), not results of the Python API, so they have no shape in cpersona/result_types.
FORMAT = "cpersona-export"
#: The newest format this code reads and writes: 2 adds ``link`` lines (portability/link_records.py).
VERSION = 2
RECORD_TYPES = ("memory", "episode", "profile")


def header(
    *,
    exported_at: str,
    schema_version: int,
    agent_id: str | None,
    include_embeddings: bool,
    model: tuple[str, int] | None,
    counts: dict[str, int],
    version: int = 1,
) -> dict[str, Any]:
    """The first line of every export file (``version`` 2 when it holds link lines)."""
    return {
        "type": "header",
        "format": FORMAT,
        "version": version,
        "exported_at": exported_at,
        "source_schema_version": schema_version,
        "agent_id": agent_id,
        "include_embeddings": include_embeddings,
        "embedding_model": model[0] if model else None,
        "embedding_dim": model[1] if model else None,
        "counts": counts,
    }


def check_header(obj: Any) -> dict[str, Any]:
    """Accept the first line only when it is a header of a format version this code reads."""
    if not isinstance(obj, dict) or obj.get("type") != "header" or obj.get("format") != FORMAT:
        raise InvalidInput(f"line 1 is not a {FORMAT} header; is this file an export from cpersona export?")
    version = obj.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= VERSION:
        raise InvalidInput(
            f"export format version {version!r} is not supported (this CPersona reads 1..{VERSION})"
        )
    return obj


def _json_value(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text  # exported as stored; the import reports it as invalid


def _vector_fields(cols: dict[str, Any]) -> dict[str, Any]:
    blob = cols.get("embedding")
    if blob is None:
        return {"embedding": None, "embedding_model": None, "embedding_dim": None}
    return {
        "embedding": base64.b64encode(blob).decode("ascii"),
        "embedding_model": cols["embedding_model"],
        "embedding_dim": cols["embedding_dim"],
    }


def memory_line(cols: dict[str, Any], include_embeddings: bool) -> dict[str, Any]:
    """A memory row as an export record."""
    out = {
        "type": "memory",
        "source_id": cols["id"],
        "agent_id": cols["agent_id"],
        "project_id": cols["project_id"],
        "channel": cols["channel"],
        "msg_id": cols["msg_id"],
        "content": cols["content"],
        "source": _json_value(cols["source"]),
        "metadata": _json_value(cols["metadata"]),
        "timestamp": cols["timestamp"],
        "created_at": cols["created_at"],
        "recall_count": cols["recall_count"],
        "last_recalled_at": cols["last_recalled_at"],
        "locked": bool(cols["locked"]),
    }
    # Written only when set, so a file of rows that never expire nor retire stays as it was.
    for key in LIFECYCLE_FIELDS:
        if cols.get(key) is not None:
            out[key] = cols[key]
    if include_embeddings:
        out.update(_vector_fields(cols))
        if (
            cols.get("blocks") and out["embedding"] is not None
        ):  # a long memory's blocks, of its vector's model
            out["blocks"] = [
                {
                    "index": b.index,
                    "start": b.start,
                    "end": b.end,
                    "embedding": base64.b64encode(b.embedding).decode("ascii"),
                }
                for b in cols["blocks"]
            ]
    return out


#: A memory's expiry and retirement, carried by export, import and merge (docs/secrets-and-forgetting.md).
LIFECYCLE_FIELDS = ("expires_at", "retired_at", "retire_reason")


def lifecycle(obj: dict[str, Any]) -> tuple[str | None, str | None, str | None] | None:
    """(expires_at, retired_at, retire_reason) of a memory record, or None when it has none. Raises InvalidInput."""
    if not any(obj.get(k) is not None for k in LIFECYCLE_FIELDS):
        return None
    reason = obj.get("retire_reason")
    if reason is not None and not isinstance(reason, str):
        raise InvalidInput("'retire_reason' must be a string")
    retired = _stamp(obj, "retired_at", None)
    return (
        _stamp(obj, "expires_at", None),
        retired,
        (clean_text(reason)[:MAX_REASON_CHARS] if reason and retired else None),
    )


def _blocks(obj: dict[str, Any], dim: int | None, length: int) -> tuple[NewBlock, ...]:
    """The validated ``blocks`` of a memory record whose vector was kept (of that vector's dimension);
    blocks outside the (possibly cut) content are left out: the back-fill sweep recomputes what is missing."""
    found = obj.get("blocks")
    if found is None or dim is None:
        return ()
    if not isinstance(found, list) or len(found) > MAX_BLOCKS + 1:  # the lead and MAX_BLOCKS more
        raise InvalidInput(f"'blocks' must be a list of at most {MAX_BLOCKS + 1} block records")
    blocks: list[NewBlock] = []
    for item in found:
        given = [item.get(k) if isinstance(item, dict) else None for k in ("index", "start", "end")]
        numbers = [n for n in given if isinstance(n, int) and not isinstance(n, bool) and n >= 0]
        if len(numbers) != 3:
            raise InvalidInput("a block needs non-negative integers 'index', 'start' and 'end'")
        index, start, end = numbers
        (blob, _, _), _ = _vector(
            {"embedding": item.get("embedding"), "embedding_model": "block", "embedding_dim": dim}
        )
        if blob is None or not 0 <= index <= MAX_BLOCKS or not start < end:
            raise InvalidInput("a block needs an 'embedding' and 0 <= index, start < end")
        if end <= length:
            blocks.append(NewBlock(index, start, end, blob))
    if len({b.index for b in blocks}) != len(blocks):
        raise InvalidInput("'blocks' holds the same index twice")
    return tuple(blocks)


def supersede_line(cols: dict[str, Any], include_embeddings: bool = False) -> dict[str, Any]:
    """A supersede link as an export record: the rows by their ids in this export (``source_id``)."""
    return {"type": "supersede", "older": cols["older"], "newer": cols["newer"], "at": cols["at"]}


def parse_supersede(obj: dict[str, Any]) -> tuple[int, int, str]:
    """(older source id, newer source id, when) of a supersede record. Raises InvalidInput."""
    ids = []
    for name in ("older", "newer"):
        value = obj.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= 2**62:
            raise InvalidInput(f"supersede record: '{name}' must be a positive integer source id")
        ids.append(value)
    if ids[0] == ids[1]:
        raise InvalidInput("supersede record: a memory cannot supersede itself")
    at = _stamp(obj, "at", None)
    if at is None:
        raise InvalidInput("supersede record: 'at' (when it was superseded) is missing")
    return ids[0], ids[1], at


def episode_line(cols: dict[str, Any], include_embeddings: bool) -> dict[str, Any]:
    """An episode row as an export record (keywords as a list)."""
    out = {
        "type": "episode",
        "source_id": cols["id"],
        "agent_id": cols["agent_id"],
        "project_id": cols["project_id"],
        "channel": cols["channel"],
        "summary": cols["summary"],
        "keywords": [k for k in (cols["keywords"] or "").split("\n") if k],
        "start_time": cols["start_time"],
        "end_time": cols["end_time"],
        "resolved": bool(cols["resolved"]),
        "created_at": cols["created_at"],
    }
    if include_embeddings:
        out.update(_vector_fields(cols))
    return out


def profile_line(cols: dict[str, Any]) -> dict[str, Any]:
    """A profile row as an export record."""
    return {
        "type": "profile",
        **{k: cols[k] for k in ("agent_id", "project_id", "user_id", "content", "updated_at")},
    }


# -- import-side validation -----------------------------------------------------------------


def _text(
    obj: dict[str, Any], name: str, cap: int, guard: SecretGuard, found: Counter[str]
) -> tuple[str, bool]:
    value = obj.get(name)
    if not isinstance(value, str):
        raise InvalidInput(f"'{name}' must be a string" if name in obj else f"'{name}' is missing")
    guarded = guard.check(clean_text(value).strip(), f"'{name}'")  # refuse: this line is an error
    found.update(guarded.counts)
    text, cut = cap_text(guarded.text, cap)
    if not text:
        raise InvalidInput(f"'{name}' is empty")
    return text, cut


def _axis(obj: dict[str, Any], name: str) -> str:
    return optional_str(obj.get(name), name) or ""


def _agent(obj: dict[str, Any], target: str | None) -> str:
    if target is not None:
        return target
    value = obj.get("agent_id")
    if not isinstance(value, str):
        raise InvalidInput("'agent_id' must be a string (or pass target_agent_id)")
    return optional_str(value, "agent_id") or ""


def _stamp(obj: dict[str, Any], name: str, default: str | None) -> str | None:
    value = obj.get(name)
    return default if value is None else normalise_timestamp(value, name)


def _flag(obj: dict[str, Any], name: str) -> bool:
    value = obj.get(name, False)
    if not isinstance(value, bool):
        raise InvalidInput(f"'{name}' must be true or false")
    return value


class Parsed(NamedTuple):
    """One validated record: whether its text was cut, whether its vector was dropped, the secrets replaced,
    and a memory's (expires_at, retired_at, retire_reason) when it has any."""

    record: ImportRecord
    truncated: bool
    vector_dropped: bool = False
    redacted: dict[str, int] = {}
    lifecycle: tuple[str | None, str | None, str | None] | None = None


_NO_VECTOR: tuple[None, None, None] = (None, None, None)


def _vector(obj: dict[str, Any]) -> tuple[tuple[bytes | None, str | None, int | None], bool]:
    """(blob, model, dim) of the record's vector, and True when a contradicted vector was dropped.

    A vector whose length contradicts what the model registry knows of its model (10
    values claiming the 384-d all-minilm-l6-v2, a Matryoshka cut the model lacks) is
    not stored as that model's vector: the row is imported without it and queued for
    embedding like any row without one (one such row once faulted the whole model: issue 17).
    """
    encoded = obj.get("embedding")
    if encoded is None:
        return _NO_VECTOR, False
    model, dim = obj.get("embedding_model"), obj.get("embedding_dim")
    if not isinstance(encoded, str) or not isinstance(model, str) or not model:
        raise InvalidInput("'embedding' must be base64 text with a non-empty 'embedding_model'")
    if isinstance(dim, bool) or not isinstance(dim, int) or not 1 <= dim <= 65536:
        raise InvalidInput("'embedding_dim' must be a positive integer")
    try:
        blob = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidInput("'embedding' is not valid base64") from exc
    if len(blob) != 4 * dim:
        raise InvalidInput(f"'embedding' holds {len(blob)} bytes; {dim} float32 values need {4 * dim}")
    if not np.isfinite(np.frombuffer(blob, dtype="<f4")).all():
        raise InvalidInput("'embedding' holds NaN or infinite values")
    known = expected_dimension(model)
    if known is not None and known != dim:
        return _NO_VECTOR, True
    return (blob, model, dim), False


def _count(obj: dict[str, Any], name: str) -> int:
    value = obj.get(name, 0)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 2**62:
        raise InvalidInput(f"'{name}' must be a non-negative integer")
    return value


def parse_record(obj: Any, *, target_agent: str | None, settings: Settings, now: str) -> Parsed:
    """Validate one non-header line. Raises InvalidInput with the reason."""
    if not isinstance(obj, dict):
        raise InvalidInput("a record must be a JSON object")
    kind = obj.get("type")
    if kind not in RECORD_TYPES:
        raise InvalidInput(
            f"unknown record type {str(kind)[:40]!r}; expected one of {', '.join(RECORD_TYPES)}"
        )
    agent = _agent(obj, target_agent)
    guard = SecretGuard(settings.secrets)
    found: Counter[str] = Counter()
    if kind == "profile":
        text, cut = _text(obj, "content", settings.max_profile_length, guard, found)
        updated = _stamp(obj, "updated_at", None)
        if updated is None:
            # A profile replaces the stored one only when newer: without a time it cannot be
            # compared, and defaulting to "now" made every such line win, on every import.
            raise InvalidInput(
                "'updated_at' is missing: a profile replaces the stored one only when its updated_at is newer"
            )
        return Parsed(
            ImportedProfile(agent, _axis(obj, "project_id"), _axis(obj, "user_id"), text, updated),
            cut,
            redacted=dict(found),
        )
    (blob, model, dim), dropped = _vector(obj)
    created = _stamp(obj, "created_at", now) or now
    if kind == "episode":
        text, cut = _text(obj, "summary", settings.max_content_length, guard, found)
        words = obj.get("keywords") or []
        if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
            raise InvalidInput("'keywords' must be a list of strings")
        clean_words = [k for k in (clean_text(w).strip()[:200] for w in words) if k and "\n" not in k]
        guarded_words = [guard.check(w, "'keywords'") for w in clean_words]
        found.update(sum((Counter(g.counts) for g in guarded_words), Counter()))
        clean_words = [g.text for g in guarded_words]
        if found:  # the file's vector was computed from the secret: the row is embedded again
            (blob, model, dim) = _NO_VECTOR
        episode = ImportedEpisode(
            agent_id=agent,
            project_id=_axis(obj, "project_id"),
            channel=_axis(obj, "channel"),
            summary=text,
            keywords="\n".join(clean_words),
            start_time=_stamp(obj, "start_time", None),
            end_time=_stamp(obj, "end_time", None),
            resolved=_flag(obj, "resolved"),
            created_at=created,
            embedding=blob,
            embedding_model=model,
            embedding_dim=dim,
        )
        return Parsed(episode, cut, dropped, dict(found))
    text, cut = _text(obj, "content", settings.max_content_length, guard, found)
    msg = obj.get("msg_id")
    if isinstance(msg, int) and not isinstance(msg, bool):
        msg = str(msg)
    row = NewMemory(
        agent_id=agent,
        project_id=_axis(obj, "project_id"),
        channel=_axis(obj, "channel"),
        msg_id=(optional_str(msg, "msg_id") or "").strip(),
        content=text,
        source=_guarded_json(obj, "source", settings, guard, found),
        metadata=_guarded_json(obj, "metadata", settings, guard, found),
        timestamp=_stamp(obj, "timestamp", created) or created,
        created_at=created,
        embedding=blob,
        embedding_model=model,
        embedding_dim=dim,
    )
    if found:  # the file's vector was computed from the secret: the row is embedded again
        row = replace(row, embedding=None, embedding_model=None, embedding_dim=None)
    last = _stamp(obj, "last_recalled_at", None)
    # Blocks go with the row's vector: none when it was dropped (or computed from a redacted secret).
    blocks = _blocks(obj, dim if blob is not None and not found else None, len(text))
    memory = ImportedMemory(row, _count(obj, "recall_count"), last, _flag(obj, "locked"), blocks)
    return Parsed(memory, cut, dropped, dict(found), lifecycle(obj))


def _guarded_json(
    obj: dict[str, Any], name: str, settings: Settings, guard: SecretGuard, found: Counter[str]
) -> str | None:
    text = json_field(obj.get(name), name, settings.max_metadata_bytes)
    if text is None:
        return None
    guarded = guard.check_json(text, f"'{name}'")
    found.update(guarded.counts)
    return guarded.text
