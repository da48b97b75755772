"""Issue 17 defect 3: the worst single search term is bounded, and bounding it loses no row (both engines).

Costs are measured in benchmarks/reliability (part ``query``), never asserted here.
"""

from __future__ import annotations

from pg_cluster import BOTH_ENGINES

from cpersona.core.limits import MAX_QUERY_CHARS
from cpersona.memory import Memory

pytestmark = BOTH_ENGINES


def test_a_query_of_one_maximal_token_still_finds_the_row_holding_it(memory: Memory) -> None:
    long_row = memory.store("atk", "a" * 16000)["id"]
    other = memory.store("atk", "an ordinary memory about the garden")["id"]
    out = memory.recall("atk", "a" * MAX_QUERY_CHARS)
    ids = [r["id"] for r in out["results"]]
    assert ids[-1] == long_row and other not in ids
    # Found by trigram MATCH, not by the LIKE stand-in.
    assert out["search"]["keyword_channels"]["fts_memories"] == "fts"


def test_a_long_identifier_is_found_by_its_bounded_prefix(memory: Memory) -> None:
    token = "sha256-" + "0123456789abcdef" * 4  # one 71-character term
    wanted = memory.store("atk", f"the release artefact is {token}")["id"]
    memory.store("atk", "sha256-ffff is another artefact")
    for i in range(8):  # enough rows for bm25's idf to tell a rare term from a common one
        memory.store("atk", f"build {i} notes")
    out = memory.recall("atk", token)
    assert out["results"][-1]["id"] == wanted


def test_many_distinct_long_terms_are_answered(memory: Memory) -> None:
    memory.store("atk", " ".join("x" * 40 + str(i) for i in range(300)))
    query = " ".join("x" * 40 + str(i) for i in range(300))[:MAX_QUERY_CHARS]
    assert memory.recall("atk", query)["ok"] is True


def test_a_long_run_without_spaces_is_found_on_both_engines(memory: Memory) -> None:
    # PostgreSQL drops a lexeme of 2,047 bytes or more from a tsvector: a long CJK run (3 bytes a
    # character) or blob must still be indexed (postgres/postings.py cuts such runs into pieces).
    run = "".join("東京大阪名古屋横浜神戸京都福岡札幌仙台広島"[i % 20] for i in range(3000))
    wanted = memory.store("atk", run + "ZZ_MARKER")["id"]
    memory.store("atk", "an ordinary memory about the garden")
    out = memory.recall("atk", "ZZ_MARKER")
    assert out["results"] and out["results"][-1]["id"] == wanted
    middle = run[1201:1213]
    out = memory.recall("atk", middle)
    assert out["results"] and out["results"][-1]["id"] == wanted
