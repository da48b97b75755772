"""Concurrent writers on one file: no lost writes, no "database is locked", dedup holds."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from cpersona.config import Settings
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.memory import Memory

WRITER = textwrap.dedent(
    """
    import sys
    from cpersona.config import Settings
    from cpersona.embed.runtime.none_backend import NoEmbeddings
    from cpersona.memory import Memory

    path, worker, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with Memory(Settings(db_path=path, embedding_mode="none"), backend=NoEmbeddings()) as mem:
        for i in range(count):
            out = mem.store("shared", f"worker {worker} note {i}", msg_id=f"{worker}-{i}")
            assert out["result"] == "stored", out
            # every worker also races on the same msg_id and content: exactly one may win
            mem.store("shared", "contended content", msg_id="contended")
            mem.recall("shared", f"note {i}", limit=3)
    print("done")
    """
)


def test_threads_in_one_process_lose_nothing(settings: Settings) -> None:
    errors: list[BaseException] = []
    with Memory(settings, backend=NoEmbeddings()) as mem:

        def work(worker: int) -> None:
            try:
                for i in range(60):
                    assert mem.store("t", f"thread {worker} item {i}")["result"] == "stored"
                    mem.store("t", "same for everyone")
                    mem.recall("t", f"item {i}", limit=5)
            except BaseException as exc:  # surfaced below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert mem.list_memories("t")["total"] == 4 * 60 + 1


@pytest.mark.slow
def test_processes_on_one_file_lose_nothing_and_see_each_other(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    with Memory(Settings(db_path=db, embedding_mode="none"), backend=NoEmbeddings()) as watcher:
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", WRITER, str(db), str(w), "80"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for w in range(3)
        ]
        outputs = [p.communicate(timeout=240) for p in procs]
        for proc, (out, err) in zip(procs, outputs, strict=True):
            assert proc.returncode == 0, err
            assert "database is locked" not in err
            assert out.strip() == "done"
        # the long-lived reader sees every other process's rows on its next recall
        assert watcher.list_memories("shared")["total"] == 3 * 80 + 1
        assert watcher.recall("shared", "worker 2 note 79", limit=100)["count"] > 0
        conn = watcher.storage.db.connection()
        assert conn.execute("SELECT COUNT(*) FROM memories WHERE msg_id = 'contended'").fetchone()[0] == 1
