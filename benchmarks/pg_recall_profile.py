"""One PostgreSQL recall end to end: every round trip, its wall and server time, and the Python between them.

    python benchmarks/pg_recall_profile.py ../shared/data/locomo --db-url auto --size 10000
        [--queries 100] [--database NAME] [--models-dir DIR] [--json out.json]

The corpus of ``engine_latency.py`` (``_pg_corpus.py``); after the first recall (HNSW build, planner
statistics) and the fresh agent's background calibration, every LoCoMo question runs twice unprofiled
(warm: each pooled connection has prepared its statements), then once profiled two ways:

- ``retrieval``: the recall pipeline with the query vector given, in one read snapshot (what
  latency.py's "retrieval" column times);
- ``recall``: ``Memory.recall`` (query embedding, pipeline, quality gate, profile injection, the
  recall bookkeeping write).

Every round trip psycopg makes (``Connection.wait``: a statement, BEGIN / COMMIT, a prepare) is timed
on the client, with the server backend's on-CPU time (``/proc/<pid>/schedstat``, so the server must run
on this machine) and labelled with its statement. Python time is the recall's wall time minus its
round trips. Prints per recall: round trips, time waiting on the server, server CPU, Python time; and
per statement: calls per recall, wall and server CPU per call.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, percentile, print_table, summary_ms, write_json  # noqa: E402
from _pg_corpus import AGENT, add_corpus_arguments, corpus_from_arguments, questions, settings  # noqa: E402


def _cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0]) / 1e9


class RoundTrips:
    """Times every ``psycopg.Connection.wait`` (one round trip) while ``on``, labelled with its statement."""

    def __init__(self) -> None:
        self.on = False  # only the recalling thread's round trips count (not the background workers')
        self.thread = 0
        self.label = ""
        self.calls: list[tuple[str, float, float]] = []  # (label, wall s, server CPU s)

    def install(self) -> None:
        import psycopg

        trips = self
        wait, execute, command = (
            psycopg.Connection.wait,
            psycopg.Cursor.execute,
            psycopg.Connection._exec_command,
        )

        def timed_wait(conn: Any, gen: Any, *args: Any, **kwargs: Any) -> Any:
            if not trips.on or threading.get_ident() != trips.thread:
                return wait(conn, gen, *args, **kwargs)
            pid = conn.info.backend_pid
            cpu = _cpu_s(pid)
            t0 = time.perf_counter()
            try:
                return wait(conn, gen, *args, **kwargs)
            finally:
                wall = time.perf_counter() - t0
                trips.calls.append((trips.label or "?", wall, _cpu_s(pid) - cpu))
                trips.label = ""

        def labelled_execute(cur: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
            if trips.on and threading.get_ident() == trips.thread:
                text = query.as_string(cur.connection) if hasattr(query, "as_string") else str(query)
                trips.label = " ".join(str(text).split())[:110]
            return execute(cur, query, *args, **kwargs)

        def labelled_command(conn: Any, cmd: Any, *args: Any, **kwargs: Any) -> Any:
            if trips.on and threading.get_ident() == trips.thread:
                text = (
                    cmd.decode()
                    if isinstance(cmd, bytes)
                    else getattr(cmd, "as_string", lambda _: str(cmd))(conn)
                )
                trips.label = " ".join(str(text).split())[:110]
            return command(conn, cmd, *args, **kwargs)

        psycopg.Connection.wait = timed_wait  # type: ignore[method-assign]
        psycopg.Cursor.execute = labelled_execute  # type: ignore[method-assign]
        psycopg.Connection._exec_command = labelled_command  # type: ignore[method-assign]


def explained(store: Any, recalls: list[Any]) -> list[dict[str, Any]]:
    """Each statement the recalls send, run again under ``EXPLAIN (ANALYZE, FORMAT JSON)``: planning and
    execution time per recall, by statement (as the server times it: a custom plan, no round trip)."""
    from psycopg import sql

    from cpersona.storage.postgres import sql as pg_sql

    sent: list[tuple[Any, Any]] = []
    me = threading.get_ident()
    originals = {name: getattr(pg_sql.Executor, name) for name in ("all", "one", "all_binary")}

    def recorder(method: Any) -> Any:
        def recorded(ex: Any, statement: Any, params: Any = ()) -> Any:
            if threading.get_ident() == me:  # not the background workers' statements
                sent.append((statement, params))
            return method(ex, statement, params)

        return recorded

    for name, method in originals.items():
        setattr(pg_sql.Executor, name, recorder(method))
    try:
        for run in recalls:
            run()
    finally:
        for name, method in originals.items():
            setattr(pg_sql.Executor, name, method)
    times: dict[str, list[tuple[float, float]]] = defaultdict(list)
    with store.read() as session:
        conn = session.ex.conn
        for statement, params in sent:
            query = statement if isinstance(statement, sql.Composable) else sql.SQL(statement)
            row = conn.execute(sql.SQL("EXPLAIN (ANALYZE, FORMAT JSON) ") + query, params).fetchone()
            plan = (row["QUERY PLAN"] if isinstance(row, dict) else row[0])[0]
            label = " ".join(query.as_string(conn).split())[:110]
            times[label].append((plan["Planning Time"], plan["Execution Time"]))
    n = len(recalls)
    return [
        {
            "statement": label,
            "per_recall": round(len(v) / n, 2),
            "planning_ms_per_recall": round(sum(p for p, _ in v) / n, 3),
            "execution_ms_per_recall": round(sum(e for _, e in v) / n, 3),
        }
        for label, v in sorted(times.items(), key=lambda kv: -sum(p + e for p, e in kv[1]))
    ]


def profile(args: argparse.Namespace, url: str) -> dict[str, Any]:
    from cpersona.core.text import utc_now
    from cpersona.memory import Memory
    from cpersona.retrieval.pipeline import RecallPipeline, RecallRequest
    from cpersona.storage.scope import Scope
    from cpersona.storage.values import VectorQuery

    trips = RoundTrips()
    trips.install()
    trips.thread = threading.get_ident()
    asked = questions(args.data_dir, args.queries)
    with tempfile.TemporaryDirectory() as tmp, Memory(settings(url, args.models_dir, Path(tmp))) as mem:
        if not mem.wait_until_ready(300):
            raise SystemExit(f"model did not load: {mem.embedding_status()}")
        started = time.perf_counter()
        mem.recall(AGENT, "warm up the index", limit=10)
        from engine_latency import settled

        calibrated = settled(mem, started)
        model, dim = mem.embeddings.model_id, mem.embeddings.dimension
        vectors = [VectorQuery(mem.embeddings.embed_query(q), model, dim) for q in asked]
        pipeline = RecallPipeline(mem.settings)

        def retrieval(i: int) -> None:
            request = RecallRequest(scope=Scope(AGENT), query=asked[i], limit=10)
            with mem.storage.recall_read() as session:  # as Memory.recall reads
                pipeline.run(session, request, query_vector=vectors[i], now=utc_now())

        def recall(i: int) -> None:
            mem.recall(AGENT, asked[i], limit=10)

        for _ in range(2):
            for i in range(len(asked)):
                retrieval(i)
                recall(i)
        out: dict[str, Any] = {"calibrated_after_s": calibrated}
        if args.explain:
            out["explain"] = explained(mem.storage, [lambda i=i: retrieval(i) for i in range(len(asked))])
        for name, run in (("retrieval", retrieval), ("recall", recall)):
            per: dict[str, list[float]] = defaultdict(list)
            by_label: dict[str, list[tuple[float, float]]] = defaultdict(list)
            for i in range(len(asked)):
                trips.calls.clear()
                trips.on = True
                c0, t0 = time.process_time(), time.perf_counter()
                run(i)
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                trips.on = False
                waited = sum(c[1] for c in trips.calls)
                per["wall"].append(wall)
                per["client_cpu"].append(cpu)
                per["round_trips"].append(len(trips.calls))
                per["waiting"].append(waited)
                per["server_cpu"].append(sum(c[2] for c in trips.calls))
                per["python"].append(wall - waited)
                for label, w, s in trips.calls:
                    by_label[label].append((w, s))
            n = len(asked)
            out[name] = {
                "wall": summary_ms(per["wall"]),
                "client_cpu": summary_ms(per["client_cpu"]),
                "waiting": summary_ms(per["waiting"]),
                "server_cpu": summary_ms(per["server_cpu"]),
                "python": summary_ms(per["python"]),
                "round_trips": {
                    "p50": percentile(per["round_trips"], 50),
                    "mean": sum(per["round_trips"]) / n,
                },
                "statements": [
                    {
                        "statement": label,
                        "per_recall": round(len(v) / n, 2),
                        "wall_ms_per_call_p50": round(percentile([w for w, _ in v], 50) * 1e3, 3),
                        "wall_ms_per_recall": round(sum(w for w, _ in v) / n * 1e3, 3),
                        "server_cpu_ms_per_recall": round(sum(s for _, s in v) / n * 1e3, 3),
                    }
                    for label, v in sorted(by_label.items(), key=lambda kv: -sum(w for w, _ in kv[1]))
                ],
            }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_corpus_arguments(parser, queries=100)
    parser.add_argument("--explain", action="store_true", help="also EXPLAIN ANALYZE every statement")
    parser.add_argument("--json")
    args = parser.parse_args()
    with corpus_from_arguments(args) as url:
        result = profile(args, url)
    for name in ("retrieval", "recall"):
        r = result[name]
        print(
            f"\n{name}: wall p50 {r['wall']['p50_ms']} ms (p95 {r['wall']['p95_ms']}), client CPU p50 "
            f"{r['client_cpu']['p50_ms']}, round trips {r['round_trips']['mean']:.1f}, waiting p50 "
            f"{r['waiting']['p50_ms']}, server CPU p50 {r['server_cpu']['p50_ms']}, Python p50 {r['python']['p50_ms']}"
        )
        print_table(
            ["statement", "per recall", "wall/call p50", "wall/recall", "server CPU/recall"],
            [
                [s["statement"], s["per_recall"], s["wall_ms_per_call_p50"], s["wall_ms_per_recall"],
                 s["server_cpu_ms_per_recall"]]
                for s in r["statements"][:25]
            ],
        )  # fmt: skip
    if "explain" in result:
        print("\nEXPLAIN ANALYZE of the retrieval statements (ms per recall):")
        print_table(
            ["statement", "per recall", "planning", "execution"],
            [[e["statement"], e["per_recall"], e["planning_ms_per_recall"], e["execution_ms_per_recall"]]
             for e in result["explain"][:25]],
        )  # fmt: skip
    write_json(
        args.json, {"benchmark": "pg-recall-profile", "machine": machine(), "size": args.size, **result}
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
