"""Export: stream an agent's (or every agent's) rows as JSONL into a file written atomically (or stdout).

A cancel (``cpersona.core.work``) is honoured every ``BATCH`` rows: raised inside the sink, it removes the
temporary file and leaves the target as it was, since a cut-off export would pass for a whole backup.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager, closing
from typing import Any, TextIO

from cpersona.core.text import format_ts, utc_now
from cpersona.core.work import Work
from cpersona.portability import original, records
from cpersona.portability.link_records import link_line
from cpersona.result_types.operations import ExportResult
from cpersona.secret_guard import Redaction, SecretGuard
from cpersona.storage.interface import PortabilityRows

#: Rows written between progress reports and cancel checks.
BATCH = 500

_LINE_BUILDERS: dict[str, Callable[[dict[str, Any], bool], dict[str, Any]]] = {
    "memory": records.memory_line,
    "episode": records.episode_line,
    "profile": lambda cols, _vectors: records.profile_line(cols),
    "link": lambda cols, _vectors: link_line(cols),
    "supersede": records.supersede_line,
}
_PLURAL = {"memory": "memories", "episode": "episodes", "profile": "profiles", "link": "links"}


def export_file(
    rows: PortabilityRows,
    sink: AbstractContextManager[TextIO],
    *,
    shown: str,
    agent_id: str | None,
    include_embeddings: bool,
    model: tuple[str, int] | None,
    work: Work | None = None,
    original_format: bool = False,
    include_secrets: bool = False,
) -> ExportResult:
    """Write the export into ``sink`` (paths.atomic_write: temp file, fsync, rename; or stdout).

    A failure inside the sink leaves no partial file behind. Returns the path (``shown``),
    bytes written and per-type counts. ``original_format`` writes the original CPersona's
    ``cpersona-export/1.0`` (portability/original.py): its memory, episode and profile lines; links
    and supersede links have no line there and are counted as ``not_written_links`` /
    ``not_written_supersede_links``.
    Unless ``include_secrets``, every credential the guard
    finds (cpersona.secret_guard) is written as its placeholder, and a row so changed goes
    without its vector (computed from the secret); ``redacted`` counts them by kind.
    """
    found: Counter[str] = Counter()
    written = {"memories": 0, "episodes": 0, "profiles": 0}
    work = work or Work()
    size = 0
    stream = rows.stream(agent_id, include_vectors=include_embeddings)
    with closing(stream), sink as out:
        _, counts = next(stream)
        total = counts["memories"] + counts["episodes"] + counts["profiles"]
        if counts.get("links"):  # only files with links count them (and say version 2)
            written["links"] = 0
            total += counts["links"]
        head = (
            original.original_header(agent_id=agent_id, exported_at=format_ts(utc_now()), counts=counts)
            if original_format
            else None
        ) or records.header(
            exported_at=format_ts(utc_now()),
            schema_version=counts["schema_version"],
            agent_id=agent_id,
            include_embeddings=include_embeddings,
            model=model if include_embeddings else None,
            counts={k: counts[k] for k in written},
            version=2 if "links" in written else 1,
        )
        size += _write(out, head)
        links = 0
        left_out = 0
        for done, (kind, cols) in enumerate(stream, start=1):
            if original_format and kind in ("link", "supersede"):
                left_out += kind == "link"
                links += kind == "supersede"
                continue
            if original_format:
                line = original.original_line(kind, cols, include_embeddings)
            else:
                line = _LINE_BUILDERS[kind](cols, include_embeddings)
            if not include_secrets and kind in ("memory", "episode", "profile"):
                found.update(_scrub(line))
            size += _write(out, line)
            if kind == "supersede":
                links += 1
                continue
            written[_PLURAL[kind]] += 1
            if done % BATCH == 0:
                work.report(done, total, "rows")
                # Raising here, inside the sink, removes the temporary file: the target stays as it was.
                work.checkpoint("export_memories", f"nothing was written: {shown} is unchanged")
        work.report(sum(written.values()), total, "rows")
    if original_format:
        written.pop("links", None)
        if left_out:
            written["not_written_links"] = left_out
        if links:
            written["not_written_supersede_links"] = links
    elif links:
        written["supersede_links"] = links
    result: ExportResult = {
        "ok": True,
        "path": shown,
        "bytes": size,
        "agent_id": agent_id,
        "include_embeddings": include_embeddings,
        "counts": written,
    }
    if found:
        result["redacted"] = Redaction("", dict(found)).summary()
    return result


_SCRUB = SecretGuard("redact")
_VECTOR_KEYS = ("embedding", "embedding_model", "embedding_dim", "embedding_b64")


def _scrub(line: dict[str, Any]) -> Counter[str]:
    """Replace the secrets of one record line in place; the kinds found."""
    found: Counter[str] = Counter()
    for key in ("content", "summary"):
        if isinstance(line.get(key), str):
            r = _SCRUB.check(line[key], key)
            found.update(r.counts)
            line[key] = r.text
    for key in ("source", "metadata"):
        if isinstance(line.get(key), dict):
            r = _SCRUB.check_json(json.dumps(line[key], ensure_ascii=False, sort_keys=True), key)
            if r.total:
                found.update(r.counts)
                line[key] = json.loads(r.text)
    if isinstance(line.get("keywords"), str):  # the original's format joins them with commas
        kept = _SCRUB.check(line["keywords"], "keywords")
        found.update(kept.counts)
        line["keywords"] = kept.text
    if isinstance(line.get("keywords"), list):
        words = []
        for word in line["keywords"]:
            if isinstance(word, str):
                kept = _SCRUB.check(word, "keywords")
                found.update(kept.counts)
                word = kept.text
            words.append(word)
        line["keywords"] = words
    if found:
        for key in _VECTOR_KEYS:
            line.pop(key, None)
    return found


def _write(out: TextIO, obj: dict[str, Any]) -> int:
    line = _dump(obj)
    out.write(line)
    return len(line.encode("utf-8", "surrogatepass"))


def _dump(obj: dict[str, Any]) -> str:
    # ensure_ascii=False keeps the file readable; separators keep it small.
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"
