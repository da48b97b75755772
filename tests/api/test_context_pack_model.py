"""reconstruct with the real MiniLM model on both engines: a question that shares few words with
the stored facts still gets the current decision, what it replaced and what links to it, and the
pack embeds only the query (recall's own embedding)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pg_cluster import BOTH_ENGINES

from cpersona.config import Settings
from cpersona.memory import Memory
from tests.test_result_types import assert_shape

pytestmark = BOTH_ENGINES


@pytest.fixture
def mem(tmp_path: Path, new_db_url: Any, minilm_backend: Any) -> Iterator[Memory]:
    settings = Settings(
        db_path=tmp_path / "m.db",
        db_url=new_db_url(),
        embedding_mode="onnx",
        embedding_model="all-minilm-l6-v2",
        update_check=False,
        auto_fetch_model=False,
        auto_calibrate=False,
    )
    with Memory(settings, backend=minilm_backend) as memory:
        assert memory.wait_until_ready(60)
        yield memory


def test_a_paraphrased_question_gets_the_decision_its_history_and_its_links(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    def store(text: str, **kw: Any) -> str:
        stored = mem.store("a", text, **kw)
        assert stored["embedded"] is True  # nothing left for the back-fill to embed meanwhile
        return str(stored["ref"])

    old = store("We will host the web shop's data in PostgreSQL on a rented server.")
    new = store("Change of plan: the web shop's data lives in one SQLite file.", supersedes=[old])
    why = store(
        "The rented server cost too much each month.", associations=[{"relation": "reason_for", "to": new}]
    )
    for text in ("The cat prefers tuna.", "Train to Kyoto leaves at nine.", "Buy oat milk."):
        store(text)
    backend = mem.embeddings.backend
    calls: list[str] = []
    query, documents = backend.embed_query, backend.embed_documents
    monkeypatch.setattr(backend, "embed_query", lambda text: calls.append("query") or query(text))
    monkeypatch.setattr(
        backend, "embed_documents", lambda texts: calls.append("documents") or documents(texts)
    )
    pack = mem.reconstruct("a", "where is the store's database kept?", limit=1)
    assert_shape("reconstruct", pack)
    assert [(i["ref"], i["role"]) for i in pack["items"]] == [
        (why, "linked"),
        (old, "replaced"),
        (new, "match"),
    ]
    assert pack["items"][-1]["score"] > 0
    assert calls == ["query"]  # recall's query embedding and nothing else
    by_ref = mem.reconstruct("a", refs=[old])  # refs only: no recall, no model at all
    assert [(i["ref"], i["role"]) for i in by_ref["items"]] == [(new, "current"), (old, "given")]
    assert calls == ["query"]
