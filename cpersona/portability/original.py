"""The original CPersona's formats (PyPI ``cpersona`` 2.5.x / 2.6.x), read as our export records.

Two sources carry the same rows: its SQLite database (schema 13 .. 21) and its export files
(``cpersona-export/1.0`` from 2.5, ``/1.1`` and ``/1.2`` from 2.6: a first line
``{"_type": "header", "version": "cpersona-export/1.x", ...}``, then one ``_type: memory | episode |
profile`` object per line, and from 1.1 on ``entity | mention | relation`` (1.2: ``folder |
folder_member``) lines). Both are turned into the lines of our own format (portability/records.py,
version 1), so one importer applies the same validation, dedup, dry run, ``target_agent_id`` and grant
checks to all of them. Only the formats are facts taken over; no code of the original.

Vectors: the original stores raw float32 blobs. 2.6 (schema 18 on) labels each with the model that
declared it; 2.5 records the model only in the calibration sidecar and in its environment. A vector is
kept when its label names a model of our registry and its length is that model's dimension; any other
vector is left behind and its row queued for embedding, and the counts say so (``vectors_not_kept``).
"""

from __future__ import annotations

import base64
import functools
import json
import os
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from cpersona.embed.registry import expected_dimension, list_manifests
from cpersona.portability import records
from cpersona.storage.original_interface import OriginalRows

#: The original's record types we have a home for; everything else is counted as not carried.
CARRIED = {"memory", "episode", "profile"}
#: The original's export format name (the version follows the slash).
EXPORT_PREFIX = "cpersona-export/"
#: Its tables rebuilt here from the rows (indexes, change logs, chunk caches, its task queue): not data.
DERIVED_TABLES = frozenset(
    {
        "schema_version",
        "sqlite_sequence",
        "pending_memory_tasks",
        "record_nodes",
        "record_blocks",
        "record_block_vectors",
        "block_log_clock",
        "record_block_changes",
        "vector_log_clock",
        "record_vector_changes",
    }
)
#: Its tables whose rows we carry.
CARRIED_TABLES = frozenset({"memories", "episodes", "profiles"})


def is_original_header(obj: Any) -> bool:
    """Whether a decoded first line is the original's export header."""
    return (
        isinstance(obj, dict)
        and obj.get("_type") == "header"
        and isinstance(obj.get("version"), str)
        and obj["version"].startswith(EXPORT_PREFIX)
    )


@functools.lru_cache(maxsize=64)  # asked once per vector; the registry reads its manifests each time
def our_model_name(label: str | None) -> str | None:
    """Our registry's name for the original's model label ('all-MiniLM-L6-v2', a hub id, ...), or None."""
    if not label:
        return None
    wanted = label.strip().lower()
    for manifest in list_manifests():
        names = {
            manifest.name.lower(),
            manifest.hub_repo.lower(),
            manifest.hub_repo.lower().rsplit("/", 1)[-1],
        }
        if wanted in names:
            return manifest.name
    return None


@functools.lru_cache(maxsize=64)
def _dimension(name: str) -> int | None:
    return expected_dimension(name)


class VectorCarry:
    """Decides per vector whether it is kept, and counts what is not (by the original's label)."""

    def __init__(self, default_label: str | None) -> None:
        self.default_label = default_label
        self.not_kept: Counter[str] = Counter()

    def fields(self, blob: bytes | None, label: str | None) -> dict[str, Any]:
        """The vector fields of our record: the blob under our model name, or none (queued)."""
        if not blob:
            return {}
        label = label or self.default_label
        name = our_model_name(label)
        if name is None or len(blob) % 4 or _dimension(name) != len(blob) // 4:
            self.not_kept[f"{label or 'unlabelled'} ({len(blob) // 4}-d)"] += 1
            return {}
        return {
            "embedding": base64.b64encode(blob).decode("ascii"),
            "embedding_model": name,
            "embedding_dim": len(blob) // 4,
        }


def _json(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return {"text": text}  # the original kept a non-JSON value as text; ours wants an object


def _keywords(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(k) for k in value]
    return [k.strip() for k in str(value or "").replace("\n", ",").split(",") if k.strip()]


def memory_record(row: Mapping[str, Any], vectors: VectorCarry, blob: bytes | None) -> dict[str, Any]:
    """An original memory (a table row or an export line) as our ``memory`` line."""
    return {
        "type": "memory",
        "source_id": row.get("id"),
        "agent_id": row.get("agent_id"),
        "project_id": row.get("project_id") or "",
        "channel": row.get("channel") or "",
        "msg_id": row.get("msg_id") or "",
        "content": row.get("content"),
        "source": _json(row.get("source")) or None,
        "metadata": _json(row.get("metadata")) or None,
        "timestamp": row.get("timestamp"),
        "created_at": row.get("created_at"),
        "recall_count": int(row.get("recall_count") or 0),
        "last_recalled_at": row.get("last_recalled_at"),
        "locked": bool(row.get("locked")),
        **vectors.fields(blob, row.get("embedding_model")),
    }


def episode_record(row: Mapping[str, Any], vectors: VectorCarry, blob: bytes | None) -> dict[str, Any]:
    """An original episode as our ``episode`` line (its comma-separated keywords as a list)."""
    return {
        "type": "episode",
        "source_id": row.get("id"),
        "agent_id": row.get("agent_id"),
        "project_id": row.get("project_id") or "",
        "channel": row.get("channel") or "",
        "summary": row.get("summary"),
        "keywords": _keywords(row.get("keywords")),
        "start_time": row.get("start_time") or None,
        "end_time": row.get("end_time") or None,
        "resolved": bool(row.get("resolved")),
        "created_at": row.get("created_at"),
        **vectors.fields(blob, row.get("embedding_model")),
    }


def profile_record(row: Mapping[str, Any]) -> dict[str, Any]:
    """An original profile as our ``profile`` line."""
    return {
        "type": "profile",
        "agent_id": row.get("agent_id"),
        "project_id": row.get("project_id") or "",
        "user_id": row.get("user_id") or "",
        "content": row.get("content"),
        "updated_at": row.get("updated_at"),
    }


class ExportTranslator:
    """Turns the lines of an original export file into ours, counting the record types left behind.

    Its graph lines (1.1 on) come after the rows: an entity line gives the name its id stands for; a
    relation from a memory (to a memory or an entity) and an entity's mention by a memory become our
    ``link`` lines, as when its database moves in. ``finish`` counts what had no home.
    """

    def __init__(self, head: dict[str, Any], default_label: str | None = None) -> None:
        self.original_version = str(head.get("version"))
        self.vectors = VectorCarry(default_label)
        self.not_carried: Counter[str] = Counter()
        self._entities: dict[Any, str] = {}
        self._named: set[Any] = set()
        self.header = records.header(
            exported_at=str(head.get("exported_at") or ""),
            schema_version=0,
            agent_id=head.get("agent_id") if isinstance(head.get("agent_id"), str) else None,
            include_embeddings=True,
            model=None,
            counts={
                "memories": _count(head.get("memory_count")),
                "episodes": _count(head.get("episode_count")),
                "profiles": _count(head.get("profile_count")),
                "links": _count(head.get("relation_count")) + _count(head.get("mention_count")),
            },
            version=2,  # link lines may follow: the importer keeps each memory's source_id
        )

    def line(self, obj: Any) -> Any | None:
        """Our line for one of its lines; None for a record with no line of ours (counted or remembered)."""
        if not isinstance(obj, dict) or "_type" not in obj:
            return obj  # the importer reports it as a bad line
        kind = obj.get("_type")
        if kind == "header":
            return {"type": "header"}  # a second header: the importer refuses it by line
        if kind in ("entity", "mention", "relation"):
            return self._graph(kind, obj)
        if kind not in CARRIED:
            self.not_carried[str(kind)[:40]] += 1
            return None
        blob = _b64(obj.get("embedding_b64"))
        if kind == "memory":
            row = dict(obj)
            for name in ("source", "metadata"):
                if f"{name}_text" in obj:  # a column that was not JSON, exported as its text
                    row[name] = {"text": obj[f"{name}_text"]}
            return memory_record(row, self.vectors, blob)
        if kind == "episode":
            return episode_record(obj, self.vectors, blob)
        return profile_record(obj)

    def _graph(self, kind: str, obj: dict[str, Any]) -> dict[str, Any] | None:
        if kind == "entity":
            if isinstance(obj.get("name"), str):
                self._entities[obj.get("id")] = obj["name"]
            aliases = obj.get("aliases")
            if isinstance(aliases, list) and aliases:
                self.not_carried["entity alias"] += len(aliases)
            return None
        if kind == "mention":
            source, target = _memory_ref(obj.get("ref")), ("entity", obj.get("entity"))
            relation = "mentions"
        else:
            source = obj.get("subject_id") if obj.get("subject_kind") == "mem" else None
            target = (str(obj.get("object_kind")), obj.get("object_id"))
            relation = relation_name(str(obj.get("predicate") or ""))
        line: dict[str, Any] = {"type": "link", "from_source_id": source, "relation": relation}
        if source is not None and target[0] == "mem":
            return line | {"to_source_id": target[1]}
        if source is not None and target[0] == "entity" and target[1] in self._entities:
            self._named.add(target[1])
            return line | {"entity": self._entities[target[1]]}
        self.not_carried[kind] += 1  # from an episode or an entity, or to an episode: no link here
        return None

    def finish(self) -> None:
        """Count the entities no carried link names (an entity lives here only as a link's name)."""
        unnamed = len(set(self._entities) - self._named)
        if unnamed:
            self.not_carried["entity"] += unnamed


def _memory_ref(ref: Any) -> int | None:
    """N of its ``mem:N`` reference (None for an episode's ``ep:N`` or anything else)."""
    if isinstance(ref, str) and ref.startswith("mem:") and ref[4:].isdigit():
        return int(ref[4:])
    return None


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _b64(value: Any) -> bytes | None:
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode(value, validate=True)
    except ValueError:
        return None


# -- the database ---------------------------------------------------------------------------------


def sidecar_label(db_path: Path) -> str | None:
    """The model the original's calibration sidecar names (``<db>.calibration.json``), if readable."""
    try:
        state = json.loads(Path(f"{db_path}.calibration.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    label = state.get("embedding_model") if isinstance(state, dict) else None
    return label if isinstance(label, str) and label else None


def environment_label(env: Mapping[str, str] | None = None) -> str | None:
    """The model name the original read from its environment (its own variable, then the shared one)."""
    e = os.environ if env is None else env
    for name in ("CPERSONA_EMBEDDING_MODEL", "EMBEDDING_MODEL"):
        if e.get(name, "").strip():
            return e[name].strip()
    return None


def not_carried_tables(counts: Mapping[str, int], links: LinkCarry | None = None) -> dict[str, int]:
    """Its tables holding rows that have no home here, by name; for 2.6's associations, the rows
    left over once its memory-to-memory and memory-to-entity declarations are carried as links."""
    left = {
        name: n
        for name, n in counts.items()
        if n and name not in CARRIED_TABLES and name not in DERIVED_TABLES
    }
    if links is not None:
        for table, carried in links.carried.items():
            if table in left:
                left[table] -= carried
        if "entities" in left:
            left["entities"] = max(0, left["entities"] - len(links.entities))
    return {name: n for name, n in left.items() if n > 0}


class LinkCarry:
    """2.6's declarations as our ``link`` lines, counting what they carried (by the original's table)."""

    def __init__(self) -> None:
        self.carried: Counter[str] = Counter()
        self.entities: set[str] = set()

    def supersede_lines(self, source: OriginalRows) -> Iterator[dict[str, Any]]:
        """One ``supersede`` line per correction it declared between two memories."""
        for pair in source.superseded():
            self.carried["relations"] += 1
            yield {"type": "supersede", "older": pair["older"], "newer": pair["newer"], "at": pair["at"]}

    def lines(self, source: OriginalRows) -> Iterator[dict[str, Any]]:
        """One ``link`` line per relation or mention that starts at a memory."""
        for row in source.declared_links():
            self.carried[str(row["source_table"])] += 1
            line: dict[str, Any] = {
                "type": "link",
                "from_source_id": row["from_id"],
                "relation": relation_name(str(row["relation"])),
            }
            if row["to_id"] is not None:
                line["to_source_id"] = row["to_id"]
            else:
                line["entity"] = row["entity"]
                self.entities.add(str(row["entity"]))
            yield line


def relation_name(predicate: str) -> str:
    """Its predicate in our relation spelling (lower-case letters, digits, '_'; a letter first)."""
    name = "_".join(re.findall(r"[a-z0-9]+", predicate.lower()))
    return name if name[:1].isalpha() else f"r_{name}"


def database_lines(
    source: OriginalRows, vectors: VectorCarry, links: LinkCarry | None = None
) -> Iterator[dict[str, Any]]:
    """Every memory, episode and profile of the original file as our export lines, oldest first; then
    (with ``links``) its declarations that start at a memory, as link lines. Its corrections between
    memories come first, as supersede lines (the importer keeps the identity of the rows they name)."""
    if links is not None:
        yield from links.supersede_lines(source)
    for cols in source.rows("memories"):
        yield memory_record(cols, vectors, cols.get("embedding"))
    for cols in source.rows("episodes"):
        yield episode_record(cols, vectors, cols.get("embedding"))
    for cols in source.rows("profiles"):
        yield profile_record(cols)
    if links is not None:
        yield from links.lines(source)


# -- writing its export format (``cpersona export --format cpersona-1.0``: the way back) ---------------

#: The export format version the original 2.5 line reads (2.6 reads it too).
WRITTEN_VERSION = "cpersona-export/1.0"


def original_header(*, agent_id: str | None, exported_at: str, counts: Mapping[str, int]) -> dict[str, Any]:
    """The first line of an export file in the original's format."""
    return {
        "_type": "header",
        "version": WRITTEN_VERSION,
        "agent_id": agent_id or "",
        "exported_at": exported_at,
        "memory_count": counts["memories"],
        "episode_count": counts["episodes"],
        "has_profile": counts["profiles"] > 0,
        "profile_count": counts["profiles"],
    }


def _object(text: str | None) -> Any:
    value = json.loads(text) if text else {}
    return value if isinstance(value, dict) else {"value": value}


def original_line(kind: str, cols: Mapping[str, Any], include_embeddings: bool) -> dict[str, Any]:
    """One of our rows as a line of the original's format (memory, episode or profile)."""
    if kind == "profile":
        return {
            "_type": "profile",
            **{k: cols[k] for k in ("agent_id", "user_id", "content", "updated_at", "project_id")},
        }
    if kind == "memory":
        out: dict[str, Any] = {
            "_type": "memory",
            "id": cols["id"],
            "agent_id": cols["agent_id"],
            "msg_id": cols["msg_id"],
            "content": cols["content"],
            "source": _object(cols["source"]),
            "timestamp": cols["timestamp"],
            "metadata": _object(cols["metadata"]),
            "created_at": cols["created_at"],
            "project_id": cols["project_id"],
            "channel": cols["channel"],
            "locked": int(bool(cols["locked"])),
            "recall_count": cols["recall_count"],
            "last_recalled_at": cols["last_recalled_at"],
        }
    else:
        out = {
            "_type": "episode",
            "id": cols["id"],
            "agent_id": cols["agent_id"],
            "summary": cols["summary"],
            "keywords": ",".join(k for k in (cols["keywords"] or "").split("\n") if k),
            "start_time": cols["start_time"],
            "end_time": cols["end_time"],
            "created_at": cols["created_at"],
            "resolved": bool(cols["resolved"]),
            "project_id": cols["project_id"],
            "channel": cols["channel"],
        }
    if include_embeddings and cols.get("embedding") is not None:
        out["embedding_b64"] = base64.b64encode(cols["embedding"]).decode("ascii")
        out["embedding_model"] = cols["embedding_model"]
    return out
