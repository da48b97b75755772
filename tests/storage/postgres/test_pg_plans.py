"""Every statement of a PostgreSQL recall at 10k and 100k rows reads index entries, never the agent's rows one by one.

A generated corpus of 100,000 memories (90,000 of one agent) and 2,000 episodes, loaded with one
server-side INSERT (the triggers post it as they post a COPY): dated turns of four speakers (each
name in a quarter of the rows), words drawn log-uniformly from 5,000 (the commonest in about half
the rows, the rarest in a few dozen) and a 16-d vector. Questions mix common names, dates, rare
and absent words, so the row budget's three paths all run: bm25 of the rare terms, the newest
rows of dropped terms, and the newest matches when every term is common.

Each statement the recall pipeline sends is run again under ``EXPLAIN (ANALYZE, BUFFERS)``, twice: with
its parameters (the plan PostgreSQL makes for these values) and as the generic plan a recall's snapshot
runs (``PgStore.recall_read``: prepared, planned once without the values, executed with them). The
test fails on a sequential scan of a table holding the agent's rows (memories, episodes, their
postings), on any ILIKE (the per-row pattern match the postings replaced), and on a scan of those
tables that reads more than 5% of the agent's rows. (A question made only of words shorter than
3 characters has no trigram term: its LIKE pass reads the rows in scope on both engines, as
docs/retrieval.md#retrievers describes; no question here is one.) It also fails on a join that
compares more row pairs than that (a nested loop planned on a guess of one row per side).

At 10k the same corpus (9,000 rows of the agent) is checked as a bulk load leaves it: no planner
statistics yet (autovacuum is off on its tables, so only CPersona's first search can give it
some). That is the state the 10k benchmark used to recall in: the planner then took
``superseded_by IS NOT NULL`` for 99.5% of the rows and read all of the agent's rows through the
scope index per recall, and joined the newest fill's postings with a nested loop of 100,000
comparisons (docs/history/decisions-rounds.md#postgresql-recall-at-10k). At 10k the bound is a third of the
agent's rows, 3,000 (the budget-bounded statements read up to ~2,500 postings there, and the
planner rightly scans the 200 episodes' few thousand postings sequentially; the two plans above
read 9,000 rows and compared 100,000 pairs).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import psycopg
import pytest
from pg_cluster import PgCluster
from psycopg import sql

from cpersona.config import Settings
from cpersona.core.text import utc_now
from cpersona.retrieval.pipeline import RecallPipeline, RecallRequest
from cpersona.storage.postgres import sql as pg_sql
from cpersona.storage.postgres.sql import PgVector
from cpersona.storage.postgres.statistics import RECALL_TABLES, tables_without_statistics
from cpersona.storage.postgres.store import PgStore
from cpersona.storage.scope import Scope
from cpersona.storage.values import VectorQuery

pytestmark = pytest.mark.slow

ROWS, AGENT_ROWS, EPISODES = 100_000, 90_000, 2_000
SMALL_ROWS, SMALL_EPISODES = 10_000, 200
MODEL, DIM = "test-16", 16
AGENT_TABLES = {"memories", "episodes", "memory_tokens", "episode_tokens"}
#: Read-bounded too: the vocabulary (a sequential scan of it per term is what an unmerged GIN pending list caused).
BOUNDED_TABLES = AGENT_TABLES | {"keyword_vocab"}
MAX_ROWS_READ = AGENT_ROWS // 20
SMALL_AGENT_ROWS = SMALL_ROWS * 9 // 10
SMALL_MAX_ROWS_READ = SMALL_AGENT_ROWS // 3

_WORDS = "'w' || floor(exp(random() * ln(5000)))::int"
_LOAD = f"""
INSERT INTO memories(agent_id, project_id, channel, msg_id, content, timestamp, created_at,
                     embedding, embedding_model, embedding_dim)
SELECT CASE WHEN g % 10 = 0 THEN 'other' ELSE 'bench' END, '', '', '',
       '[' || (1 + g % 28) || ' May 2023] ' || (ARRAY['Caroline', 'Melanie', 'Jon', 'Gina'])[1 + g % 4] || ': '
       || (SELECT string_agg({_WORDS}, ' ') FROM generate_series(1, 8 + g % 5) WHERE g > 0) || ' #' || g,
       '2023-05-01T00:00:00.000000Z', '2023-05-01T00:00:00.000000Z',
       (SELECT array_agg(random() - 0.5)::vector FROM generate_series(1, {DIM}) WHERE g > 0), '{MODEL}', {DIM}
FROM generate_series(1, {{rows}}) g;
INSERT INTO episodes(agent_id, project_id, channel, summary, keywords, created_at, embedding, embedding_model,
                     embedding_dim)
SELECT 'bench', '', '', 'Session ' || g || ': ' || (ARRAY['Caroline', 'Melanie'])[1 + g % 2] || ' and '
       || (SELECT string_agg({_WORDS}, ' ') FROM generate_series(1, 6) WHERE g > 0),
       (SELECT string_agg({_WORDS}, E'\\n') FROM generate_series(1, 3) WHERE g > 0),
       '2023-05-' || lpad((1 + g % 28)::text, 2, '0') || 'T00:00:00.000000Z',
       (SELECT array_agg(random() - 0.5)::vector FROM generate_series(1, {DIM}) WHERE g > 0), '{MODEL}', {DIM}
FROM generate_series(1, {{episodes}}) g
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


def _load(url: str, rows: int, episodes: int) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT setseed(0.2)")
        for statement in _LOAD.format(rows=rows, episodes=episodes).split(";"):
            conn.execute(statement)


@pytest.fixture(scope="module")
def fresh_10k(pg_cluster: PgCluster) -> Iterator[PgStore]:
    """10k rows as a bulk load leaves them: no statistics, and autovacuum will not bring any."""
    url = pg_cluster.create()
    PgStore(url).close()  # migrated
    with psycopg.connect(url, autocommit=True) as conn:
        for table in RECALL_TABLES:
            conn.execute(
                sql.SQL("ALTER TABLE {} SET (autovacuum_enabled = off)").format(sql.Identifier(table))
            )
    _load(url, SMALL_ROWS, SMALL_EPISODES)
    pg = PgStore(url)
    yield pg
    pg.close()
    pg_cluster.drop(url)


@pytest.fixture(scope="module")
def store(pg_cluster: PgCluster) -> Iterator[PgStore]:
    url = pg_cluster.create()
    PgStore(url).close()  # migrated
    _load(url, ROWS, EPISODES)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")  # as autovacuum would after a bulk load (index-only scans, statistics)
        # The first search builds the HNSW index: with the default 64 MB the graph of 100k rows spills and
        # the build took most of this test's minute and a half.
        conn.execute(
            sql.SQL("ALTER DATABASE {} SET maintenance_work_mem = '256MB'").format(
                sql.Identifier(conn.info.dbname)
            )
        )
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


def _problems(plan: dict[str, Any], max_rows_read: int, *, seq_scans: bool = False) -> list[str]:
    found = []
    for node in _nodes(plan):
        relation = node.get("Relation Name")
        text = json.dumps({k: v for k, v in node.items() if k != "Plans"})
        if "~~*" in text:
            found.append(f"ILIKE in {node['Node Type']} on {relation}")
        compared = node.get("Rows Removed by Join Filter", 0)
        if compared > max_rows_read:
            found.append(f"{node['Node Type']} compared {compared:.0f} row pairs in its join filter")
        if relation not in BOUNDED_TABLES:
            continue
        if node["Node Type"] == "Seq Scan" and relation in AGENT_TABLES and not seq_scans:
            found.append(f"Seq Scan on {relation}")
        read = node.get("Actual Rows", 0) * node.get("Actual Loops", 1) + node.get(
            "Rows Removed by Filter", 0
        )
        if read > max_rows_read:
            found.append(f"{node['Node Type']} on {relation} read {read:.0f} rows")
    return found


def _recalled_statements(store: PgStore, monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, Any]]:
    """Every distinct (statement, parameters) the pipeline sends for QUESTIONS, in order."""
    recorder = _Recorder()
    for name in ("all", "one", "all_binary"):
        monkeypatch.setattr(pg_sql.Executor, name, recorder.wrap(getattr(pg_sql.Executor, name)))
    pipeline = RecallPipeline(Settings(recent_recall_penalty=1.0))
    rng = np.random.default_rng(1)
    for question in QUESTIONS:
        vector = rng.normal(size=DIM).astype(np.float32)
        request = RecallRequest(scope=Scope("bench"), query=question, limit=10)
        with store.recall_read() as session:
            outcome = pipeline.run(
                session,
                request,
                query_vector=VectorQuery(vector / np.linalg.norm(vector), MODEL, DIM),
                now=utc_now(),
            )
        assert outcome.vector_used and outcome.rows, question
    monkeypatch.undo()
    assert len(recorder.statements) >= 6 * len(QUESTIONS)
    distinct: dict[str, tuple[Any, Any]] = {}
    for statement, params in recorder.statements:  # one EXPLAIN per distinct statement and parameters
        text = statement.as_string(None) if isinstance(statement, sql.Composable) else statement
        key = repr((text, [p.blob if isinstance(p, PgVector) else p for p in params]))
        distinct.setdefault(key, (statement, params))
    return list(distinct.values())


def _placeholders(text: str) -> tuple[str, int]:
    """psycopg's ``%s`` / ``%b`` as PostgreSQL's ``$1``, ``$2``, ...; ``%%`` as ``%``."""
    count = 0

    def number(match: re.Match[str]) -> str:
        nonlocal count
        if match.group() == "%%":
            return "%"
        count += 1
        return f"${count}"

    return re.sub(r"%%|%[sbt]", number, text), count


def _literal(value: Any) -> sql.Composable:
    if isinstance(value, PgVector):
        floats = np.frombuffer(value.blob, dtype="<f4")
        return sql.SQL("{}::vector").format(sql.Literal("[" + ",".join(repr(float(f)) for f in floats) + "]"))
    return sql.Literal(value)


def _explained(
    conn: psycopg.Connection[Any], statement: Any, params: Any, *, generic: bool
) -> dict[str, Any]:
    """``EXPLAIN (ANALYZE, BUFFERS)`` of the statement with these values: its custom plan, or (``generic``)
    the generic plan of the statement prepared, executed with them."""
    query = statement if isinstance(statement, sql.Composable) else sql.SQL(statement)
    if not generic:
        row = conn.execute(sql.SQL("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ") + query, params).fetchone()
        return (row["QUERY PLAN"] if isinstance(row, dict) else row[0])[0]["Plan"]
    text, count = _placeholders(query.as_string(conn))
    assert count == len(params), text
    conn.execute(f"PREPARE cp_generic AS {text}", prepare=False)
    try:
        conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        arguments = (
            sql.SQL("({})").format(sql.SQL(", ").join(_literal(p) for p in params)) if params else sql.SQL("")
        )
        row = conn.execute(
            sql.SQL("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE cp_generic{}").format(arguments),
            prepare=False,
        ).fetchone()
        counted = conn.execute(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = 'cp_generic'"
        ).fetchone()
        assert counted is not None, text
        assert (counted["generic_plans"], counted["custom_plans"]) == (1, 0), (
            counted
        )  # really the generic plan
    finally:
        conn.execute("DEALLOCATE cp_generic", prepare=False)
    return (row["QUERY PLAN"] if isinstance(row, dict) else row[0])[0]["Plan"]


def _plan_report(
    store: PgStore,
    statements: list[tuple[Any, Any]],
    max_rows_read: int,
    *,
    seq_scans: bool = False,
    generic: bool = False,
) -> list[str]:
    report = []
    with store.read() as session:
        conn = session.ex.conn
        assert conn is not None
        for statement, params in statements:
            plan = _explained(conn, statement, params, generic=generic)
            problems = _problems(plan, max_rows_read, seq_scans=seq_scans)
            if problems:
                text = statement.as_string(conn) if isinstance(statement, sql.Composable) else statement
                kind = "generic plan" if generic else "plan"
                report.append(f"{kind} of {text[:160]}...: {'; '.join(problems)}")
    return report


def test_recall_right_after_a_bulk_load_plans_with_statistics(
    fresh_10k: PgStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded = set(tables_without_statistics(fresh_10k.session().ex))
    assert {"memories", "episodes", "memory_tokens", "episode_tokens", "keyword_vocab"} <= loaded
    statements = _recalled_statements(fresh_10k, monkeypatch)
    assert tables_without_statistics(fresh_10k.session().ex) == []  # the first search analysed them
    report = [
        *_plan_report(fresh_10k, statements, SMALL_MAX_ROWS_READ, seq_scans=True),
        *_plan_report(fresh_10k, statements, SMALL_MAX_ROWS_READ, seq_scans=True, generic=True),
    ]
    assert report == [], "\n".join(report)


def test_every_recall_statement_reads_index_entries_only(
    store: PgStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    statements = _recalled_statements(store, monkeypatch)
    report = [
        *_plan_report(store, statements, MAX_ROWS_READ),
        *_plan_report(store, statements, MAX_ROWS_READ, generic=True),
    ]
    assert report == [], "\n".join(report)
