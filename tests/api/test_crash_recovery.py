"""A process killed (SIGKILL) in the middle of back-filling vectors loses nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from cpersona.config import Settings
from cpersona.memory import Memory
from cpersona.storage.vectors import from_blob

pytestmark = pytest.mark.slow

DRAINER = textwrap.dedent(
    """
    import sys, time
    from cpersona.config import Settings
    from cpersona.memory import Memory

    settings = Settings(db_path=sys.argv[1], embedding_mode="onnx", models_dir=sys.argv[2],
                        embedding_model="all-minilm-l6-v2", embed_batch_size=4)
    mem = Memory(settings, start_background=False)
    assert mem.embeddings.try_load()
    while mem.worker.drain_once(limit=4):
        print(mem.get_queue_status()["depth"], flush=True)
    print("drained", flush=True)
    time.sleep(60)
    """
)


def test_sigkill_mid_back_fill_resumes_and_every_vector_matches_its_text(
    tmp_path: Path, minilm_models_dir: Path
) -> None:
    db = tmp_path / "crash.db"
    settings = Settings(
        db_path=db, embedding_mode="onnx", models_dir=minilm_models_dir, embedding_model="all-minilm-l6-v2"
    )
    with Memory(settings, start_background=False) as mem:  # model never loaded: rows wait in the queue
        for i in range(120):
            mem.store("a", f"memory number {i}: the garden needs water on day {i}")
        assert mem.get_queue_status()["depth"] == 120

    proc = subprocess.Popen(
        [sys.executable, "-c", DRAINER, str(db), str(minilm_models_dir)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.strip().isdigit() and 0 < int(line) < 100:
                break  # some done, most still queued
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)

    with Memory(settings, start_background=False) as mem:
        left = mem.get_queue_status()["depth"]
        assert 0 < left < 120
        assert mem.embeddings.try_load()
        mem.drain_queue()
        assert mem.get_queue_status()["depth"] == 0
        rows = (
            mem.storage.db.connection()
            .execute("SELECT content, embedding FROM memories ORDER BY id")
            .fetchall()
        )
        assert all(r[1] is not None for r in rows)
        expected = mem.embeddings.backend.embed_documents([r[0] for r in rows])
        stored = np.stack([from_blob(r[1]) for r in rows])
        assert np.allclose(stored, expected, atol=1e-5)
