"""Every statement of a PostgreSQL recall at 100k rows reads index entries, never the agent's rows one by one.

A generated corpus of 100,000 memories (90,000 of one agent) and 2,000 episodes, loaded with one
server-side INSERT (the triggers post it as they post a COPY): dated turns of four speakers (each
name in a quarter of the rows), words drawn log-uniformly from 5,000 (the commonest in about half
the rows, the rarest in a few dozen) and a 16-d vector. Questions mix common names, dates, rare
and absent words, so the row budget's three paths all run: bm25 of the rare terms, the newest
rows of dropped terms, and the newest matches when every term is common.

Each statement the recall pipeline sends is run again under ``EXPLAIN (ANALYZE, BUFFERS)``. The
test fails on a sequential scan of a table holding the agent's rows (memories, episodes, their
postings), on any ILIKE (the per-row pattern match the postings replaced), and on a scan of those
tables that reads more than 5% of the agent's rows. (A question made only of words shorter than
3 characters has no trigram term: its LIKE pass reads the rows in scope on both engines, as
docs/retrieval.md#retrievers describes; no question here is one.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import psycopg
import pytest
from pg_cluster import PgCluster
from psycopg import sql

from cpersona.config import Settings
from cpersona.retrieval.pipeline import RecallPipeline, RecallRequest
from cpersona.storage.interface import VectorQuery
from cpersona.storage.postgres import sql as pg_sql
from cpersona.storage.postgres.store import PgStore
from cpersona.storage.scope import Scope
from cpersona.text import utc_now

pytestmark = pytest.mark.slow

ROWS, AGENT_ROWS, EPISODES = 100_000, 90_000, 2_000
MODEL, DIM = "test-16", 16
AGENT_TABLES = {"memories", "episodes", "memory_tokens", "episode_tokens"}
MAX_ROWS_READ = AGENT_ROWS // 20

_WORDS = "'w' || floor(exp(random() * ln(5000)))::int"
_LOAD = f"""
INSERT INTO memories(agent_id, project_id, channel, msg_id, content, timestamp, created_at,
                     embedding, embedding_model, embedding_dim)
SELECT CASE WHEN g % 10 = 0 THEN 'other' ELSE 'bench' END, '', '', '',
       '[' || (1 + g % 28) || ' May 2023] ' || (ARRAY['Caroline', 'Melanie', 'Jon', 'Gina'])[1 + g % 4] || ': '
       || (SELECT string_agg({_WORDS}, ' ') FROM generate_series(1, 8 + g % 5) WHERE g > 0) || ' #' || g,
       '2023-05-01T00:00:00.000000Z', '2023-05-01T00:00:00.000000Z',
       (SELECT array_agg(random() - 0.5)::vector FROM generate_series(1, {DIM}) WHERE g > 0), '{MODEL}', {DIM}
FROM generate_series(1, {ROWS}) g;
INSERT INTO episodes(agent_id, project_id, channel, summary, keywords, created_at, embedding, embedding_model,
                     embedding_dim)
SELECT 'bench', '', '', 'Session ' || g || ': ' || (ARRAY['Caroline', 'Melanie'])[1 + g % 2] || ' and '
       || (SELECT string_agg({_WORDS}, ' ') FROM generate_series(1, 6) WHERE g > 0),
       (SELECT string_agg({_WORDS}, E'\\n') FROM generate_series(1, 3) WHERE g > 0),
       '2023-05-' || lpad((1 + g % 28)::text, 2, '0') || 'T00:00:00.000000Z',
       (SELECT array_agg(random() - 0.5)::vector FROM generate_series(1, {DIM}) WHERE g > 0), '{MODEL}', {DIM}
FROM generate_series(1, {EPISODES}) g
"""

QUESTIONS = [
    "What did Caroline say about w4321?",  # a common name, a rare word: bm25 + the newest of the name
    "When did Melanie and Jon talk about w3 and w7?",  # only common terms: the newest matches
    "w2500 w3100 w4100",  # rare words only
    "What happened in May 2023?",  # common date words
    "Gina",
    "w10 w11 w13",  # each in thousands of rows, and inside a hundred longer tokens
    "w12 w120 with Jon",  # a short term inside many vocabulary tokens
    "Did Caroline ever mention zebras or the 東京タワー?",  # absent words
    "What does Melanie think about w250, w1800 and w4999 in May?",
]


@pytest.fixture(scope="module")
def store(pg_cluster: PgCluster) -> Iterator[PgStore]:
    url = pg_cluster.create()
    PgStore(url).close()  # migrated
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT setseed(0.2)")
        for statement in _LOAD.split(";"):
            conn.execute(statement)
        conn.execute("VACUUM ANALYZE")  # as autovacuum would after a bulk load (index-only scans, statistics)
    pg = PgStore(url)
    yield pg
    pg.close()
    pg_cluster.drop(url)


class _Recorder:
    """Every statement the pipeline sends through ``Executor``, with its parameters."""

    def __init__(self) -> None:
        self.statements: list[tuple[Any, Any]] = []

    def wrap(self, method: Any) -> Any:
        def recorded(executor: Any, statement: Any, params: Any = ()) -> Any:
            self.statements.append((statement, params))
            return method(executor, statement, params)

        return recorded


def _nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


def _problems(plan: dict[str, Any]) -> list[str]:
    found = []
    for node in _nodes(plan):
        relation = node.get("Relation Name")
        text = json.dumps({k: v for k, v in node.items() if k != "Plans"})
        if "~~*" in text:
            found.append(f"ILIKE in {node['Node Type']} on {relation}")
        if relation not in AGENT_TABLES:
            continue
        if node["Node Type"] == "Seq Scan":
            found.append(f"Seq Scan on {relation}")
        read = node.get("Actual Rows", 0) * node.get("Actual Loops", 1) + node.get(
            "Rows Removed by Filter", 0
        )
        if read > MAX_ROWS_READ:
            found.append(f"{node['Node Type']} on {relation} read {read:.0f} rows")
    return found


def test_every_recall_statement_reads_index_entries_only(
    store: PgStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = _Recorder()
    for name in ("all", "one", "all_binary"):
        monkeypatch.setattr(pg_sql.Executor, name, recorder.wrap(getattr(pg_sql.Executor, name)))
    pipeline = RecallPipeline(Settings(recent_recall_penalty=1.0))
    rng = np.random.default_rng(1)
    for question in QUESTIONS:
        vector = rng.normal(size=DIM).astype(np.float32)
        request = RecallRequest(scope=Scope("bench"), query=question, limit=10)
        with store.read() as session:
            outcome = pipeline.run(
                session,
                request,
                query_vector=VectorQuery(vector / np.linalg.norm(vector), MODEL, DIM),
                now=utc_now(),
            )
        assert outcome.vector_used and outcome.rows, question
    monkeypatch.undo()
    assert len(recorder.statements) >= 6 * len(QUESTIONS)

    report = []
    with store.read() as session:
        conn = session.ex.conn
        assert conn is not None
        for statement, params in recorder.statements:
            explain = sql.SQL("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ") + (
                statement if isinstance(statement, sql.Composable) else sql.SQL(statement)
            )
            row = conn.execute(explain, params).fetchone()
            plan = (row["QUERY PLAN"] if isinstance(row, dict) else row[0])[0]["Plan"]
            problems = _problems(plan)
            if problems:
                text = statement.as_string(conn) if isinstance(statement, sql.Composable) else statement
                report.append(f"{text[:160]}...: {'; '.join(problems)}")
    assert report == [], "\n".join(report)
