"""Issue 17 defect 9 through the Python API: long operations stop at a batch boundary when their
``Work`` is cancelled, keep only whole batches (or nothing, for the all-or-nothing ones), say how far
they got, and report progress on the way (both engines where storage does the work)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pg_cluster import BOTH_ENGINES

from cpersona.core.work import Work
from cpersona.errors import Cancelled
from cpersona.memory import Memory
from cpersona.portability import importer
from cpersona.portability import merge as merge_module

pytestmark = BOTH_ENGINES


def write_export(path: Path, agent: str, n: int) -> Path:
    """An export file of ``n`` memories (header counts included), written without a database."""
    head = {
        "type": "header",
        "format": "cpersona-export",
        "version": 1,
        "exported_at": "2026-01-01T00:00:00Z",
        "source_schema_version": 1,
        "agent_id": agent,
        "include_embeddings": False,
        "embedding_model": None,
        "embedding_dim": None,
        "counts": {"memories": n, "episodes": 0, "profiles": 0},
    }
    with path.open("w", encoding="utf-8") as out:
        out.write(json.dumps(head) + "\n")
        for i in range(n):
            out.write(
                json.dumps({"type": "memory", "agent_id": agent, "content": f"imported fact {i}"}) + "\n"
            )
    return path


class CancelAfter:
    """A progress sink that cancels its ``Work`` after ``reports`` reports, recording every report."""

    def __init__(self, reports: int) -> None:
        self.reports = reports
        self.seen: list[tuple[float, float | None, str | None]] = []
        self.work = Work(on_progress=self)

    def __call__(self, done: float, total: float | None, message: str | None) -> None:
        self.seen.append((done, total, message))
        if len(self.seen) >= self.reports:
            self.work.cancel()


def total_rows(memory: Memory, agent: str) -> int:
    return int(memory.list_memories(agent, limit=1)["total"])


def test_a_cancelled_import_keeps_whole_batches_and_says_how_many(memory: Memory, tmp_path: Path) -> None:
    source = write_export(tmp_path / "big.jsonl", "big", 3 * importer.BATCH + 7)
    sink = CancelAfter(reports=2)
    with pytest.raises(Cancelled) as caught:
        memory.import_memories(str(source), confined=False, work=sink.work)
    details = caught.value.details()
    assert details["cancelled"] is True
    assert details["counts"]["memories"]["inserted"] == 2 * importer.BATCH  # two batches, then it stopped
    assert details["progress"] == {
        "done": 2 * importer.BATCH,
        "total": 3 * importer.BATCH + 7,
        "unit": "records",
        "done_when_cancelled": 2 * importer.BATCH,
    }
    assert total_rows(memory, "big") == 2 * importer.BATCH  # whole batches only, nothing half-done
    assert "cancelled after 1,000 of 1,507 records" in str(caught.value)
    assert [done for done, _, _ in sink.seen] == [importer.BATCH, 2 * importer.BATCH]
    # Importing the file again finishes the job: what is there is skipped.
    again = memory.import_memories(str(source), confined=False)
    assert again["counts"]["memories"] == {"inserted": importer.BATCH + 7, "duplicates": 2 * importer.BATCH}
    assert total_rows(memory, "big") == 3 * importer.BATCH + 7


def test_progress_without_a_cancel_reaches_the_end_and_a_failing_sink_is_harmless(
    memory: Memory, tmp_path: Path
) -> None:
    source = write_export(tmp_path / "big.jsonl", "big", 2 * importer.BATCH + 1)
    reports: list[tuple[float, float | None, str | None]] = []

    def sink(done: float, total: float | None, message: str | None) -> None:
        reports.append((done, total, message))
        raise OSError("the client went away")

    out = memory.import_memories(str(source), confined=False, work=Work(on_progress=sink))
    assert out["counts"]["memories"]["inserted"] == 2 * importer.BATCH + 1
    assert [r[0] for r in reports] == [importer.BATCH, 2 * importer.BATCH, 2 * importer.BATCH + 1]
    assert all(r[1] == 2 * importer.BATCH + 1 for r in reports)
    assert "records imported" in str(reports[-1][2])


def test_a_cancelled_export_writes_no_file_and_keeps_the_old_one(memory: Memory, tmp_path: Path) -> None:
    for i in range(1200):
        memory.store("exp", f"fact number {i}")
    target = tmp_path / "exports" / "exp.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("the previous backup\n", encoding="utf-8")
    sink = CancelAfter(reports=1)
    with pytest.raises(Cancelled) as caught:
        memory.export_memories("exp", str(target), overwrite=True, confined=False, work=sink.work)
    assert caught.value.details()["progress"]["done"] == 500
    assert "nothing was written" in str(caught.value)
    assert target.read_text(encoding="utf-8") == "the previous backup\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["exp.jsonl"]  # no .partial left behind
    done = memory.export_memories("exp", str(target), overwrite=True, confined=False, work=Work())
    assert done["counts"]["memories"] == 1200


def test_a_cancelled_merge_rolls_back_whole(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(merge_module, "BATCH", 10)  # 25 source rows: the cancel lands mid-merge
    for i in range(25):
        memory.store("src", f"source fact {i}")
    memory.store("dst", "target fact")
    sink = CancelAfter(reports=1)
    with pytest.raises(Cancelled) as caught:
        memory.merge_memories("src", "dst", mode="move", work=sink.work)
    assert caught.value.details()["progress"]["unit"] == "source rows"
    assert "rolled back" in str(caught.value)
    assert total_rows(memory, "src") == 25 and total_rows(memory, "dst") == 1  # nothing moved
    out = memory.merge_memories("src", "dst", mode="move", work=Work())
    assert out["counts"]["memories"]["moved"] == 25 and total_rows(memory, "src") == 0


def test_a_cancelled_health_check_stops_between_checks(memory: Memory) -> None:
    memory.store("h", "a fact")
    sink = CancelAfter(reports=1)
    with pytest.raises(Cancelled) as caught:
        memory.check_health(fix=True, work=sink.work)
    details = caught.value.details()
    assert len(details["checks_run"]) == 1 and details["progress"]["unit"] == "checks"
    assert details["progress"]["total"] == len(memory.check_health()["checks_run"])


def test_without_a_work_nothing_changes(memory: Memory, tmp_path: Path) -> None:
    source = write_export(tmp_path / "small.jsonl", "s", 3)
    assert memory.import_memories(str(source), confined=False)["counts"]["memories"]["inserted"] == 3
    assert memory.merge_memories("s", "t")["counts"]["memories"]["copied"] == 3
