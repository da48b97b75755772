"""``cpersona export`` / ``cpersona import`` run as the installed console script (keyword-only)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from test_cli_commands import run

from cpersona.config import Settings
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.memory import Memory

pytestmark = pytest.mark.slow


def test_export_then_import_through_the_cli(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.mkdir()
    dst.mkdir()
    # Seeded in-process: the CLI's export and import are under test here, its store in test_cli_commands.
    settings = Settings(
        db_path=src / "memory.db", embedding_mode="none", update_check=False, auto_fetch_model=False
    )
    with Memory(settings, backend=NoEmbeddings(), start_background=False) as memory:
        for i in range(3):
            assert memory.store("ana", f"cli fact {i}")["result"] == "stored"
        assert memory.store("zed", "other agent fact")["result"] == "stored"
    out_file = tmp_path / "anywhere" / "ana.jsonl"  # the CLI is not confined to the export dir
    done = run(src, "export", str(out_file), "--agent", "ana")
    assert done.returncode == 0, done.stderr
    assert "exported 3 memories" in done.stdout
    assert "zed" not in out_file.read_text()
    refused = run(src, "export", str(out_file), "--agent", "ana")
    assert refused.returncode == 1 and "already exists" in refused.stderr
    dry = run(dst, "import", str(out_file), "--dry-run")
    assert dry.returncode == 0 and "would import: 3 memories" in dry.stdout
    assert (
        not (dst / "memory.db").exists()
        or sqlite3.connect(dst / "memory.db").execute("SELECT COUNT(*) FROM memories").fetchone()[0] == 0
    )
    first = run(dst, "import", str(out_file), "--agent", "bea", "--json")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["counts"]["memories"]["inserted"] == 3
    second = run(dst, "import", str(out_file), "--agent", "bea")
    assert "already present (skipped): 3 memories" in second.stdout
    recall = run(dst, "recall", "bea", "cli fact", "--json")
    assert len(json.loads(recall.stdout)["results"]) == 3


def test_import_reports_bad_lines_and_exits_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"type": "header", "format": "cpersona-export", "version": 1})
        + "\n{nope\n"
        + json.dumps({"type": "memory", "agent_id": "a", "content": "ok"})
        + "\n"
    )
    result = run(tmp_path, "import", str(bad))
    assert result.returncode == 1
    assert "line 2: not valid JSON" in result.stderr and "imported: 1 memory" in result.stdout
    missing = run(tmp_path, "import", str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 1 and "does not exist" in missing.stderr
