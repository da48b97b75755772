"""PostgreSQL's keyword channels rank like SQLite's FTS5 bm25: same corpus, same queries, same order.

One agent's rows only: FTS5 counts N and document frequencies over the whole table, PostgreSQL
over the scope (docs/decisions.md), so rows of other agents could shift close ranks.

The fusion above the storage interface reads these scores (rsf min-max normalises them), so
the two engines must agree on the ranking, not only on which rows match (docs/decisions.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pg_cluster import PG_VECTOR_INDEX, PgCluster

from cpersona.config import Settings
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.memory import Memory
from cpersona.retrieval.match_query import query_terms
from cpersona.storage.scope import Scope

pytestmark = pytest.mark.slow

CORPUS = [
    "Caroline went running in the park every morning before work",
    "Melanie runs a small pottery studio and paints on weekends",
    "The quarterly report on the pottery studio was late",
    "Caroline painted a sunset; painting calms her down",
    "A long note about the garden: tomatoes, basil, running water for the garden beds, and a new garden path",
    "Run the migration before the release, then run the backup",
    "Melanie and Caroline talked about adoption agencies and counselling",
    "Pottery class moved to Tuesday",
    "She ran a charity race for the LGBTQ support group",
    "The garden",
    "Painting classes for kids start in June at the community centre",
    "Caroline's research on adoption agencies took months of reading and many phone calls",
]
QUERIES = [
    "running in the park",
    "pottery studio",
    "painting",
    "garden",
    "adoption agencies research",
    "What did Caroline paint?",
    "run",
]


@pytest.fixture(scope="module")
def engines(pg_cluster: PgCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Memory]]:
    """The same rows, in the same order, in a SQLite file and in a PostgreSQL database."""
    tmp = tmp_path_factory.mktemp("kw")
    url = pg_cluster.create()
    mems: dict[str, Memory] = {}
    for name, db_url in (("sqlite", None), ("postgres", url)):
        settings = Settings(
            db_path=tmp / f"{name}.db",
            db_url=db_url,
            pg_vector_index=PG_VECTOR_INDEX,
            embedding_mode="none",
            models_dir=tmp / "models",
            update_check=False,
            auto_fetch_model=False,
            operating_context_path=Path(tmp / "oc.toml"),
        )
        mem = Memory(settings, backend=NoEmbeddings())
        mem.wait_until_ready(5)
        for text in CORPUS:
            mem.store("a", text)
        mems[name] = mem
    yield mems
    for mem in mems.values():
        mem.close()
    pg_cluster.drop(url)


def _ranked(mem: Memory, channel: str, query: str) -> list[str]:
    terms = query_terms(query)
    with mem.storage.read() as s:
        search = s.keyword.memories if channel == "trigram" else s.keyword.memories_words
        hits = search(terms, Scope("a"), 20)
    texts = {r["id"]: r["content"] for r in mem.list_memories("a", limit=100)["items"]}
    return [texts[row_id] for row_id, _ in hits.hits]


@pytest.mark.parametrize("channel", ["trigram", "words"])
@pytest.mark.parametrize("query", QUERIES)
def test_both_engines_rank_the_same_rows_in_the_same_order(
    engines: dict[str, Memory], channel: str, query: str
) -> None:
    sqlite, postgres = (_ranked(engines[name], channel, query) for name in ("sqlite", "postgres"))
    assert sqlite, "every query matches something here"
    assert postgres == sqlite


def test_the_word_channel_stems_like_porter(engines: dict[str, Memory]) -> None:
    # Another agent's row matches too; PostgreSQL counts N and df within the scope, so "a" ranks as before.
    engines["postgres"].store("b", "running pottery garden painting adoption for another agent")
    found = _ranked(engines["postgres"], "words", "runs")
    assert CORPUS[0] in found and CORPUS[1] in found  # running, runs
    assert not any("another agent" in text for text in found)  # scope holds


def test_both_engines_spend_the_same_row_budget(engines: dict[str, Memory]) -> None:
    """Past the row budget, both engines drop the common term and rank the rare one's rows first; a
    question of only the common term gets the newest matches (storage/keyword_prune.py)."""
    from cpersona.storage.keyword_budget import ROW_BUDGET

    for mem in engines.values():
        for i in range(ROW_BUDGET + 20):
            mem.store("budget", f"weather report {i}: sunshine over the harbour")
        for i in range(3):
            mem.store("budget", f"weather report {i}: a zeppelin over the harbour")

    def ranked(mem: Memory, channel: str, query: str) -> list[str]:
        with mem.storage.read() as s:
            search = s.keyword.memories if channel == "trigram" else s.keyword.memories_words
            hits = search(query_terms(query), Scope("budget"), 10)
        wanted = {row_id for row_id, _ in hits.hits}
        texts = {
            r["id"]: r["content"]
            for r in mem.list_memories("budget", limit=1000)["items"]
            if r["id"] in wanted
        }
        return [texts[row_id] for row_id, _ in hits.hits]

    for channel in ("trigram", "words"):
        sqlite, postgres = (
            ranked(engines[name], channel, "zeppelin harbour") for name in ("sqlite", "postgres")
        )
        assert len(sqlite) == len(postgres) == 10
        assert all("zeppelin" in text for text in sqlite[:3]) and all(
            "zeppelin" in text for text in postgres[:3]
        )
        assert {t for t in sqlite[:3]} == {t for t in postgres[:3]}
        newest_sqlite, newest_pg = (
            ranked(engines[name], channel, "harbour") for name in ("sqlite", "postgres")
        )
        assert newest_sqlite == newest_pg and len(newest_pg) == 10
        assert all("zeppelin" in text for text in newest_pg[:3])  # the newest rows come first
