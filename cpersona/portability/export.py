"""Export: stream an agent's (or every agent's) rows to a JSONL file, written atomically.

A cancel (``cpersona.work``) is honoured every ``BATCH`` rows: the temporary file is removed and
the target is left as it was, since a cut-off export would pass for a whole backup.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

from cpersona.atomic import atomic_text
from cpersona.errors import InvalidInput
from cpersona.portability import records
from cpersona.storage.interface import PortabilityRows
from cpersona.text import format_ts, utc_now
from cpersona.work import Work

#: Rows written between progress reports and cancel checks.
BATCH = 500

_LINE_BUILDERS: dict[str, Callable[[dict[str, Any], bool], dict[str, Any]]] = {
    "memory": records.memory_line,
    "episode": records.episode_line,
    "profile": lambda cols, _vectors: records.profile_line(cols),
}
_PLURAL = {"memory": "memories", "episode": "episodes", "profile": "profiles"}


def export_file(
    rows: PortabilityRows,
    target: Path,
    *,
    agent_id: str | None,
    include_embeddings: bool,
    model: tuple[str, int] | None,
    overwrite: bool = False,
    work: Work | None = None,
) -> dict[str, Any]:
    """Write the export to ``target``: a temporary file beside it, fsynced, then renamed into place.

    An existing ``target`` is refused unless ``overwrite``. A failure leaves no
    partial file behind. Returns the path, bytes written and per-type counts.
    """
    if target.exists() and not overwrite:
        raise InvalidInput(
            f"{target} already exists; choose another name or allow replacing it (overwrite=true; --force on the CLI)"
        )
    if target.is_dir():
        raise InvalidInput(f"{target} is a directory")
    written = {"memories": 0, "episodes": 0, "profiles": 0}
    work = work or Work()
    stream = rows.stream(agent_id, include_vectors=include_embeddings)
    with closing(stream), atomic_text(target) as out:
        _, counts = next(stream)
        total = counts["memories"] + counts["episodes"] + counts["profiles"]
        head = records.header(
            exported_at=format_ts(utc_now()),
            schema_version=counts["schema_version"],
            agent_id=agent_id,
            include_embeddings=include_embeddings,
            model=model if include_embeddings else None,
            counts={k: counts[k] for k in written},
        )
        out.write(_dump(head))
        for done, (kind, cols) in enumerate(stream, start=1):
            out.write(_dump(_LINE_BUILDERS[kind](cols, include_embeddings)))
            written[_PLURAL[kind]] += 1
            if done % BATCH == 0:
                work.report(done, total, "rows")
                # Raising here, inside atomic_text, removes the temporary file: the target stays as it was.
                work.checkpoint("export_memories", f"nothing was written: {target.name} is unchanged")
        work.report(sum(written.values()), total, "rows")
        if target.exists() and not overwrite:  # appeared while we were writing: raising keeps it as it is
            raise InvalidInput(
                f"{target} already exists; choose another name or allow replacing it (overwrite=true; --force on the CLI)"
            )
    return {
        "ok": True,
        "path": str(target),
        "bytes": target.stat().st_size,
        "agent_id": agent_id,
        "include_embeddings": include_embeddings,
        "counts": written,
    }


def _dump(obj: dict[str, Any]) -> str:
    # ensure_ascii=False keeps the file readable; separators keep it small.
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n"
