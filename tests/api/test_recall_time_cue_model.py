"""A sure time cue reaches the vector channel (with the real MiniLM model, both engines): a row that
shares no word with the question, in a period that the plain ranking never reaches, is found."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pg_cluster import BOTH_ENGINES

from cpersona.config import Settings
from cpersona.memory import Memory

pytestmark = BOTH_ENGINES


@pytest.fixture
def mem(tmp_path: Path, new_db_url, minilm_backend) -> Iterator[Memory]:
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


def test_a_sure_cue_filters_the_vector_channel_too(mem: Memory) -> None:
    # 40 rows of 2024 say the question almost word for word: more than any channel's depth (30).
    for i in range(40):
        mem.store(
            "a",
            f"Gardening vegetables: tip number {i} for the allotment",
            timestamp=f"2024-06-{1 + i % 28:02d}",
        )
    spring = mem.store(
        "a", "We planted tomatoes and courgettes in the backyard", timestamp="2023-05-08T13:56:00Z"
    )["id"]
    mem.drain_queue()
    plain = mem.recall("a", "gardening vegetables", limit=10, record=False)
    assert spring not in [r["id"] for r in plain["results"]]
    out = mem.recall(
        "a",
        "gardening vegetables",
        limit=10,
        record=False,
        trace=True,
        time_cue={"phrase": "in May 2023", "certainty": "sure"},
    )
    assert [r["id"] for r in out["results"]] == [spring]
    assert out["results"][0]["match_reason"]["cosine"] > 0  # found by meaning: no shared word
    assert out["trace"]["channels"]["vector"]["hits"][0]["ref"] == f"mem:{spring}"
    assert out["trace"]["time_cue"]["certainty"] == "sure"
