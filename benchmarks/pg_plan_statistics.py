"""PostgreSQL retrieval right after a bulk load: planned without statistics against planned with them.

    python benchmarks/pg_plan_statistics.py ../shared/data/locomo --db-url auto --size 10000
        [--queries 200] [--models-dir DIR] [--json out.json]

The corpus and vectors of ``engine_latency.py`` (LoCoMo turns and numbered variants, synthetic
vectors between real turns) are loaded through the import path into a database whose recall
tables have autovacuum off, then copied: arm ``no statistics`` is the copy as the load left it (the
state the 10k benchmark used to recall in, before autovacuum's first visit) with CPersona's own
first-search preparation switched off; arm ``statistics`` is the other copy after it
(``storage/postgres/statistics.py``: ANALYZE, GIN pending lists merged). Both copies hold the same
HNSW index (built before copying). The LoCoMo questions (embedded by the real model) run through
the recall pipeline on both arms in turn, alternating which goes first. Per recall: wall time,
the client's CPU, the PostgreSQL backend's CPU (``/proc/<pid>/schedstat``: it does not count
waiting for a core, so a loaded machine blurs it far less than the wall time) and the number of
statements; and whether the two arms return the same top 10. The server must run on this machine
(the backend's /proc entry).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, print_table, summary_ms, write_json  # noqa: E402
from engine_latency import AGENT, BATCH, MODEL, _corpus, corpus_batch, real_vectors  # noqa: E402


def _cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0]) / 1e9


def load(url: str, texts: list[str], base: np.ndarray, model_id: str, size: int) -> None:
    """``size`` rows through ``write_batch`` (500 a batch) and the HNSW index; no statistics gathered."""
    import psycopg

    from cpersona.core.text import format_ts, utc_now
    from cpersona.storage.postgres.sql import Executor
    from cpersona.storage.postgres.statistics import RECALL_TABLES
    from cpersona.storage.postgres.store import PgStore
    from cpersona.storage.postgres.vector_search import build_index

    store = PgStore(url)
    with psycopg.connect(url, autocommit=True) as conn:
        for table in RECALL_TABLES:
            conn.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = off)")
    rows, now, dim = store.portability_rows(), format_ts(utc_now()), base.shape[1]
    for first in range(0, size, BATCH):
        n = min(BATCH, size - first)
        batch = corpus_batch(texts, base, first, n, model_id, now)
        rows.write_batch(batch, queued_at=None, active_model=(model_id, dim))
    # The HNSW index, as the first search builds it: here, so that both copies search the same graph
    # (a build draws random levels; two builds would answer a few questions differently).
    with store.pool.connection() as conn, conn.transaction():
        build_index(Executor(store.pool, conn), "memories", model_id, dim)
    store.close()


def run(args: argparse.Namespace, admin: str) -> dict[str, Any]:
    import psycopg

    import cpersona.storage.postgres.store as pg_store
    from cpersona.config import Settings
    from cpersona.core.text import utc_now
    from cpersona.memory import Memory
    from cpersona.retrieval.pipeline import RecallPipeline, RecallRequest
    from cpersona.storage.postgres import sql as pg_sql
    from cpersona.storage.postgres.statistics import ensure_statistics, tables_without_statistics
    from cpersona.storage.scope import Scope
    from cpersona.storage.values import VectorQuery

    texts, questions = _corpus(args.data_dir)
    questions = questions[: args.queries]
    with tempfile.TemporaryDirectory() as tmp:
        models_dir = args.models_dir
        base, model_id = real_vectors(args.data_dir, models_dir, Path(tempfile.gettempdir()))
        settings = Settings(db_path=Path(tmp) / "q.db", models_dir=models_dir, embedding_model=MODEL)
        with Memory(settings, start_background=False) as mem:
            mem.embeddings.start()
            if not mem.wait_until_ready(300):
                raise SystemExit(f"model did not load: {mem.embedding_status()}")
            vectors = [mem.embeddings.embed_query(q) for q in questions]
    names = {"no statistics": "cpersona_stats_none", "statistics": "cpersona_stats_analysed"}
    source = "cpersona_stats_source"

    def url(name: str) -> str:
        return urlunsplit(urlsplit(admin)._replace(path=f"/{name}"))

    with psycopg.connect(admin, autocommit=True) as conn:
        for name in (source, *names.values()):
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{source}"')
    load(url(source), texts, base, model_id, args.size)
    with psycopg.connect(admin, autocommit=True) as conn:
        for name in names.values():
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{source}"')
    pg_store.ensure_statistics = lambda ex: []  # the product's first-search ANALYZE off: arm B gets it below
    stores = {arm: pg_store.PgStore(url(name)) for arm, name in names.items()}
    ensure_statistics(stores["statistics"].session().ex)
    missing = {arm: len(tables_without_statistics(s.session().ex)) for arm, s in stores.items()}

    server: dict[str, Any] = {"cpu": 0.0, "n": 0, "arm": ""}
    by_statement: dict[tuple[str, str], list[float]] = {}

    def timed(method: Any) -> Any:
        def call(ex: Any, statement: Any, params: Any = ()) -> Any:
            pid = ex.conn.info.backend_pid if ex.conn is not None else None
            before = _cpu_s(pid) if pid else 0.0
            out = method(ex, statement, params)
            spent = (_cpu_s(pid) if pid else 0.0) - before
            server["cpu"] += spent
            server["n"] += 1
            text = statement.as_string(None) if hasattr(statement, "as_string") else str(statement)
            by_statement.setdefault((server["arm"], " ".join(text.split())[:90]), []).append(spent)
            return out

        return call

    for method in ("all", "one", "all_binary"):
        setattr(pg_sql.Executor, method, timed(getattr(pg_sql.Executor, method)))
    pipeline = RecallPipeline(Settings(recent_recall_penalty=1.0))
    now = utc_now()
    dim = base.shape[1]

    def recall(store: Any, i: int) -> list[int]:
        request = RecallRequest(scope=Scope(AGENT), query=questions[i], limit=10)
        with store.read() as session:
            outcome = pipeline.run(
                session, request, query_vector=VectorQuery(vectors[i], model_id, dim), now=now
            )
        return [int(r["id"]) for r in outcome.rows]

    for store in stores.values():  # the HNSW index is built here, outside the timing
        recall(store, 0)
    by_statement.clear()
    timings: dict[str, dict[str, list[float]]] = {
        arm: {"wall": [], "client": [], "server": [], "statements": []} for arm in stores
    }
    tops: dict[str, list[list[int]]] = {arm: [] for arm in stores}
    for i in range(len(questions)):
        for arm in list(stores) if i % 2 else list(stores)[::-1]:
            server["cpu"], server["n"], server["arm"] = 0.0, 0, arm
            wall, client = time.perf_counter(), time.process_time()
            tops[arm].append(recall(stores[arm], i))
            timings[arm]["wall"].append(time.perf_counter() - wall)
            timings[arm]["client"].append(time.process_time() - client)
            timings[arm]["server"].append(server["cpu"])
            timings[arm]["statements"].append(server["n"])
    for store in stores.values():
        store.close()
    with psycopg.connect(admin, autocommit=True) as conn:
        for name in (source, *names.values()):
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    identical = sum(a == b for a, b in zip(*tops.values(), strict=True))
    statements = [
        {"arm": arm, "statement": text, "server_cpu_ms_per_recall": round(sum(v) / len(questions) * 1e3, 2),
         "per_recall": round(len(v) / len(questions), 1)}
        for (arm, text), v in sorted(by_statement.items(), key=lambda kv: -sum(kv[1]))
    ]  # fmt: skip
    return {
        "size": args.size,
        "questions": len(questions),
        "identical_top10": identical,
        "statements": statements,
        "arms": {
            arm: {
                "tables_without_statistics": missing[arm],
                "retrieval": summary_ms(t["wall"]),
                "client_cpu": summary_ms(t["client"]),
                "server_cpu": summary_ms(t["server"]),
                "statements_per_recall": round(float(np.mean(t["statements"])), 1),
            }
            for arm, t in timings.items()
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", type=Path)
    parser.add_argument(
        "--db-url", default="auto", help="a PostgreSQL admin URL, or 'auto' for a throwaway cluster"
    )
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--models-dir", type=Path)
    parser.add_argument("--json")
    args = parser.parse_args()
    from _common import minilm_models_dir
    from pg_latency import postgres_admin_url

    with tempfile.TemporaryDirectory() as tmp:
        args.models_dir = args.models_dir or minilm_models_dir(Path(tmp))
        with postgres_admin_url(None if args.db_url == "auto" else args.db_url) as admin:
            result = run(args, admin)
    print_table(
        ["arm", "tables w/o stats", "retrieval p50", "p95", "server CPU p50", "p95", "client CPU p50", "statements"],
        [
            [arm, a["tables_without_statistics"], a["retrieval"]["p50_ms"], a["retrieval"]["p95_ms"],
             a["server_cpu"]["p50_ms"], a["server_cpu"]["p95_ms"], a["client_cpu"]["p50_ms"],
             a["statements_per_recall"]]
            for arm, a in result["arms"].items()
        ],
    )  # fmt: skip
    print("\nServer CPU by statement (ms per recall; the five costliest of each arm):")
    for arm in result["arms"]:
        for row in [r for r in result["statements"] if r["arm"] == arm][:5]:
            print(
                f"  {arm:14} {row['server_cpu_ms_per_recall']:6.2f}  x{row['per_recall']:<4} {row['statement']}"
            )
    print(
        f"{result['identical_top10']} of {result['questions']} questions: the same top 10 (ids, in order) on both arms"
    )
    write_json(args.json, {"benchmark": "pg-plan-statistics", "machine": machine(), **result})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
