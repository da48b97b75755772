"""``CPERSONA_EMBED_QUERY_OVERLAP``: recall with the query embedding on its own thread beside the keyword
channels answers what recall embedding first answers, on both engines; ``auto`` overlaps on PostgreSQL
only; the recall's own failed embedding is in its advisory; no thread outlives ``Memory.close``."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from pg_cluster import ENGINES_AND_EXACT

from cpersona.config import Settings
from cpersona.embed.runtime.base import FaultKind
from cpersona.embed.runtime.embed_server import start_embed_server
from cpersona.embed.runtime.http_backend import HttpBackend
from cpersona.embed.runtime.onnx_backend import OnnxBackend
from cpersona.memory import Memory

pytestmark = pytest.mark.slow

FACTS = (
    "The cat sits on the mat",
    "Quarterly revenue grew by eight percent",
    "The train to Osaka leaves at noon",
    "My sister adopted a kitten last spring",
    "We moved the meeting with the Osaka office to Friday",
    "Revenue from the cat food line doubled",
)
QUERIES = ("A kitten is resting on a rug", "when does the train leave", "revenue", "Osaka", "zzz unmatched")


def _query_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("cpersona-query-vector")]


@ENGINES_AND_EXACT
def test_overlapped_recall_answers_what_sequential_recall_answers(
    tmp_path: Path, minilm_models_dir: Path, db_url: str | None, pg_vector_index: str
) -> None:
    settings = Settings(
        db_path=tmp_path / "memory.db",
        db_url=db_url,
        pg_vector_index=pg_vector_index,
        embedding_mode="onnx",
        models_dir=minilm_models_dir,
        embedding_model="all-minilm-l6-v2",
        model_sharing="off",  # settling below must act on this process's own model, never a host's
    )
    with Memory(settings) as mem:
        assert mem.wait_until_ready(60)
        mem.embeddings.settle_query_kernel()  # both orders embed their queries with one kernel
        for fact in FACTS:
            mem.store("a", fact)
        assert settings.embed_query_overlap is None  # auto: overlapped on PostgreSQL only
        assert mem.recall("a", QUERIES[0], record=False)["search"]["vector"] is True
        assert bool(_query_threads()) is (db_url is not None)
        orders = {
            "sequential": settings.with_overrides(embed_query_overlap=False),
            "overlapped": settings.with_overrides(embed_query_overlap=True),
        }
        for query in QUERIES:
            answers, contexts = {}, {}
            for name, order in orders.items():
                mem.recaller.settings = order
                answers[name] = mem.recall("a", query, record=False, trace=True)
                contexts[name] = mem.recall_with_context(
                    "a", query, [{"role": "user", "content": FACTS[0]}], record=False
                )
            assert answers["overlapped"] == answers["sequential"], query
            trace = answers["overlapped"]["trace"]
            assert list(trace["channels"]) == list(answers["sequential"]["trace"]["channels"])
            assert contexts["overlapped"] == contexts["sequential"], query
        assert _query_threads()  # the overlapped recalls embedded on a thread of their own
        assert mem.recall("a", "kitten")["search"]["vector"] is True
        assert mem.recall("a", "kitten", limit=0)["count"] == 0
        assert mem.recall("a", "")["search"]["vector"] is False
    assert not _query_threads()


def test_the_recalls_own_failed_embedding_is_in_its_advisory(
    tmp_path: Path, minilm_backend: OnnxBackend
) -> None:
    server, _thread = start_embed_server(minilm_backend)
    backend = HttpBackend(server.url + "/embed", timeout=5)
    settings = Settings(
        db_path=tmp_path / "m.db",
        embedding_mode="http",
        embedding_url=server.url + "/embed",
        embed_query_overlap=True,
    )
    with Memory(settings, backend=backend, start_background=False) as mem:
        assert mem.embeddings.try_load()
        assert mem.store("a", "served over http")["embedded"] is True
        server.shutdown()
        server.server_close()
        assert mem.store("a", "first failure")["embedded"] is False  # one error: not yet a fault
        assert "advisory" not in mem.recall("a", "kitten", limit=0)
        out = mem.recall("a", "failure")  # its own embedding is the second error: the fault
        assert out["advisory"]["kind"] == FaultKind.INFERENCE_ERROR
        assert out["search"]["vector"] is False and out["count"] == 1
        assert out["search"]["keyword_channels"]
    assert not _query_threads()


def test_an_exception_of_the_query_embedding_surfaces_from_recall(tmp_path: Path) -> None:
    boom = RuntimeError("query embedding broke")

    def broken(text: str, content: str | None) -> None:
        raise boom

    settings = Settings(db_path=tmp_path / "m.db", embed_query_overlap=True)
    with Memory(settings, start_background=False) as mem:
        mem.store("a", "a row the keyword channels find")
        mem.recaller._vector_query = broken  # type: ignore[method-assign]
        mem.embeddings._ready.set()  # so recall starts an embedding on the thread
        with pytest.raises(RuntimeError) as raised:
            mem.recall("a", "row")
        assert raised.value is boom
        assert mem.recall("a", "row", limit=0)["count"] == 0  # no embedding for limit 0
    assert not _query_threads()
