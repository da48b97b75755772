"""The way back: ``export --format cpersona-1.0`` writes the original CPersona's format. Checked against the
original's own export file (the same fields), and, slow-marked, by importing it into the original itself
(cpersona 2.5.12 and 2.6.14 from PyPI in throwaway venvs; .ci/run builds them, CPERSONA_ORIGINAL_VENVS)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from test_move_in import FIXTURES, MINILM_LABEL, settings_at

from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.errors import InvalidInput
from cpersona.memory import Memory

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def _moved_in_then_exported(tmp_path: Path, version: str) -> tuple[Path, list[dict[str, object]]]:
    """Our database holding the original's export of ``version``, exported again in its format."""
    (tmp_path / "db").mkdir()
    with Memory(
        settings_at(tmp_path / "db" / "memory.db"), backend=NoEmbeddings(), start_background=False
    ) as mem:
        mem.import_memories(str(FIXTURES / f"original-{version}.jsonl"), confined=False)
        mem.store("alice", "a note written after the move", project_id="garden")
        out = tmp_path / "back.jsonl"
        result = mem.export_memories(
            None, str(out), include_embeddings=True, confined=False, export_format="cpersona-1.0"
        )
    # 2.6's declarations came in as links; its 1.0 format has no line for them: counted, not written.
    links = {"not_written_links": 3} if version.startswith("2.6") else {}
    assert result["counts"] == {"memories": 25, "episodes": 3, "profiles": 2} | links
    return out, [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def test_the_export_has_the_fields_of_the_original_s_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EMBEDDING_MODEL", MINILM_LABEL)
    _, ours = _moved_in_then_exported(tmp_path, "2.5.12")
    theirs = [
        json.loads(line)
        for line in (FIXTURES / "original-2.5.12.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert ours[0]["version"] == "cpersona-export/1.0" == theirs[0]["version"]
    assert set(ours[0]) == set(theirs[0]) - {"exported_at"} | {"exported_at"}
    assert (ours[0]["memory_count"], ours[0]["episode_count"], ours[0]["profile_count"]) == (25, 3, 2)
    for kind in ("memory", "episode", "profile"):
        mine = [o for o in ours if o["_type"] == kind]
        original = [o for o in theirs if o["_type"] == kind]
        # 1.0 plus the vector's model label, which 2.6 reads (its 1.1 files carry it) and 2.5 ignores.
        extra = {"embedding_model"} if kind != "profile" else set()
        assert set().union(*map(set, mine)) == set().union(*map(set, original)) | extra, kind
    contents = {o["content"] for o in ours if o["_type"] == "memory"}
    assert contents >= {o["content"] for o in theirs if o["_type"] == "memory"}
    keywords = {o["summary"]: o["keywords"] for o in ours if o["_type"] == "episode"}
    assert keywords == {o["summary"]: o["keywords"] for o in theirs if o["_type"] == "episode"}
    vectors = {
        o["content"]: o["embedding_b64"] for o in ours if o["_type"] == "memory" and "embedding_b64" in o
    }
    assert vectors == {o["content"]: o["embedding_b64"] for o in theirs if o["_type"] == "memory"}


def test_our_reader_reads_what_we_write_in_the_original_s_format(tmp_path: Path) -> None:
    out, _ = _moved_in_then_exported(tmp_path, "2.6.14")
    (tmp_path / "again").mkdir()
    with Memory(
        settings_at(tmp_path / "again" / "memory.db"), backend=NoEmbeddings(), start_background=False
    ) as mem:
        result = mem.import_memories(str(out), confined=False)
        assert result["error_count"] == 0
        assert mem.stats()["counts"] == {"memories": 25, "episodes": 3, "profiles": 2}


def test_an_unknown_export_format_is_refused(tmp_path: Path) -> None:
    (tmp_path / "db").mkdir()
    with (
        Memory(
            settings_at(tmp_path / "db" / "memory.db"), backend=NoEmbeddings(), start_background=False
        ) as mem,
        pytest.raises(InvalidInput, match="export_format must be one of cpersona, cpersona-1.0"),
    ):
        mem.export_memories(None, str(tmp_path / "x.jsonl"), confined=False, export_format="cpersona-2")
    assert not (tmp_path / "x.jsonl").exists()


@pytest.mark.slow
@pytest.mark.parametrize("version", ["2.5.12", "2.6.14"])
def test_the_original_imports_our_export_with_equal_counts(tmp_path: Path, version: str) -> None:
    out, _ = _moved_in_then_exported(tmp_path, "2.6.14")
    sys.path.insert(0, str(SCRIPTS))
    try:
        from original_cpersona import ensure_venv, import_with_original
    finally:
        sys.path.remove(str(SCRIPTS))
    venvs = Path(
        os.environ.get("CPERSONA_ORIGINAL_VENVS", Path(tempfile.gettempdir()) / "cpersona-original-venvs")
    )
    venvs.mkdir(parents=True, exist_ok=True)
    python = ensure_venv(venvs, version)
    assert subprocess.run([str(python), "-c", "import cpersona"], check=False).returncode == 0
    back = import_with_original(python, out, tmp_path)
    assert back["counts"] == {"memories": 25, "episodes": 3, "profiles": 2}, back["result"]
