"""Superseded rows leave the vector channel's candidate pool (the real MiniLM model, both engines):
40 superseded rows that say the question almost word for word do not crowd out the current one,
which shares no word with it, and no channel of the trace holds a superseded row."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pg_cluster import BOTH_ENGINES

from cpersona.config import Settings
from cpersona.memory import Memory

pytestmark = BOTH_ENGINES


@pytest.fixture
def mem(tmp_path: Path, new_db_url: Any, minilm_backend: Any) -> Iterator[Memory]:
    settings = Settings(
        db_path=tmp_path / "m.db",
        db_url=new_db_url(),
        embedding_mode="onnx",
        embedding_model="all-minilm-l6-v2",
        recent_recall_penalty=1.0,
        update_check=False,
        auto_fetch_model=False,
        auto_calibrate=False,
    )
    with Memory(settings, backend=minilm_backend) as memory:
        assert memory.wait_until_ready(60)
        yield memory


def test_superseded_rows_leave_the_vector_pool(mem: Memory) -> None:
    old = [mem.store("a", f"Gardening vegetables: tip number {i} for the allotment")["id"] for i in range(40)]
    head = mem.store("a", "We planted tomatoes and courgettes in the backyard", supersedes=old)["ref"]
    out = mem.recall("a", "gardening vegetables tips for the allotment", limit=5, trace=True)
    assert head in [r["ref"] for r in out["results"]]
    hidden = {f"mem:{i}" for i in old}
    for channel in out["trace"]["channels"].values():
        assert not hidden.intersection(h["ref"] for h in channel["hits"])
    assert not hidden.intersection(r["ref"] for r in out["results"])
    everything = mem.recall(
        "a", "gardening vegetables tips for the allotment", limit=5, include_superseded=True
    )
    assert all(r["superseded_by"] == head for r in everything["results"] if r["ref"] != head)
