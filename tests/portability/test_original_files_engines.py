"""The original CPersona's export and database files import on both engines (the SQLite file and PostgreSQL):
the importer is engine-neutral; only reading the original's own database is SQLite's."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from pg_cluster import BOTH_ENGINES
from test_move_in import FIXTURES, MINILM_LABEL

from cpersona.config import Settings
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.memory import Memory

pytestmark = BOTH_ENGINES


@pytest.mark.parametrize("source", ["original-2.6.14.jsonl", "original-2.6.14.db.gz"])
def test_an_original_file_imports_on_either_engine(
    settings: Settings, tmp_path: Path, source: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EMBEDDING_MODEL", MINILM_LABEL)
    path = tmp_path / source.removesuffix(".gz")
    data = (FIXTURES / source).read_bytes()
    path.write_bytes(gzip.decompress(data) if source.endswith(".gz") else data)
    with Memory(settings, backend=NoEmbeddings(), start_background=False) as memory:
        first = memory.import_memories(str(path), confined=False)
        again = memory.import_memories(str(path), confined=False)
        assert first["counts"]["memories"] == {"inserted": 24, "duplicates": 0}
        assert again["counts"]["memories"] == {"inserted": 0, "duplicates": 24}
        assert memory.stats()["counts"] == {"memories": 24, "episodes": 3, "profiles": 2}
        assert memory.list_memories(agent_id="carol")["total"] == 8
