"""PostgreSQL recall, two code trees interleaved question by question on one database: speed and identity.

    git archive <commit> | tar -x -C /tmp/base     # the code to compare against
    python benchmarks/pg_recall_ab.py ../shared/data/locomo --base /tmp/base --db-url auto --size 10000
        [--queries 200] [--database NAME] [--models-dir DIR] [--json out.json]

Arm A is the source tree ``--base``, arm B this checkout (or ``--code DIR``). Each arm is a child process
(``PYTHONPATH`` its tree) with its own ``Memory`` on the same database (``_pg_corpus.py``: the
engine_latency.py corpus); both warm up (first recall, the fresh agent's calibration, two passes over
the questions), then the parent hands every question to both in turn, alternating which goes first.
Per question and arm:

- ``retrieval``: the recall pipeline with the query vector given, in one read snapshot (latency.py's
  retrieval column); ``recall``: ``Memory.recall`` end to end (query embedding, pipeline, gate,
  bookkeeping write: latency.py's recall column);
- wall time, the client's CPU time and the server backends' CPU time (``/proc/<pid>/schedstat`` of the
  connections the arm's recalling thread and its side reads used), and the top 10 (refs and scores).

Prints p50 / p95 per arm, the p50 of the per-question differences B - A (the figure a loaded machine
disturbs least), and how many questions return identical top 10s (refs, in order, and scores).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, percentile, print_table, summary_ms, write_json  # noqa: E402
from _pg_corpus import AGENT, add_corpus_arguments, corpus_from_arguments, questions, settings  # noqa: E402

HERE = Path(__file__).resolve().parents[1]
MEASURES = ("retrieval", "recall")


def _cpu_s(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[0]) / 1e9
    except OSError:
        return 0.0


def child(args: argparse.Namespace) -> int:
    """One arm: answer question indexes read from stdin with one JSON line each."""
    import psycopg

    import cpersona
    from cpersona.core.text import utc_now
    from cpersona.memory import Memory
    from cpersona.retrieval.pipeline import RecallPipeline, RecallRequest
    from cpersona.storage.scope import Scope
    from cpersona.storage.values import VectorQuery

    print(f"arm code: {Path(cpersona.__file__).parent}", file=sys.stderr, flush=True)
    backends: set[int] = set()
    me = threading.get_ident()
    wait = psycopg.Connection.wait

    def noted_wait(conn: Any, gen: Any, *a: Any, **k: Any) -> Any:
        # The recalling thread's connections and the side reads' (storage/postgres/side_reads.py).
        if threading.get_ident() == me or threading.current_thread().name.startswith("cpersona-pg-side"):
            backends.add(conn.pgconn.backend_pid)
        return wait(conn, gen, *a, **k)

    psycopg.Connection.wait = noted_wait  # type: ignore[method-assign]
    asked = questions(args.data_dir, args.queries)
    with tempfile.TemporaryDirectory() as tmp, Memory(settings(args.url, args.models_dir, Path(tmp))) as mem:
        if not mem.wait_until_ready(300):
            raise SystemExit(f"model did not load: {mem.embedding_status()}")
        from engine_latency import settled

        started = time.perf_counter()
        mem.recall(AGENT, "warm up the index", limit=10)
        settled(mem, started)
        model, dim = mem.embeddings.model_id, mem.embeddings.dimension
        vectors = [VectorQuery(mem.embeddings.embed_query(q), model, dim) for q in asked]
        pipeline = RecallPipeline(mem.settings)

        def retrieval(i: int) -> list[tuple[str, float]]:
            request = RecallRequest(scope=Scope(AGENT), query=asked[i], limit=10)
            # recall_read: the recall's own snapshot (an older tree without it: read).
            with getattr(mem.storage, "recall_read", mem.storage.read)() as session:
                outcome = pipeline.run(session, request, query_vector=vectors[i], now=utc_now())
            return [(r["ref"], r["match_reason"]["score"]) for r in outcome.rows]

        def recall(i: int) -> list[tuple[str, float]]:
            out = mem.recall(AGENT, asked[i], limit=10)
            return [(r["ref"], r["match_reason"]["score"]) for r in reversed(out["results"]) if "ref" in r]

        for _ in range(2):
            for i in range(len(asked)):
                retrieval(i)
                recall(i)
        print("ready", flush=True)
        for line in sys.stdin:
            i = int(line)
            reply: dict[str, Any] = {}
            for name, run in (("retrieval", retrieval), ("recall", recall)):
                known = sorted(backends)
                server = sum(_cpu_s(p) for p in known)
                c0, t0 = time.process_time(), time.perf_counter()
                top = run(i)
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                server = sum(_cpu_s(p) for p in known) - server
                reply[name] = {"wall": wall, "cpu": cpu, "server": server, "top": top}
            print(json.dumps(reply), flush=True)
    return 0


def _spawn(code: Path, args: argparse.Namespace, url: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(code)}
    return subprocess.Popen(
        [sys.executable, __file__, "--child", str(args.data_dir), "--url", url, "--queries", str(args.queries),
         "--models-dir", str(args.models_dir)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=str(code),
    )  # fmt: skip


def _ask(proc: subprocess.Popen[str], line: str) -> dict[str, Any]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(line + "\n")
    proc.stdin.flush()
    answer: dict[str, Any] = json.loads(proc.stdout.readline())
    return answer


def compare(args: argparse.Namespace, url: str) -> dict[str, Any]:
    arms = {"A": _spawn(args.base.resolve(), args, url), "B": _spawn(args.code.resolve(), args, url)}
    for proc in arms.values():
        assert proc.stdout is not None
        while (line := proc.stdout.readline()) and line.strip() != "ready":
            if not line:
                raise SystemExit("an arm died while warming up")
    got: dict[str, list[dict[str, Any]]] = {"A": [], "B": []}
    for i in range(args.queries):
        order = ("A", "B") if i % 2 == 0 else ("B", "A")
        for arm in order:
            got[arm].append(_ask(arms[arm], str(i)))
    for proc in arms.values():
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=120)
    out: dict[str, Any] = {"questions": args.queries}
    for name in MEASURES:
        a, b = [g[name] for g in got["A"]], [g[name] for g in got["B"]]
        same_refs = sum(
            [r for r, _ in x["top"]] == [r for r, _ in y["top"]] for x, y in zip(a, b, strict=True)
        )
        same = sum(x["top"] == y["top"] for x, y in zip(a, b, strict=True))
        out[name] = {
            "identical_refs": same_refs,
            "identical_refs_and_scores": same,
            **{
                f"{arm}_{key}": summary_ms([x[key] for x in rows])
                for arm, rows in (("A", a), ("B", b))
                for key in ("wall", "cpu", "server")
            },
            **{
                f"diff_{key}_p50_ms": round(
                    percentile([y[key] - x[key] for x, y in zip(a, b, strict=True)], 50) * 1e3, 3
                )
                for key in ("wall", "cpu", "server")
            },
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_corpus_arguments(parser, queries=200)
    parser.add_argument("--base", type=Path, help="arm A: a source tree of the code to compare against")
    parser.add_argument("--code", type=Path, default=HERE, help="arm B (default: this checkout)")
    parser.add_argument("--json")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)
    if args.base is None:
        parser.error("--base is required")
    with corpus_from_arguments(args) as url:
        result = compare(args, url)
    load = os.getloadavg()
    print(
        f"size {args.size}, {args.queries} questions, load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}"
    )
    rows = []
    for name in MEASURES:
        r = result[name]
        for key in ("wall", "cpu", "server"):
            rows.append([f"{name} {key}", r[f"A_{key}"]["p50_ms"], r[f"A_{key}"]["p95_ms"], r[f"B_{key}"]["p50_ms"],
                         r[f"B_{key}"]["p95_ms"], r[f"diff_{key}_p50_ms"]])  # fmt: skip
    print_table(["ms", "A p50", "A p95", "B p50", "B p95", "p50 of B - A"], rows)
    for name in MEASURES:
        r = result[name]
        print(
            f"{name}: {r['identical_refs']} of {args.queries} identical top-10 refs, "
            f"{r['identical_refs_and_scores']} identical refs and scores"
        )
    write_json(args.json, {"benchmark": "pg-recall-ab", "machine": machine(), "size": args.size,
                           "load_average": load, **result})  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
