"""rsf reads each channel deeper than the limit (SQLite: the ranking leans on bm25's term-frequency scores).

Kept apart from test_recall_order.py, which runs on both engines: PostgreSQL's trigram channel ranks by
idf without a term-frequency or length term (docs/decisions.md), so this corpus's twelve distinct
keyword scores exist only on SQLite's FTS5.
"""

from __future__ import annotations

from pathlib import Path

from cpersona.config import Settings
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.memory import Memory


def _ranked_corpus(path: Path, mode: str) -> Memory:
    settings = Settings(db_path=path, embedding_mode="none", recall_mode=mode, recent_recall_penalty=1.0)
    mem = Memory(settings, backend=NoEmbeddings())
    # bm25 falls as the word gets rarer in a longer row: twelve distinct keyword scores.
    for i in range(12):
        mem.store("a", "kiwi " * (12 - i) + "filler " * (3 * i) + f"row {i}")
    return mem


def test_rsf_reads_each_channel_deeper_than_limit(tmp_path: Path) -> None:
    # With depth = limit = 2, the second row of each channel would be its min-max floor (score 0);
    # rsf reads 30 deep, so the floor is the weakest of all twelve and the second row keeps a score.
    rsf = _ranked_corpus(tmp_path / "rsf.db", "rsf")
    two = rsf.recall("a", "kiwi", limit=2)["results"]
    assert len(two) == 2 and two[-1]["content"].startswith("kiwi " * 12)
    assert 0.0 < two[0]["match_reason"]["rsf"] < two[-1]["match_reason"]["rsf"]
    full = rsf.recall("a", "kiwi", limit=12)["results"]
    assert [r["id"] for r in full[-2:]] == [r["id"] for r in two]  # deeper lists, same head
    rsf.close()
    rrf = _ranked_corpus(tmp_path / "rrf.db", "rrf")
    assert len(rrf.recall("a", "kiwi", limit=2)["results"]) == 2
    rrf.close()
