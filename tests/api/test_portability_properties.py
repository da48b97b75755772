"""Property tests: any line an agent can put in an import file, and any path string, is handled cleanly."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cpersona.config import Settings
from cpersona.errors import CPersonaError
from cpersona.portability.importer import import_file
from cpersona.portability.paths import export_root, locate
from cpersona.storage.sqlite.db import Database
from cpersona.storage.sqlite.migrations import migrate
from cpersona.storage.sqlite.portability import SqlitePortabilityRows

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=10,
)
RECORD = st.fixed_dictionaries(
    {"type": st.sampled_from(["memory", "episode", "profile", "other"])},
    optional={
        k: JSON
        for k in (
            "agent_id",
            "content",
            "summary",
            "msg_id",
            "channel",
            "timestamp",
            "created_at",
            "metadata",
            "source",
            "keywords",
            "locked",
            "recall_count",
            "embedding",
            "embedding_dim",
            "embedding_model",
            "updated_at",
        )
    },
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(RECORD | JSON, max_size=8))
def test_any_line_is_imported_or_reported(tmp_path: Path, lines: list[Any]) -> None:
    cfg = Settings(
        db_path=tmp_path / "p.db", embedding_mode="none", update_check=False, auto_fetch_model=False
    )
    db = Database(cfg.db_path)
    migrate(db)
    try:
        path = tmp_path / "f.jsonl"
        header = {"type": "header", "format": "cpersona-export", "version": 1}
        path.write_text("\n".join(json.dumps(x) for x in [header, *lines]) + "\n")
        rows = SqlitePortabilityRows(db)
        result = import_file(
            rows,
            cfg,
            path.open("rb"),
            source=path,
            total=path.stat().st_size,
            target_agent=None,
            dry_run=False,
            queue_backfill=False,
            active_model=None,
        )
        written = sum(sum(v for k, v in c.items() if k != "duplicates") for c in result["counts"].values())
        handled = written + sum(c.get("duplicates", 0) for c in result["counts"].values())
        blank = sum(1 for x in lines if json.dumps(x).strip() == "")
        assert handled + result["error_count"] + blank == len(lines)
    finally:
        db.close()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    requested=st.lists(
        st.sampled_from(["a", "b", ".", "/", "~", "\\", ":", "..", "/tmp", "\x00", "clients", "C"]),
        max_size=12,
    ).map("".join),
    folder=st.sampled_from([None, "C"]),
)
def test_a_confined_path_is_inside_the_export_dir_or_refused(
    tmp_path: Path, requested: str, folder: str | None
) -> None:
    cfg = Settings(db_path=tmp_path / "p.db", export_dir=tmp_path / "exports")
    try:
        place = locate(cfg, requested, confined=True, folder=folder, create=True)
    except CPersonaError as exc:
        assert exc.code in ("path_refused", "invalid_input"), exc
        return
    with place:
        home = export_root(cfg).resolve().joinpath(*(["clients", folder] if folder else []))
        assert place.shown.is_relative_to(home) and place.shown != home
        assert os.path.samefile(f"/proc/self/fd/{place.dir_fd}", place.shown.parent)
